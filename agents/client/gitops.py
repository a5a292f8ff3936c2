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


class PushError(GitError):
    """The remote did not take a push (unreachable, or it kept moving): nothing is wrong with
    the work itself, so the caller tries again later instead of reporting a failed merge."""


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


def base_commit(repo: Path, integration: str, remote: str | None = None) -> str:
    """integration's HEAD at claim time, falling back to main, master, HEAD (the original T4);
    with a remote, the remote's branches first (fetched just before)."""
    names = (integration, "main", "master")
    remote_refs = tuple(f"refs/remotes/{remote}/{name}" for name in names) if remote else ()
    for ref in (*remote_refs, *names, "HEAD"):
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


def fetch(repo: Path, remote: str) -> None:
    """The remote's branches as `refs/remotes/<remote>/*`; deleted ones pruned."""
    try:
        git(repo, "fetch", "--quiet", "--prune", remote)
    except GitError as error:
        raise PushError(str(error)) from error


def remote_commit(repo: Path, remote: str, branch: str) -> str | None:
    return commit_of(repo, f"refs/remotes/{remote}/{branch}")


def prepare_worktree(
    repo: Path, key: str, *, base: str, keep: bool, remote: str | None = None
) -> Path:
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
        pushed = remote_commit(repo, remote, branch_of(key)) if remote else None
        if path.resolve() in registered and path.is_dir():
            _catch_up(path, pushed)
            return path
        git(repo, "worktree", "prune")
        if commit_of(repo, f"refs/heads/{branch_of(key)}"):
            if path.exists():
                shutil.rmtree(path)
            git(repo, "worktree", "add", str(path), branch_of(key))
            _catch_up(path, pushed)
            return path
        if pushed:
            # Another machine worked on it (an integration fix taken over here): its pushed
            # branch is the work to continue.
            if path.exists():
                shutil.rmtree(path)
            git(repo, "worktree", "add", "-b", branch_of(key), str(path), pushed)
            return path
        raise GitError(
            f"the worktree {path} and the branch {branch_of(key)} are both missing: "
            "the earlier work on this task cannot be continued"
        )
    remove_worktree(repo, key)
    git(repo, "worktree", "add", "-b", branch_of(key), str(path), base)
    return path


def _catch_up(path: Path, pushed: str | None) -> None:
    """A kept branch behind its pushed copy (the work went on from another clone) is
    fast-forwarded to it; a branch ahead of it or beside it is this clone's own work and kept."""
    if pushed and _is_ancestor(path, "HEAD", pushed) and not _is_ancestor(path, pushed, "HEAD"):
        git(path, "merge", "--quiet", "--ff-only", pushed)


def push_task(repo: Path, key: str, *, remote: str, expected: str | None) -> str:
    """Push `task/<key>` to the remote, replacing its branch only if it still is `expected`
    (what this supervisor saw when it prepared the worktree or last pushed; None: no branch),
    so a supervisor that lost the task cannot overwrite its new holder's pushes. The pushed
    commit."""
    head = commit_of(repo, f"refs/heads/{branch_of(key)}")
    if head is None:
        raise GitError(f"the branch {branch_of(key)} does not exist: nothing to push")
    ref = f"refs/heads/{branch_of(key)}"
    try:
        git(
            repo,
            "push",
            "--quiet",
            f"--force-with-lease={ref}:{expected or ''}",
            remote,
            f"{ref}:{ref}",
        )
    except GitError as error:
        raise PushError(str(error)) from error
    return head


def prepare_review_worktree(repo: Path, key: str, *, remote: str, commit: str) -> Path | None:
    """`.worktrees/<key>.review`, detached at the reviewed commit fetched from the remote's
    `task/<key>`; None while that commit has not arrived there (the coder's supervisor pushes
    after its agent exits, which may be after the submit the review was claimed on)."""
    fetch(repo, remote)
    pushed = remote_commit(repo, remote, branch_of(key))
    if commit_of(repo, commit) is None or pushed is None or not _is_ancestor(repo, commit, pushed):
        return None
    path = repo / ".worktrees" / f"{key}.review"
    if _reuse_worktree(repo, path, commit):
        git(path, "checkout", "--quiet", "--force", "--detach", commit)
    return path


def remove_review_worktree(repo: Path, key: str) -> None:
    path = repo / ".worktrees" / f"{key}.review"
    if path.resolve() in {p.resolve() for p in _registered_worktrees(repo)}:
        git(repo, "worktree", "remove", "--force", str(path))
    elif path.exists():
        shutil.rmtree(path)


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
        _merge_into(checkout, key, head, integration)
        return git(checkout, "rev-parse", "HEAD")


def _merge_into(checkout: Path, key: str, head: str, integration: str) -> None:
    """`head` merged into the checkout (fast-forward, else a merge commit) and the
    integration test run; a conflict or a failed test leaves the checkout as it was."""
    if _contains(checkout, head):
        return
    git(checkout, "merge", "--ff-only", head, check=False)
    # A fast-forward leaves HEAD at the reviewed commit; otherwise, a merge commit.
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
        test = subprocess.run(["bash", str(script)], cwd=checkout, capture_output=True, text=True)
        if test.returncode != 0:
            git(checkout, "reset", "--hard", "ORIG_HEAD")
            tail = (test.stdout + test.stderr).strip()[-2000:]
            raise GitError(f"scripts/integration-test.sh failed after merging: {tail}")


