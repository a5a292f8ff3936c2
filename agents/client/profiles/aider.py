"""aider (`aider --message-file`): no MCP, and `--yes-always` never runs a shell command the
model suggests (aider asks for an explicit yes: its `explicit_yes_required`), so the agent
reaches the board through the `liza` commands it writes in its reply — a fenced block

    ```liza
    liza submit T1 --commit HEAD --tree-clean
    ```

which this profile runs when aider exits, each checked against the role's operations (a
command of another role's is refused, as the server would), `HEAD` in `--commit` resolved in
the session's directory. A reviewer or planner runs in `--chat-mode ask` (aider edits no file
in ask mode), with `--dry-run` besides; a coder edits and aider commits its edits itself."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

from agents.client.operations import operations_for
from agents.client.profiles.base import CODER, REPLY, FlagTable, Invocation, Profile, Session

FLAGS = FlagTable(
    cli="aider",
    version="0.86",
    source="https://aider.chat/docs/config/options.html and https://aider.chat/docs/scripting.html",
    # --message-file: send the file's text as one message, then exit; --yes-always: yes to every
    # confirmation (never to shell commands); --chat-mode: code | ask | architect | help
    values="--message-file -f --message -m --chat-mode --edit-format --read --model",
    switches="--yes-always --no-stream --no-pretty --no-fancy-input --no-check-update"
    " --no-show-model-warnings --no-suggest-shell-commands --auto-commits --no-auto-commits"
    " --dry-run --no-analytics --version",
)

BLOCK = re.compile(r"^```liza[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def reply_commands(output: str) -> list[list[str]]:
    """The `liza` commands of the agent's reply: each line of each ```liza block."""
    found = []
    for block in BLOCK.findall(output):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                found.append(shlex.split(line))
    return found


class Aider(Profile):
    name = "aider"
    binary = "aider"
    channel = REPLY
    title = "aider, `aider --message-file` (`liza` commands in its reply)"
    flags = FLAGS

    def invocation(self, session: Session) -> Invocation:
        argv = [
            self.binary, "--message-file", str(session.prompt_file), "--yes-always",
            "--no-stream", "--no-pretty", "--no-fancy-input", "--no-check-update",
            "--no-show-model-warnings", "--no-suggest-shell-commands", "--no-analytics",
        ]  # fmt: skip
        if session.role == CODER:
            argv += ["--auto-commits"]
        else:
            argv += ["--chat-mode", "ask", "--dry-run", "--no-auto-commits"]
        return Invocation(argv)

    def after_exit(self, session: Session, output: str, run: Callable[[list[str]], Any]) -> None:
        allowed = {op.cli for op in operations_for(session.role)}
        for argv in reply_commands(output):
            if not argv or argv[0] != "liza":
                run(["#refused", f"not a liza command: {shlex.join(argv)}"])
                continue
            args = argv[1:]
            path = next((c for c in sorted(allowed, key=len, reverse=True)
                         if tuple(args[: len(c)]) == c), None)  # fmt: skip
            if path is None:
                run(["#refused", f"not an operation of a {session.role}: {shlex.join(argv)}"])
                continue
            for i, arg in enumerate(args[:-1]):
                if arg == "--commit" and args[i + 1] == "HEAD":
                    args[i + 1] = subprocess.run(
                        ["git", "rev-parse", "HEAD"],
                        cwd=session.cwd, capture_output=True, text=True, check=False,
                    ).stdout.strip()  # fmt: skip
            run(args)


PROFILE = Aider()
