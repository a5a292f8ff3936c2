"""The supervisor's git (agents/client/gitops.py) on real temporary repositories: seed 000's
worktree keep/recreate rules and the approving reviewer's merge."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agents.client import gitops
from tests.agents.client.gitrepo import git, new_repo


@pytest.fixture
def repo(tmp_path) -> Path:
    return new_repo(tmp_path / "repo", {"app.py": "one\n"}, email="a@example.com", name="A")


def commit(path: Path, name: str, text: str) -> str:
    (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"{name}: {text.strip()}")
    return git(path, "rev-parse", "HEAD")


def test_the_base_commit_is_integration_then_main(repo):
    assert gitops.base_commit(repo, "integration") == git(repo, "rev-parse", "integration")
    assert gitops.base_commit(repo, "no-such-branch") == git(repo, "rev-parse", "main")


def test_a_fresh_claim_replaces_an_earlier_holders_branch(repo):
    base = gitops.base_commit(repo, "integration")
    first = gitops.prepare_worktree(repo, "T1", base=base, keep=False)
    commit(first, "t1.txt", "earlier holder\n")

    again = gitops.prepare_worktree(repo, "T1", base=base, keep=False)

    assert again == repo / ".worktrees" / "T1"
    assert git(again, "rev-parse", "HEAD") == base
    assert git(again, "rev-parse", "--abbrev-ref", "HEAD") == "task/T1"
    assert not (again / "t1.txt").exists()


def test_keeping_reuses_the_worktree_or_its_branch_and_fails_without_both(repo):
    base = gitops.base_commit(repo, "integration")
    path = gitops.prepare_worktree(repo, "T1", base=base, keep=False)
    work = commit(path, "t1.txt", "mine\n")

    assert gitops.prepare_worktree(repo, "T1", base=base, keep=True) == path
    assert git(path, "rev-parse", "HEAD") == work
    # The directory lost, the branch kept: checked out again with the work.
    git(repo, "worktree", "remove", "--force", str(path))
    assert git(gitops.prepare_worktree(repo, "T1", base=base, keep=True), "rev-parse", "HEAD") == (
        work
    )
    gitops.remove_worktree(repo, "T1")
    with pytest.raises(gitops.GitError, match="both missing"):
        gitops.prepare_worktree(repo, "T1", base=base, keep=True)


def test_the_reviewed_commit_is_merged_into_integration(repo):
    base = gitops.base_commit(repo, "integration")
    path = gitops.prepare_worktree(repo, "T1", base=base, keep=False)
    reviewed = commit(path, "t1.txt", "feature\n")

    merged = gitops.merge_task(repo, "T1", integration="integration", review_commit=reviewed)

    assert merged == reviewed == git(repo, "rev-parse", "integration")  # a fast-forward
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # the checkout untouched


def test_a_conflict_is_aborted_and_raised_with_gits_message(repo):
    base = gitops.base_commit(repo, "integration")
    t1 = gitops.prepare_worktree(repo, "T1", base=base, keep=False)
    t2 = gitops.prepare_worktree(repo, "T2", base=base, keep=False)
    gitops.merge_task(
        repo, "T1", integration="integration", review_commit=commit(t1, "app.py", "t1\n")
    )
    before = git(repo, "rev-parse", "integration")

    with pytest.raises(gitops.GitError, match="CONFLICT"):
        gitops.merge_task(
            repo, "T2", integration="integration", review_commit=commit(t2, "app.py", "t2\n")
        )

    assert git(repo, "rev-parse", "integration") == before
    checkout = repo / ".worktrees" / ".integration"
    assert git(checkout, "status", "--porcelain") == ""


def test_a_branch_moved_after_review_is_not_merged(repo):
    base = gitops.base_commit(repo, "integration")
    path = gitops.prepare_worktree(repo, "T1", base=base, keep=False)
    reviewed = commit(path, "t1.txt", "reviewed\n")
    commit(path, "t1.txt", "sneaked in\n")

    with pytest.raises(gitops.GitError, match="not at the reviewed commit"):
        gitops.merge_task(repo, "T1", integration="integration", review_commit=reviewed)


# -- a shared remote: a bare repository and one clone per machine ---------------------------------


@pytest.fixture
def remote(repo, tmp_path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return bare


def clone(remote: Path, path: Path) -> Path:
    git(remote.parent, "clone", "-q", str(remote), str(path))
    git(path, "config", "user.email", f"{path.name}@example.com")
    git(path, "config", "user.name", path.name)
    return path


def coded(machine: Path, key: str, name: str, text: str) -> str:
    """A coder's work on `machine`: a fresh task branch from the remote's integration, one
    commit, pushed; the reviewed commit."""
    gitops.fetch(machine, "origin")
    base = gitops.base_commit(machine, "integration", "origin")
    path = gitops.prepare_worktree(machine, key, base=base, keep=False, remote="origin")
    work = commit(path, name, text)
    gitops.push_task(machine, key, remote="origin", expected=None)
    return work


def test_a_coder_clones_push_is_merged_from_another_clone(remote, tmp_path):
    coder = clone(remote, tmp_path / "coder")
    reviewer = clone(remote, tmp_path / "reviewer")
    reviewed = coded(coder, "T1", "t1.txt", "feature\n")

    review = gitops.prepare_review_worktree(reviewer, "T1", remote="origin", commit=reviewed)
    merged = gitops.merge_task_remote(
        reviewer, "T1", integration="integration", review_commit=reviewed, remote="origin"
    )

    assert review is not None and git(review, "rev-parse", "HEAD") == reviewed
    assert merged == reviewed == git(remote, "rev-parse", "integration")  # a fast-forward
    assert "integration" not in git(reviewer, "branch", "--list")  # no local branch moved


def test_a_review_commit_not_pushed_yet_is_waited_for(remote, tmp_path):
    reviewer = clone(remote, tmp_path / "reviewer")
    missing = "0" * 40
    assert gitops.prepare_review_worktree(reviewer, "T1", remote="origin", commit=missing) is None


# Installed in the second clone: at its first push of integration, the first clone merges T1 for
# real (after the second clone fetched and merged, before its push lands), as a reviewer on
# another machine would.
COMPETING_MERGE = """#!{python}
import os, sys
sys.path.insert(0, {root!r})
if os.path.exists({marker!r}):
    sys.exit(0)