PUSH_ATTEMPTS = 5


def merge_task_remote(
    repo: Path,
    key: str,
    *,
    integration: str,
    review_commit: str,
    remote: str,
    attempts: int = PUSH_ATTEMPTS,
) -> str:
    """The shared-remote merge: fetch, merge the remote's `task/<key>` (at the reviewed commit)
    into the remote's integration in `.worktrees/.merge` (detached: no local branch is moved),
    push integration. A push rejected because someone else merged first is retried from a
    fresh fetch up to `attempts` times, then PushError (the caller tries again later); a
    conflict is GitError with git's message, as in merge_task. The merged commit."""
    branch = branch_of(key)
    with merge_lock(repo):
        for _ in range(attempts):
            fetch(repo, remote)
            head = remote_commit(repo, remote, branch)
            reviewed = commit_of(repo, review_commit) if review_commit else None
            if review_commit and (
                head is None
                or reviewed is None
                or (head != reviewed and _is_ancestor(repo, head, reviewed))
            ):
                # The coder's supervisor has not pushed the reviewed commit yet: later.
                raise PushError(f"{remote}/{branch} does not have the reviewed commit yet")
            if head is None or reviewed is None or head != reviewed:
                raise GitError(
                    f"{remote}/{branch} is at {(head or 'nothing')[:12]}, not at the reviewed "
                    f"commit {review_commit or '(none)'}"
                )
            checkout = _merge_checkout(repo, base_commit(repo, integration, remote))
            _merge_into(checkout, key, head, integration)
            merged = git(checkout, "rev-parse", "HEAD")
            if merged == remote_commit(repo, remote, integration):
                return merged  # already in it (a retry after a merge that was pushed)
            done = subprocess.run(
                ["git", "push", "--porcelain", remote, f"HEAD:refs/heads/{integration}"],
                cwd=checkout,
                capture_output=True,
                text=True,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
            )
            if done.returncode == 0:
                return merged
            message = (done.stdout + done.stderr).strip()
            if "[rejected]" not in message and "[remote rejected]" not in message:
                raise PushError(f"pushing {integration} to {remote} failed: {message}")
        raise PushError(
            f"{integration} on {remote} moved under each of {attempts} merges of {branch}; "
            "trying again later"
        )


def _merge_checkout(repo: Path, start: str) -> Path:
    """`.worktrees/.merge`, detached at `start`, clean."""
    path = repo / ".worktrees" / ".merge"
    if _reuse_worktree(repo, path, start):
        git(path, "merge", "--abort", check=False)
        git(path, "checkout", "--quiet", "--force", "--detach", start)
        git(path, "clean", "-fdxq")
    return path


def _reuse_worktree(repo: Path, path: Path, commit: str) -> bool:
    """True when `path` is already a registered worktree of `repo` (the caller moves it to
    `commit`); otherwise a new one is added there, detached at `commit`, over whatever was
    left at `path` (pruned from git's list, removed from disk), and False."""
    path.parent.mkdir(exist_ok=True)
    if path.resolve() in {p.resolve() for p in _registered_worktrees(repo)} and path.is_dir():
        return True
    git(repo, "worktree", "prune")
    if path.exists():
        shutil.rmtree(path)
    git(repo, "worktree", "add", "--detach", str(path), commit)
    return False


def delete_remote_branch(repo: Path, remote: str, branch: str) -> None:
    try:
        git(repo, "push", "--quiet", remote, "--delete", branch)
    except GitError as error:
        raise PushError(str(error)) from error


def _contains(checkout: Path, commit: str) -> bool:
    return _is_ancestor(checkout, commit, "HEAD")


def _is_ancestor(cwd: Path, ancestor: str, descendant: str) -> bool:
    return (
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", ancestor, descendant],
            cwd=cwd,
            capture_output=True,
        ).returncode
        == 0
    )


# What a change summary may weigh (issue 25): the board shows it in the task's drawer, so it is
# bounded before it leaves the agent's machine; the server checks the same bounds.
SUMMARY_MAX_FILES = 300
SUMMARY_MAX_DIFF = 60_000  # characters of unified diff


def change_summary(repo: Path, base: str, commit: str) -> dict[str, object]:
    """What `commit` changed since `base`: each file with its added and deleted lines (binary
    files count -1), and the unified diff, cut at SUMMARY_MAX_DIFF characters on a line
    boundary with `truncated` set, for the review round's "what changed"."""
    files = []
    for line in git(repo, "diff", "--numstat", "--no-renames", base, commit).splitlines():
        added, deleted, path = line.split("\t", 2)
        files.append(
            {
                "path": path,
                "added": -1 if added == "-" else int(added),
                "deleted": -1 if deleted == "-" else int(deleted),
            }
        )
    diff = git(repo, "diff", "--no-color", "--no-renames", base, commit)
    truncated = len(files) > SUMMARY_MAX_FILES or len(diff) > SUMMARY_MAX_DIFF
    if len(diff) > SUMMARY_MAX_DIFF:
        diff = diff[: diff.rfind("\n", 0, SUMMARY_MAX_DIFF) + 1 or SUMMARY_MAX_DIFF]
    return {"files": files[:SUMMARY_MAX_FILES], "diff": diff, "truncated": truncated}
