"""Agent profiles (issue 23 §1): each builds its CLI's command line from its flag table, every
flag of which the real CLI documents (the fakes' independent tables, tests/agents/client/fakes/
flags.py), with least-privilege permissions per role in that CLI's own terms; and each playbook
names only operations its role is offered, in the form its profile gives the agent."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from agents.client import playbooks
from agents.client.cli.usage import usage
from agents.client.errors import UsageError
from agents.client.operations import operations_for
from agents.client.profiles import PROFILES, Session, profile
from agents.client.profiles.aider import reply_commands
from tests.agents.client.fakes import flags as documented

ROLES = ("planner", "coder", "code_reviewer")
CLIS = ("claude", "codex", "gemini", "aider", "opencode")
DOCUMENTED = {
    "claude": documented.CLAUDE,
    "codex": documented.CODEX_EXEC,
    "gemini": documented.GEMINI,
    "aider": documented.AIDER,
    "opencode": documented.OPENCODE_RUN,
}


def session(tmp_path: Path, role: str) -> Session:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("=== BOOTSTRAP CONTEXT ===\nMode: Liza " + role)
    return Session(
        role=role,
        agent_id="x-1",
        prompt=prompt.read_text(),
        prompt_file=prompt,
        state=tmp_path / "state",
        cwd=tmp_path,
        env={
            "LIZA_URL": "http://127.0.0.1:9",
            "LIZA_PROJECT": "p",
            "LIZA_KEY_FILE": str(tmp_path / "key"),
        },
    )


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", CLIS)
def test_every_flag_passed_is_one_the_real_cli_documents(tmp_path, name, role):
    made = PROFILES[name].build(session(tmp_path, role))
    table = DOCUMENTED[name]
    argv = made.command[1:]
    if name in ("codex", "opencode"):
        assert argv[0] == {"codex": "exec", "opencode": "run"}[name]
        argv = argv[1:]
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            assert arg.split("=")[0] in table, (name, arg)
            skip = table[arg.split("=")[0]] and "=" not in arg
    # The profile's own table is a subset of what the CLI documents.
    assert {f.name for f in PROFILES[name].flags.flags} <= set(table) | {"-v", "--version"}
    assert PROFILES[name].flags.version and PROFILES[name].flags.source.startswith("https://")


def permissions(tmp_path: Path, name: str, role: str) -> dict[str, bool]:
    """(may edit files, may run any shell) as the CLI would read what the profile passes."""
    made = PROFILES[name].build(session(tmp_path, role))
    argv = made.command

    def values(flag: str) -> list[str]:
        return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]

    if name == "claude":
        allowed = ",".join(values("--allowedTools")).split(",")
        denied = ",".join(values("--disallowedTools")).split(",")
        return {
            "edit": any(t in allowed for t in ("Edit", "Write")) and "Edit" not in denied,
            "shell": "Bash" in allowed and "Bash" not in denied,
        }
    if name == "codex":
        config = {c.split("=", 1)[0]: c.split("=", 1)[1] for c in values("-c")}
        sandbox = values("--sandbox")[0]
        shell = tomllib.loads(f"v = {config.get('features.shell_tool', 'true')}")["v"]
        return {"edit": sandbox != "read-only", "shell": shell and sandbox != "read-only"}
    if name == "gemini":
        settings = json.loads(next(iter(made.files.values())))
        core, exclude = settings["tools"]["core"], settings["tools"]["exclude"]
        return {
            "edit": "write_file" in core and "write_file" not in exclude,
            "shell": "run_shell_command" in core and "run_shell_command" not in exclude,
        }
    if name == "opencode":
        rules = json.loads(next(iter(made.files.values())))["permission"]
        return {"edit": rules["edit"] == "allow", "shell": rules["bash"] == "allow"}
    assert name == "aider"
    ask = values("--chat-mode") == ["ask"]
    return {"edit": not ask and "--dry-run" not in argv, "shell": False}


@pytest.mark.parametrize("name", CLIS)
def test_a_reviewer_cannot_edit_and_a_planner_cannot_run_shell(tmp_path, name):
    assert permissions(tmp_path, name, "code_reviewer")["edit"] is False
    assert permissions(tmp_path, name, "planner") == {"edit": False, "shell": False}
    coder = permissions(tmp_path, name, "coder")
    assert coder["edit"] is True
    if name != "aider":  # aider runs no model-suggested shell command in any role
        assert coder["shell"] is True


def liza_server(name: str, made) -> tuple[list[str], dict[str, str]]:
    """(command line, environment) of the `liza` MCP server, read where the CLI reads it."""
    files = [json.loads(text) for text in made.files.values()]
    if name == "claude":
        server = files[0]["mcpServers"]["liza"]
        return [server["command"], *server["args"]], server["env"]
    if name == "gemini":
        server = files[0]["mcpServers"]["liza"]
        assert server["trust"] is True  # a headless run cannot confirm a tool call
        return [server["command"], *server["args"]], server["env"]
    if name == "opencode":
        server = files[0]["mcp"]["liza"]
        return server["command"], server["environment"]
    argv = made.command
    config = {}
    for i, arg in enumerate(argv[:-1]):
        if arg == "-c":
            key, value = argv[i + 1].split("=", 1)
            config[key] = tomllib.loads(f"v = {value}")["v"]
    assert config["mcp_servers.liza.default_tools_approval_mode"] == "approve"
    command = [config["mcp_servers.liza.command"], *config["mcp_servers.liza.args"]]
    return command, config["mcp_servers.liza.env"]


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "opencode"])
def test_the_mcp_profiles_configure_liza_mcp_where_their_cli_reads_it(tmp_path, name):
    made = PROFILES[name].build(session(tmp_path, "coder"))
    command, env = liza_server(name, made)
    assert command[-1] == "mcp" and "agents.client.cli" in command
    assert env["LIZA_KEY_FILE"] == str(tmp_path / "key") and env["LIZA_PROJECT"] == "p"
    for path in made.files:
        assert path.parent == tmp_path / "state"  # never in the worktree
    made.write_files()
    for path in made.files:
        assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", [*CLIS, "custom"])
def test_each_playbook_names_only_its_roles_operations_in_the_profiles_form(name, role):
    agent = profile(name, ["true"] if name == "custom" else None)
    text = playbooks.render(role, agent, usage=usage)
    offered = {op.name for op in operations_for(role)}
    named = playbooks.referenced(role)
    assert named <= offered and named
    for operation in named:
        form = agent.tool_name(operation) if agent.channel == "mcp" else usage(operation)
        assert f"`{form}" in text, (operation, form)
    assert "exit 42" not in text.lower().replace("exiting 42 is never needed", "")


def test_the_planner_playbook_opens_a_sprint():
    assert "sprint_create" in playbooks.referenced("planner")
    assert "liza sprint create" in playbooks.render("planner", profile("aider"), usage=usage)


def test_the_reviewer_playbook_says_how_to_give_a_review_back():
    assert "review_release" in playbooks.referenced("code_reviewer")
    assert "liza review release KEY" in playbooks.render(
        "code_reviewer", profile("aider"), usage=usage
    )
    assert "`mcp__liza__review_release`" in playbooks.render("code_reviewer", profile("claude"))


def test_a_project_overrides_a_playbook(tmp_path):
    (tmp_path / ".liza" / "prompts").mkdir(parents=True)
    (tmp_path / ".liza" / "prompts" / "coder.md").write_text("Ours: {{op submit}} only.")
    assert "Ours: `mcp__liza__submit` only." in playbooks.render(
        "coder", profile("claude"), tmp_path
    )
    (tmp_path / ".liza" / "prompts" / "coder.md").write_text("{{op verdict}}")
    with pytest.raises(UsageError, match="not offered"):
        playbooks.render("coder", profile("claude"), tmp_path)


def test_profiles_refuse_a_command_and_custom_needs_one():
    with pytest.raises(UsageError, match="only with --agent custom"):
        profile("claude", ["claude", "-p"])
    with pytest.raises(UsageError, match="after `--`"):
        profile("custom")
    with pytest.raises(UsageError, match="no agent profile 'clod'"):
        profile("clod")


def test_aider_reply_commands_are_read_from_liza_blocks():
    reply = "Done.\n```liza\nliza submit T1 --commit HEAD --tree-clean\n# note\n```\n```py\nx\n```"
    assert reply_commands(reply) == [["liza", "submit", "T1", "--commit", "HEAD", "--tree-clean"]]


def test_liza_agents_lists_the_profiles_and_the_installed_clis(tmp_path):
    from click.testing import CliRunner

    from agents.client.cli import main

    claude = tmp_path / "claude"
    claude.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "2.1.3 (Claude Code)"\n')
    claude.chmod(0o755)
    result = CliRunner().invoke(main, ["agents"], env={"PATH": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert (
        f"claude    Claude Code, `claude -p` (MCP)\n          {claude} (2.1.3 (Claude Code))"
        in (result.output)
    )
    assert "codex     OpenAI Codex CLI" in result.output and "not installed" in result.output
    for name in ("gemini", "aider", "opencode", "custom"):
        assert f"\n{name}" in result.output


@pytest.mark.parametrize("name", CLIS)
def test_a_fake_refuses_a_flag_its_cli_does_not_document(tmp_path, name):
    import subprocess
    import sys

    fake = Path(__file__).with_name("fakes") / "cli.py"
    sub = {"codex": ["exec"], "opencode": ["run"]}.get(name, [])
    done = subprocess.run(
        [sys.executable, str(fake), name, *sub, "--no-such-flag", "x"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "unknown option '--no-such-flag'" in done.stderr


def test_a_profile_cannot_pass_a_flag_missing_from_its_table(tmp_path, monkeypatch):
    claude = PROFILES["claude"]
    real = claude.invocation

    def with_typo(s):
        made = real(s)
        made.command.append("--allowed-tool")
        return made

    monkeypatch.setattr(claude, "invocation", with_typo)
    with pytest.raises(ValueError, match="--allowed-tool is not in the flag table"):
        claude.build(session(tmp_path, "coder"))
