"""`liza demo-team`: its refusals before it starts anything, and the team run from another
directory (the team also runs in tests/site/, as real processes under `.ci/serve --team`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from django.utils import timezone

from agents.client.cli import main
from boards.demo.projects import team_build

NO_ENV = {"LIZA_URL": None, "LIZA_PROJECT": None, "LIZA_KEY": None, "LIZA_KEY_FILE": None}


def write_keys(directory, *agent_ids: str) -> None:
    directory.mkdir()
    for agent_id in agent_ids:
        path = directory / f"{agent_id}.key"
        path.write_text("liza_000000000000_x\n")
        path.chmod(0o600)


@pytest.mark.parametrize(
    ("agent_ids", "project", "message"),
    [
        (("planner-1", "code-reviewer-1"), "team", "no key file for a coder"),
        (("coder-1", "code-reviewer-1"), "team", "no key file for a planner"),
        (("planner-1", "coder-1", "code-reviewer-1", "designer-1"), "team", "designer-1"),
        (("planner-1", "coder-1", "code-reviewer-1"), None, "--project/LIZA_PROJECT"),
    ],
)
def test_demo_team_refuses_an_incomplete_team_with_a_usage_error(
    tmp_path, agent_ids, project, message
):
    keys = tmp_path / "keys"
    write_keys(keys, *agent_ids)
    args = ["--url", "http://127.0.0.1:9"] + (["--project", project] if project else [])

    result = CliRunner().invoke(main, [*args, "demo-team", "--keys", str(keys)], env=NO_ENV)

    assert result.exit_code == 2, result.output
    assert message in result.output


def test_demo_team_reads_the_project_from_the_key_directory(tmp_path):
    """DIR/project names the project; a team without a coder is still refused (exit 2), which
    shows the project was found first (no configuration error)."""
    keys = tmp_path / "keys"
    write_keys(keys, "planner-1", "code-reviewer-1")
    (keys / "project").write_text("team-3\n")

    result = CliRunner().invoke(
        main, ["--url", "http://127.0.0.1:9", "demo-team", "--keys", str(keys)], env=NO_ENV
    )

    assert result.exit_code == 2 and "no key file for a coder" in result.output, result.output


# Once a second, as the profile teams (test_profile_teams.py): polls at 0.3 s cost CPU, not proof.
FAST = ["--poll-interval", "1", "--heartbeat-interval", "2", "--restart-delay", "0.2"]


@pytest.mark.django_db(transaction=True)
def test_demo_team_runs_from_any_directory_with_a_relative_key_directory(cli_server, tmp_path):
    """The supervisors run in the team's repository (a temporary directory): a relative
    `--keys` used to reach them as is, and all five exited 2 ("cannot read the key file")."""
    team = team_build(slug="team-anywhere", now=timezone.now())
    keys = tmp_path / "keys"
    keys.mkdir()
    for agent_id, key in team.keys.items():
        (keys / f"{agent_id}.key").write_text(key + "\n")
        (keys / f"{agent_id}.key").chmod(0o600)
    (keys / "project").write_text(team.project.slug + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}

    done = subprocess.run(
        [sys.executable, "-m", "agents.client.cli", "--url", cli_server.url,
         "demo-team", "--keys", "../keys", "--timeout", "150", *FAST],
        cwd=elsewhere, env={**env, "TMPDIR": str(tmp_path)},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-6000:] + done.stderr
    assert "the goal is COMPLETED" in done.stdout
    assert "cannot read the key file" not in done.stdout
    team.project.refresh_from_db()
    assert team.project.goals.get().status == "COMPLETED"
