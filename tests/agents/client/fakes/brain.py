"""What a fake agent does with its prompt: the least a real model would, per role, through a
`Board` (MCP tools, or `liza` commands in its reply). Everything it knows comes from the prompt
the supervisor wrote, as for a real model; it refuses (exit 3) when the prompt does not name an
operation it needs the way its CLI reaches the board: prompt and permissions must agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Protocol


class Refused(Exception):
    """The fake cannot go on (a missing permission, a prompt that names no such tool)."""


class Board(Protocol):
    def name(self, operation: str) -> str: ...  # how the prompt must name the operation

    async def call(self, operation: str, **arguments: Any) -> Any: ...


def field(prompt: str, label: str) -> str:
    found = re.search(rf"^{re.escape(label)}: (.*)$", prompt, re.MULTILINE)
    return found.group(1).strip() if found else ""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


async def act(prompt: str, board: Board, cwd: Path, may: dict[str, bool]) -> list[str]:
    """Do the role's part; returns what it did (for the CLI's output)."""
    role = field(prompt, "Mode").removeprefix("Liza ").strip()
    done: list[str] = []

    async def call(operation: str, **arguments: Any) -> Any:
        if board.name(operation) not in prompt:
            raise Refused(f"the prompt names no {board.name(operation)}")
        done.append(board.name(operation))
        return await board.call(operation, **arguments)

    if role == "planner":
        state = field(prompt, "SPRINT STATE")
        if field(prompt, "WAKE TRIGGER") == "INITIAL_PLANNING":
            await call("task_create", key="T1", description="Write T1.txt", spec_ref="README",
                       done_when="T1.txt exists", priority=1)  # fmt: skip
            await call("task_create", key="T2", description="Write T2.txt", spec_ref="README",
                       done_when="T2.txt exists", depends_on=["T1"], priority=2)  # fmt: skip
            await call("task_finalize", key="T1")
            await call("task_finalize", key="T2")
            await call("sprint_create", planned=["T1", "T2"])
        elif state and all(part.startswith(("MERGED", "ABANDONED")) for part in state.split(", ")):
            await call("goal_complete", reason="T1 and T2 merged")
    elif role == "coder":
        key = field(prompt, "Task")
        if not (may["edit"] and may["shell"]):
            raise Refused(f"a coder needs to edit and run git: {may}")
        (cwd / f"{key}.txt").write_text(f"{key} done\n")
        git(cwd, "add", "-A")
        git(cwd, "-c", "user.name=fake", "-c", "user.email=fake@localhost",
            "commit", "-q", "-m", f"{key}")  # fmt: skip
        # It opened a pull request for its branch, and reports it (issue 25).
        await call("submit", key=key, review_commit=board_commit(board, cwd), tree_clean=True,
                   pr_url=pr_url_of(key))  # fmt: skip
    elif role == "code_reviewer":
        if may["edit"]:
            raise Refused("a reviewer was allowed to edit files")
        key, commit = field(prompt, "Task"), field(prompt, "Review commit")
        await call("verdict", key=key, verdict="APPROVED", review_commit=commit)
    else:
        raise Refused(f"no role in the prompt: {role!r}")
    return done


def pr_url_of(key: str) -> str:
    return f"https://git.example.test/acme/shop/pull/{key}"


def board_commit(board: Board, cwd: Path) -> str:
    return getattr(board, "head", None) or git(cwd, "rev-parse", "HEAD")
