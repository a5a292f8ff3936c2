"""The flags each real CLI documents for its non-interactive mode, written here from the CLIs'
own documentation, independently of agents.client.profiles (so a profile that passes a flag the
CLI does not have fails the fake, not just a lookup in its own table).

name -> takes a value. The version and source say where each list was read.
"""

from __future__ import annotations

CLAUDE = {  # Claude Code 2.1, https://docs.anthropic.com/en/docs/claude-code/cli-reference
    "-p": False, "--print": False, "--output-format": True, "--input-format": True,
    "--verbose": False, "--mcp-config": True, "--strict-mcp-config": False,
    "--allowedTools": True, "--allowed-tools": True, "--disallowedTools": True,
    "--disallowed-tools": True, "--permission-mode": True, "--append-system-prompt": True,
    "--system-prompt": True, "--max-turns": True, "--model": True, "--add-dir": True,
    "--continue": False, "-c": False, "--resume": True, "-r": True,
    "--dangerously-skip-permissions": False, "--version": False, "-v": False,
}  # fmt: skip
CODEX_EXEC = {  # codex-cli 0.130, openai/codex docs/exec.md and `codex exec --help`
    "--json": False, "-s": True, "--sandbox": True, "-c": True, "--config": True,
    "--skip-git-repo-check": False, "-C": True, "--cd": True, "-m": True, "--model": True,
    "--full-auto": False, "-o": True, "--output-last-message": True, "--color": True,
    "-p": True, "--profile": True, "-i": True, "--image": True, "--oss": False,
    "--output-schema": True, "--dangerously-bypass-approvals-and-sandbox": False,
}  # fmt: skip
GEMINI = {  # gemini-cli 0.40, geminicli.com/docs/cli/headless and the CLI reference
    "-p": True, "--prompt": True, "--output-format": True, "--approval-mode": True,
    "-y": False, "--yolo": False, "--allowed-mcp-server-names": True, "--allowed-tools": True,
    "-m": True, "--model": True, "--include-directories": True, "-s": False,
    "--sandbox": False, "-d": False, "--debug": False, "-e": True, "--extensions": True,
    "--version": False, "-v": False,
}  # fmt: skip
AIDER = {  # aider 0.86, aider.chat/docs/config/options.html
    "--message": True, "--msg": True, "-m": True, "--message-file": True, "-f": True,
    "--yes-always": False, "--stream": False, "--no-stream": False, "--pretty": False,
    "--no-pretty": False, "--fancy-input": False, "--no-fancy-input": False,
    "--check-update": False, "--no-check-update": False, "--show-model-warnings": False,
    "--no-show-model-warnings": False, "--suggest-shell-commands": False,
    "--no-suggest-shell-commands": False, "--auto-commits": False, "--no-auto-commits": False,
    "--dirty-commits": False, "--no-dirty-commits": False, "--dry-run": False,
    "--no-dry-run": False, "--chat-mode": True, "--edit-format": True, "--read": True,
    "--file": True, "--model": True, "--analytics": False, "--no-analytics": False,
    "--git": False, "--no-git": False, "--version": False,
}  # fmt: skip
OPENCODE_RUN = {  # opencode 1.1, opencode.ai/docs/cli (run)
    "--format": True, "-m": True, "--model": True, "--agent": True, "-c": False,
    "--continue": False, "-s": True, "--session": True, "--share": False, "-f": True,
    "--file": True, "--title": True, "--attach": True, "--port": True, "--auto": False,
}  # fmt: skip
