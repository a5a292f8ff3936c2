"""`liza demo-team`'s refusals before it starts anything (the team itself runs in
tests/site/test_serve_team.py, as real processes under `.ci/serve --team`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agents.client.cli import main

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
