"""Git repositories for the supervisor's tests: real `git`, in a temporary folder."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """`git ARGS` in `repo`; its stdout, stripped (a failing command fails the test)."""
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def new_repo(root: Path, files: dict[str, str], *, email: str, name: str) -> Path:
    """A repository at `root` with `files` committed on `main` and an `integration` branch at
    that commit (the branch `liza supervise` works from)."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", email)
    git(root, "config", "user.name", name)
    for path, text in files.items():
        (root / path).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    git(root, "branch", "integration")
    return root
