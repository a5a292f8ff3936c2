"""The supervisor's git (agents/client/gitops.py) on real temporary repositories: seed 000's
worktree keep/recreate rules and the approving reviewer's merge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.client import gitops


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "a@example.com")
    git(root, "config", "user.name", "A")
    (root / "app.py").write_text("one\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    git(root, "branch", "integration")
    return root


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
