"""The supervisor's git: worktrees per task and the approving reviewer's merge (seed 000 T4, T10,
T11; the original's `.worktrees/<task-id>` on `task/<task-id>`).

Every command runs `git` with the repository root as cwd and raises `GitError` carrying git's
own message, which the supervisor reports to the server as it is (a block reason, an
integration failure).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class GitError(Exception):
    """A git command failed: `str()` is the command and git's message."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
    )
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        raise GitError(f"git {' '.join(args)}: {message}")
    return done.stdout.strip()


def repo_root(start: Path) -> Path:
    """The main checkout's root (not a linked worktree's): `.worktrees/` lives there."""
    common = Path(git(start, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    return (
        common.parent if common.name == ".git" else Path(git(start, "rev-parse", "--show-toplevel"))
    )


def state_dir(repo: Path, agent_id: str) -> Path:
    """Where the supervisor keeps its key file and prompts: inside the git directory, so no
    worktree ever sees them as untracked files."""
    common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    path = common / "liza" / agent_id
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def commit_of(repo: Path, ref: str) -> str | None:
    out = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return out or None


def base_commit(repo: Path, integration: str) -> str:
    """integration's HEAD at claim time, falling back to main, master, HEAD (the original T4)."""
    for ref in (integration, "main", "master", "HEAD"):
        sha = commit_of(repo, ref)
        if sha:
            return sha
    raise GitError("the repository has no commit: nothing to branch a task from")


def branch_of(key: str) -> str:
    return f"task/{key}"


def worktree_path(repo: Path, key: str) -> Path:
    return repo / ".worktrees" / key


def _registered_worktrees(repo: Path) -> dict[Path, str]:
    """Every worktree git knows, with its branch ref ('' when detached)."""
    found: dict[Path, str] = {}
    current: Path | None = None
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
            found[current] = ""
        elif line.startswith("branch ") and current is not None:
            found[current] = line.removeprefix("branch ")
    return found


def remove_worktree(repo: Path, key: str) -> None:
    """The task's worktree and branch gone (a fresh start, or after its merge)."""
    path = worktree_path(repo, key)
    if path.resolve() in {p.resolve() for p in _registered_worktrees(repo)}:
        git(repo, "worktree", "remove", "--force", str(path))
    elif path.exists():
        shutil.rmtree(path)  # a stale directory git no longer knows
    git(repo, "worktree", "prune")
    if commit_of(repo, f"refs/heads/{branch_of(key)}"):
        git(repo, "branch", "-D", branch_of(key))


def prepare_worktree(repo: Path, key: str, *, base: str, keep: bool) -> Path:
    """`.worktrees/<key>` on `task/<key>` (seed 000 "Worktree on Reassignment").

    keep (same coder continuing, integration fix, a restart): the worktree as it is; if the
    directory is gone but the branch is not, it is checked out again; if both are gone, that is
    an error (the work is lost; the caller blocks the task). Otherwise: a fresh branch from
    `base`, replacing any stale directory or branch of an earlier holder.
    """
    path = worktree_path(repo, key)
    path.parent.mkdir(exist_ok=True)
    registered = {p.resolve() for p in _registered_worktrees(repo)}
    if keep:
        if path.resolve() in registered and path.is_dir():
            return path
        git(repo, "worktree", "prune")
        if commit_of(repo, f"refs/heads/{branch_of(key)}"):
            if path.exists():
                shutil.rmtree(path)
            git(repo, "worktree", "add", str(path), branch_of(key))
            return path
        raise GitError(
            f"the worktree {path} and the branch {branch_of(key)} are both missing: "
            "the earlier work on this task cannot be continued"
        )
    remove_worktree(repo, key)
    git(repo, "worktree", "add", "-b", branch_of(key), str(path), base)
    return path


@contextmanager
def merge_lock(repo: Path) -> Iterator[None]:
    """One merge into integration at a time among the supervisors sharing this repository."""
    common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    (common / "liza").mkdir(exist_ok=True)
    with open(common / "liza" / "merge.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def integration_checkout(repo: Path, integration: str) -> Path:
    """A checkout of the integration branch to merge in: wherever it is checked out already
    (the main checkout, say), else `.worktrees/.integration` — never switching a checkout a
    person may be working in."""
    if not commit_of(repo, f"refs/heads/{integration}"):
        git(repo, "branch", integration, base_commit(repo, integration))
    for path, branch in _registered_worktrees(repo).items():
        if branch == f"refs/heads/{integration}":
            return path
    path = repo / ".worktrees" / ".integration"
    path.parent.mkdir(exist_ok=True)
    git(repo, "worktree", "prune")
    if path.exists():
        shutil.rmtree(path)
    git(repo, "worktree", "add", str(path), integration)
    return path


def merge_task(repo: Path, key: str, *, integration: str, review_commit: str) -> str:
    """Merge the task's reviewed commit into integration (fast-forward, else a merge commit);
    the merge commit. A conflict is aborted and raised as GitError with git's message; so is a
    branch whose head is not the reviewed commit (seed 000 T10's check)."""
    head = commit_of(repo, f"refs/heads/{branch_of(key)}")
    reviewed = commit_of(repo, review_commit) if review_commit else None
    if head is None:
        raise GitError(f"the branch {branch_of(key)} does not exist")
    if reviewed is None or head != reviewed:
        raise GitError(
            f"{branch_of(key)} is at {head[:12]}, not at the reviewed commit {review_commit}"
        )
    with merge_lock(repo):
        checkout = integration_checkout(repo, integration)
        if not _contains(checkout, head):
            fast = git(checkout, "merge", "--ff-only", head, check=False)
            del fast  # a fast-forward leaves HEAD at the reviewed commit; otherwise, merge
            if commit_of(checkout, "HEAD") != head:
                done = subprocess.run(
                    ["git", "merge", "--no-edit", "-m", f"Merge {branch_of(key)}", head],
                    cwd=checkout,
                    capture_output=True,
                    text=True,
                    env={**os.environ, "LC_ALL": "C"},
                )
                if done.returncode != 0:
                    git(checkout, "merge", "--abort", check=False)
                    message = (done.stdout + done.stderr).strip()
                    raise GitError(f"merging {branch_of(key)} into {integration} failed: {message}")
        script = checkout / "scripts" / "integration-test.sh"
        if script.exists():
            test = subprocess.run(
                ["bash", str(script)], cwd=checkout, capture_output=True, text=True
            )
            if test.returncode != 0:
                git(checkout, "reset", "--hard", "ORIG_HEAD")
                tail = (test.stdout + test.stderr).strip()[-2000:]
                raise GitError(f"scripts/integration-test.sh failed after merging: {tail}")
        return git(checkout, "rev-parse", "HEAD")


def _contains(checkout: Path, commit: str) -> bool:
    return (
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=checkout
        ).returncode
        == 0
    )
