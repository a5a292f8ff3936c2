"""The subcommands issue 12 §2 added, against a live server: `liza review claim-next`, `liza runs`
and `liza supervise`'s own refusals — their JSON and their exit codes."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from click.testing import CliRunner
from django.utils import timezone

from agents.client.cli import WAIT, main
from agents.services import run_finish, run_start
from boards.coordination.models.tasks import Review
from boards.coordination.services.projects import project_pause
from tests.agents.client.test_cli import Liza, error_of
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(hours=3))


def test_review_claim_next_answers_the_review_or_exit_11(cli_server, world):
    reviewer = Liza(cli_server, world, "code-reviewer-1")
    assert reviewer("review", "claim-next", exit=WAIT) == {"review": None, "task": None}

    world.ready_for_review("T1")
    body = reviewer("review", "claim-next")

    assert body["review"]["reviewer"] == "code-reviewer-1" and body["review"]["task"] == "T1"
    assert body["task"]["key"] == "T1" and body["task"]["review_commit"] == "c0ffee01"
    assert Review.objects.get(task__key="T1", closed_at__isnull=True).reviewer == "code-reviewer-1"
    # Asked again, the same review (a restarted reviewer goes on with it).
    assert reviewer("review", "claim-next")["review"]["id"] == body["review"]["id"]
    assert "reviewing T1 at c0ffee01" in reviewer("review", "claim-next", as_json=False)


def test_review_claim_next_refuses_a_coder_3_and_stops_on_a_pause_42(cli_server, world):
    world.ready_for_review("T1")
    coder = Liza(cli_server, world, "coder-2")
    error_of(coder("review", "claim-next", exit=3), "permission_denied", 3)

    project_pause(project=world.project, actor=world.admin, reason="lunch", now=timezone.now())
    reviewer = Liza(cli_server, world, "code-reviewer-1")
    error_of(reviewer("review", "claim-next", exit=42), "paused", 42)


def test_runs_lists_the_supervisors_runs(cli_server, world):
    world.claimed("T1")
    coder = world.agent("coder-1")
    now = timezone.now()
    run = run_start(project=world.project, agent=coder, now=now, task="T1", restart_reason="start")
    run_finish(run=run, agent=coder, now=now, exit_code=1, output="boom liza_0123456789ab_secret")
    liza = Liza(cli_server, world, "planner-1")

    (row,) = liza("runs", "--task", "T1")

    assert (row["agent"], row["task"], row["exit_code"], row["crashed"]) == (
        "coder-1",
        "T1",
        1,
        True,
    )
    assert row["output"] == "boom [redacted]"
    assert liza("runs", "--agent", "coder-2") == []
    assert "coder-1" in liza("runs", as_json=False)


def test_supervise_refuses_a_role_or_id_the_key_is_not(cli_server, world, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for agent_id, flags, message in (
        ("coder-1", ["--role", "code-reviewer"], "the key's agent is a coder, not a code_reviewer"),
        ("coder-2", ["--id", "coder-3"], "the key is coder-2's, not coder-3's"),
    ):
        result = CliRunner().invoke(
            main,
            ["supervise", "--repo", str(tmp_path), *flags, "--", "true"],
            env=Liza(cli_server, world, agent_id).env,
            catch_exceptions=False,
        )
        assert result.exit_code == 2, result.output
        assert message in result.output
    # Both are checked before registering: neither coder-1 nor coder-2 registered (a wrong
    # --id used to register the key's agent first, which then held the identity: exit 6).
    for agent_id in ("coder-1", "coder-2"):
        assert world.agent(agent_id).registered_at < timezone.now() - timedelta(hours=1)
        assert world.agent(agent_id).lease_expires < timezone.now()


@pytest.mark.parametrize(
    "args",
    [
        ["--agnet", "claude", "--role", "coder"],  # a mistyped option
        ["--role", "coder", "--bogus", "--", "true"],
    ],
)
def test_supervise_refuses_an_unknown_option_and_registers_nothing(
    cli_server, world, tmp_path, args
):
    """An unknown option is a usage error (exit 2): it was taken as the agent command, and the
    supervisor registered and ran `--agnet claude ...`."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = CliRunner().invoke(
        main,
        ["supervise", "--repo", str(tmp_path), *args],
        env=Liza(cli_server, world, "coder-1").env,
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    assert "No such option" in result.output
    assert world.agent("coder-1").registered_at < timezone.now() - timedelta(hours=1)


def test_supervise_without_configuration_is_a_usage_error():
    result = CliRunner().invoke(main, ["supervise", "--", "true"], env={"LIZA_URL": ""})
    assert result.exit_code == 2
    assert "missing configuration" in result.output


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "aider", "opencode"])
def test_explain_prints_the_command_environment_and_prompt_and_registers_nothing(
    cli_server, world, tmp_path, name
):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    liza = Liza(cli_server, world, "coder-1")
    result = CliRunner().invoke(
        main,
        ["supervise", "--repo", str(tmp_path), "--agent", name, "--role", "coder", "--explain"],
        env=liza.env,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"profile: {name}" in out and "command:\n  " + name in out
    assert "LIZA_AGENT_ID=coder-1" in out and "LIZA_ROLE=coder" in out
    assert liza.env["LIZA_KEY"] not in out  # the key never shows
    assert "=== ASSIGNED TASK ===" in out and "=== PLAYBOOK ===" in out
    submit = {"claude": "mcp__liza__submit", "codex": "liza.submit", "gemini": "`submit`",
              "aider": "liza submit KEY --commit", "opencode": "liza_submit"}[name]  # fmt: skip
    assert submit in out
    assert world.agent("coder-1").registered_at < timezone.now() - timedelta(hours=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "claude", "--", "claude", "-p"], "only with --agent custom"),
        (["--agent", "custom"], "runs the command after `--`"),
        ([], "runs the command after `--`"),
        (["--agent", "clod"], "no agent profile 'clod'"),
    ],
)
def test_supervise_refuses_a_profile_mistake_with_exit_2(
    cli_server, world, tmp_path, args, message
):
    result = CliRunner().invoke(
        main,
        ["supervise", "--repo", str(tmp_path), *args],
        env=Liza(cli_server, world, "coder-1").env,
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
