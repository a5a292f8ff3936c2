"""Upstream Liza's names through `liza mcp`, driven by the official `mcp` client (issue 23 §4):
its `liza_*` tools with its parameter names act as our operations do, an `agent_id` that is not
the key's own is refused, and the resources liza://state|tasks|agents answer, read-only and
filtered by role. Also `liza mcp --help` (tools per role) and the hyphenated CLI aliases."""

from __future__ import annotations

import json
from datetime import timedelta

import anyio
import pytest
from click.testing import CliRunner
from django.utils import timezone

from agents.client.cli import main
from boards.protocol import TaskStatus
from tests.agents.client.gitrepo import git, new_repo
from tests.agents.client.test_mcp import Agent, call, refused
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(minutes=2))


def test_upstream_tools_resources_and_the_agent_id_check(cli_server, world, tmp_path):
    repo = new_repo(tmp_path / "repo", {"README": "x\n"}, email="a@example.com", name="A")
    world.claimed("T1")  # coder-1's, under a live lease
    world.draft("T9")
    coder = Agent(cli_server, world, "coder-1", tmp_path)
    coder.params.env.update(LIZA_WORKTREE=str(repo), LIZA_REPO=str(repo))
    head = git(repo, "rev-parse", "HEAD")

    async def coder_work():
        async with coder.session() as session:
            names = {t.name for t in (await session.list_tools()).tools}
            resources = {str(r.uri) for r in (await session.list_resources()).resources}
            other = await refused(
                session, "liza_submit_for_review", task_id="T1", commit_sha=head, agent_id="coder-2"
            )
            mine = await call(session, "liza_claim_task", task_id="T1", agent_id="coder-1")
            assert (mine["key"], mine["assigned_to"]) == ("T1", "coder-1")
            wrong_role = await refused(session, "liza_submit_verdict", task_id="T1",
                                       verdict="APPROVED", agent_id="coder-1")  # fmt: skip
            submitted = await call(
                session, "liza_submit_for_review", task_id="T1", commit_sha=head, agent_id="coder-1"
            )
            tasks = await session.read_resource("liza://tasks")
            state = await session.read_resource("liza://state")
            agents = await session.read_resource("liza://agents")
            return names, resources, other, wrong_role, submitted, tasks, state, agents

    names, resources, other, wrong_role, submitted, tasks, state, agents = anyio.run(coder_work)

    assert {
        "liza_claim_task",
        "liza_submit_for_review",
        "liza_mark_blocked",
        "liza_handoff",
    } <= names
    assert "liza_submit_verdict" not in names and "liza_add_task" not in names
    assert resources == {"liza://state", "liza://tasks", "liza://agents"}
    assert other["code"] == "not_your_agent_id" and other["exit"] == 3
    assert "not this role's" in wrong_role["message"]
    assert submitted["status"] == TaskStatus.READY_FOR_REVIEW
    assert submitted["review_commit"] == head
    # Read-only views, filtered by role: a coder does not see the planner's DRAFT.
    listed = json.loads(tasks.contents[0].text)
    assert [t["key"] for t in listed] == ["T1"]
    assert json.loads(state.contents[0].text)["role"] == "coder"
    assert {a["agent_id"] for a in json.loads(agents.contents[0].text)} >= {"coder-1", "planner-1"}
    task = world.task("T1")
    assert task.status == TaskStatus.READY_FOR_REVIEW

    reviewer = Agent(cli_server, world, "code-reviewer-1", tmp_path)
    planner = Agent(cli_server, world, "planner-1", tmp_path)

    async def review_and_plan():
        async with reviewer.session() as session:
            await call(session, "review_claim", key="T1")
            verdict = await call(session, "liza_submit_verdict", task_id="T1", verdict="approved",
                                 agent_id="code-reviewer-1")  # fmt: skip
        async with planner.session() as session:
            added = await call(session, "liza_add_task", id="T2", desc="More", spec="README",
                               done="it works", scope="x", depends=["T1"], type="code")  # fmt: skip
            drafts = json.loads((await session.read_resource("liza://tasks")).contents[0].text)
        return verdict, added, drafts

    verdict, added, drafts = anyio.run(review_and_plan)
    assert verdict["status"] == TaskStatus.APPROVED
    assert added["key"] == "T2" and added["depends_on"] == ["T1"]
    assert {"T2", "T9"} <= {t["key"] for t in drafts}  # the planner sees its drafts


def test_mcp_help_lists_each_roles_tools_and_the_cli_has_upstream_aliases():
    result = CliRunner().invoke(main, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "coder: work, heartbeat" in result.output and "liza_submit_for_review" in result.output
    assert "code_reviewer:" in result.output and "liza_submit_verdict" in result.output
    assert "liza://state" in result.output
    for alias in ("claim-task", "submit-for-review", "submit-verdict", "mark-blocked"):
        assert CliRunner().invoke(main, [alias, "--help"]).exit_code == 0, alias