open({marker!r}, "w").close()
for name in [n for n in os.environ if n.startswith("GIT_")]:
    del os.environ[name]  # the hook runs with the pushing clone's git environment
from pathlib import Path
from agents.client import gitops
from tests.agents.client.gitrepo import git, new_repo
gitops.merge_task_remote(
    Path({first!r}), "T1", integration="integration", review_commit={t1!r}, remote="origin"
)
"""


def test_a_rejected_push_is_retried_after_a_fresh_fetch_and_merge(remote, tmp_path):
    """Two clones merge different tasks at once: the second one's push is rejected (the first
    merged in between) and goes through after fetching and merging again."""
    coder = clone(remote, tmp_path / "coder")
    first, second = clone(remote, tmp_path / "first"), clone(remote, tmp_path / "second")
    t1 = coded(coder, "T1", "t1.txt", "one\n")
    t2 = coded(coder, "T2", "t2.txt", "two\n")
    marker = tmp_path / "competing-merge-ran"
    hook = second / ".git" / "hooks" / "pre-push"
    hook.write_text(
        COMPETING_MERGE.format(
            python=sys.executable,
            root=str(Path(__file__).resolve().parents[3]),
            marker=str(marker),
            first=str(first),
            t1=t1,
        )
    )
    hook.chmod(0o755)

    merged = gitops.merge_task_remote(
        second, "T2", integration="integration", review_commit=t2, remote="origin"
    )

    assert marker.exists()  # T1 was merged between T2's merge and its first push
    assert merged == git(remote, "rev-parse", "integration")
    assert git(remote, "show", "integration:t1.txt") == "one"
    assert git(remote, "show", "integration:t2.txt") == "two"
    # The retry merged T2 on top of T1's merge: T1 (a fast-forward) is the merge's first parent.
    assert git(remote, "rev-parse", "integration^1") == t1
    assert git(remote, "rev-parse", "integration^2") == t2


def test_a_conflict_with_what_another_clone_merged_is_a_git_error(remote, tmp_path):
    coder = clone(remote, tmp_path / "coder")
    reviewer = clone(remote, tmp_path / "reviewer")
    t1 = coded(coder, "T1", "app.py", "t1\n")
    t2 = coded(coder, "T2", "app.py", "t2\n")
    gitops.merge_task_remote(
        coder, "T1", integration="integration", review_commit=t1, remote="origin"
    )
    before = git(remote, "rev-parse", "integration")

    with pytest.raises(gitops.GitError, match="CONFLICT") as raised:
        gitops.merge_task_remote(
            reviewer, "T2", integration="integration", review_commit=t2, remote="origin"
        )

    assert not isinstance(raised.value, gitops.PushError)  # INTEGRATION_FAILED, not "later"
    assert git(remote, "rev-parse", "integration") == before


def test_a_push_replaces_the_remote_branch_only_if_it_is_what_was_seen(remote, tmp_path):
    old, new = clone(remote, tmp_path / "old"), clone(remote, tmp_path / "new")
    coded(old, "T1", "t1.txt", "old holder\n")
    seen_by_old = git(remote, "rev-parse", "task/T1")
    # The task is taken over: the new holder's fresh branch replaces the old one's ...
    gitops.fetch(new, "origin")
    path = gitops.prepare_worktree(
        new, "T1", base=gitops.base_commit(new, "integration", "origin"), keep=False
    )
    fresh = commit(path, "t1.txt", "new holder\n")
    gitops.push_task(new, "T1", remote="origin", expected=seen_by_old)
    assert git(remote, "rev-parse", "task/T1") == fresh
    # ... and the old holder's late push cannot overwrite it.
    commit(old / ".worktrees" / "T1", "t1.txt", "late\n")
    with pytest.raises(gitops.PushError, match=r"stale info|rejected"):
        gitops.push_task(old, "T1", remote="origin", expected=seen_by_old)
    assert git(remote, "rev-parse", "task/T1") == fresh


def test_an_integration_fix_on_another_clone_continues_the_pushed_branch(remote, tmp_path):
    first, second = clone(remote, tmp_path / "first"), clone(remote, tmp_path / "second")
    work = coded(first, "T1", "t1.txt", "work\n")
    gitops.fetch(second, "origin")

    path = gitops.prepare_worktree(second, "T1", base="unused", keep=True, remote="origin")

    assert git(path, "rev-parse", "HEAD") == work
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == "task/T1"


def test_a_reviewed_commit_not_pushed_yet_is_merged_later_not_failed(remote, tmp_path):
    coder = clone(remote, tmp_path / "coder")
    reviewer = clone(remote, tmp_path / "reviewer")
    coded(coder, "T1", "t1.txt", "pushed\n")
    unpushed = commit(coder / ".worktrees" / "T1", "t1.txt", "submitted, not pushed yet\n")

    assert gitops.prepare_review_worktree(reviewer, "T1", remote="origin", commit=unpushed) is None
    with pytest.raises(gitops.PushError, match="does not have the reviewed commit yet"):
        gitops.merge_task_remote(
            reviewer, "T1", integration="integration", review_commit=unpushed, remote="origin"
        )

    gitops.push_task(coder, "T1", remote="origin", expected=git(remote, "rev-parse", "task/T1"))
    assert (
        gitops.merge_task_remote(
            reviewer, "T1", integration="integration", review_commit=unpushed, remote="origin"
        )
        == git(remote, "rev-parse", "integration")
        == unpushed
    )


def test_a_remote_branch_moved_after_review_is_not_merged(remote, tmp_path):
    coder = clone(remote, tmp_path / "coder")
    reviewed = coded(coder, "T1", "t1.txt", "reviewed\n")
    commit(coder / ".worktrees" / "T1", "t1.txt", "sneaked in\n")
    gitops.push_task(coder, "T1", remote="origin", expected=reviewed)

    with pytest.raises(gitops.GitError, match="not at the reviewed commit") as raised:
        gitops.merge_task_remote(
            coder, "T1", integration="integration", review_commit=reviewed, remote="origin"
        )
    assert not isinstance(raised.value, gitops.PushError)


def test_a_change_summary_lists_files_with_counts_and_the_diff(repo):
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text("one\ntwo\nthree\n")
    (repo / "logo.bin").write_bytes(b"\x00\x01\x02")
    head = commit(repo, "new.py", "print('hi')\n")
    summary = gitops.change_summary(repo, base, head)
    assert summary["files"] == [
        {"path": "app.py", "added": 2, "deleted": 0},
        {"path": "logo.bin", "added": -1, "deleted": -1},  # binary: no line counts
        {"path": "new.py", "added": 1, "deleted": 0},
    ]
    assert "+two" in summary["diff"] and "+print('hi')" in summary["diff"]
    assert summary["truncated"] is False


def test_a_large_change_summary_is_cut_on_a_line_and_says_so(repo, monkeypatch):
    monkeypatch.setattr(gitops, "SUMMARY_MAX_DIFF", 200)
    base = git(repo, "rev-parse", "HEAD")
    head = commit(repo, "big.txt", "".join(f"line {i}\n" for i in range(100)))
    summary = gitops.change_summary(repo, base, head)
    assert summary["truncated"] is True
    assert len(summary["diff"]) <= 200 and summary["diff"].endswith("\n")
    assert summary["files"] == [{"path": "big.txt", "added": 100, "deleted": 0}]
