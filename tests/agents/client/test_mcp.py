"""`liza mcp` driven by the MCP SDK's own client: the console script runs as a subprocess over
stdio, configured by the environment (a 0600 key file), against a live server.

Database work happens before and after each MCP session, never inside its event loop.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from django.db import connection
from django.utils import timezone
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from boards.coordination.services.projects import project_pause
from boards.coordination.services.tasks import task_release_claim
from boards.protocol import TaskStatus
from tests.api.helpers import key_for
from tests.lifecycle import World
from tests.live_server import free_port

pytestmark = pytest.mark.django_db(transaction=True)

EVERY_ROLE = {
    "work",
    "heartbeat",
    "discover",
    "anomaly",
    "log",
    "usage",
    "task_show",
    "tasks",
    "goal_show",
    "sprint_show",
}
# Upstream Liza's names of the role's operations (agents.client.upstream).
UPSTREAM = {
    "coder-1": {"liza_claim_task", "liza_submit_for_review", "liza_handoff", "liza_mark_blocked"},
    "code-reviewer-1": {"liza_submit_verdict"},
    "planner-1": {"liza_add_task", "liza_supersede_task"},
}
TOOLS = {
    "coder-1": EVERY_ROLE | {"claim", "claim_next", "submit", "block", "handoff", "pickup"},
    "code-reviewer-1": EVERY_ROLE
    | {"review_claim", "review_extend", "review_release", "verdict", "merge", "integration_failed"},
    "planner-1": EVERY_ROLE
    | {
        "goal_create",
        "goal_complete",
        "task_create",
        "task_finalize",
        "task_dependencies",
        "task_rescope",
        "task_abandon",
        "task_release",
        "sprint_create",
        "task_edit",
        "goal_edit",
        "sprint_complete",
    },
}


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(minutes=2))


class Agent:
    """How to start `liza mcp` as one agent of the world's project."""

    def __init__(self, server, world: World, agent_id: str, tmp_path: Path) -> None:
        key_file = tmp_path / f"{agent_id}.key"
        key_file.write_text(key_for(world.agent(agent_id)))
        key_file.chmod(0o600)
        liza = Path(sys.executable).with_name("liza")
        self.params = StdioServerParameters(
            command=str(liza if liza.exists() else shutil.which("liza")),
            args=["mcp"],
            env={
                "LIZA_URL": server.url,
                "LIZA_PROJECT": world.project.slug,
                "LIZA_KEY_FILE": str(key_file),
                "LIZA_RETRIES": "0",
            },
        )

    @asynccontextmanager
    async def session(self):
        async with (
            stdio_client(self.params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    return result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, result.structured_content)
    return result.structured_content["error"]


@pytest.mark.parametrize("agent_id", sorted(TOOLS))
def test_each_role_sees_only_its_tools(cli_server, world, tmp_path, agent_id):
    agent = Agent(cli_server, world, agent_id, tmp_path)

    async def listed():
        async with agent.session() as session:
            tools = (await session.list_tools()).tools
            if agent_id.startswith("coder"):
                # Nothing claimable is an answer, not an error.
                assert await call(session, "claim_next", base_commit="c0ffee01") == {"result": None}
            return tools

    tools = anyio.run(listed)

    assert {tool.name for tool in tools} == TOOLS[agent_id] | UPSTREAM[agent_id]
    schemas = {tool.name: tool.input_schema for tool in tools}
    if "submit" in schemas:
        assert set(schemas["submit"]["required"]) == {"key", "review_commit", "tree_clean"}
        assert schemas["submit"]["properties"]["tree_clean"]["type"] == "boolean"
    if "verdict" in schemas:
        assert schemas["verdict"]["properties"]["verdict"]["enum"] == ["APPROVED", "REJECTED"]


def test_a_coder_and_a_reviewer_take_a_task_to_approved(cli_server, world, tmp_path):
    world.unclaimed("T1")
    coder = Agent(cli_server, world, "coder-1", tmp_path)
    reviewer = Agent(cli_server, world, "code-reviewer-1", tmp_path)

    async def coder_work():
        async with coder.session() as session:
            assert (await call(session, "work"))["work"] is True
            claimed = await call(session, "claim_next", base_commit="c0ffee01", worktree="wt/T1")
            submitted = await call(
                session, "submit", key="T1", review_commit="abc1234", tree_clean=True
            )
            return claimed, submitted

    claimed, submitted = anyio.run(coder_work)
    assert claimed["key"] == "T1" and claimed["status"] == TaskStatus.CLAIMED
    assert submitted["status"] == TaskStatus.READY_FOR_REVIEW

    async def review():
        async with reviewer.session() as session:
            assert (await call(session, "review_claim", key="T1"))["reviewer"] == "code-reviewer-1"
            return await call(
                session, "verdict", key="T1", verdict="APPROVED", review_commit="abc1234"
            )

    approved = anyio.run(review)

    assert approved["status"] == TaskStatus.APPROVED
    task = world.task("T1")
    assert task.status == TaskStatus.APPROVED
    assert task.review_commit == "abc1234"


def test_refusals_are_tool_errors_with_code_exit_and_stop(cli_server, world, tmp_path):
    world.claimed("T2")
    task_release_claim(task=world.task("T2"), actor=world.admin, reason="stuck", now=timezone.now())
    coder = Agent(cli_server, world, "coder-1", tmp_path)

    async def refusals():
        async with coder.session() as session:
            lost = await refused(
                session, "submit", key="T2", review_commit="abc1234", tree_clean=True
            )
            missing = await refused(session, "claim", key="NOPE", base_commit="c0ffee01")
            foreign = await refused(session, "verdict", key="T2", verdict="APPROVED")
            typed = await refused(session, "submit", key="T2", review_commit=7, tree_clean=True)
            return lost, missing, foreign, typed

    lost, missing, foreign, typed = anyio.run(refusals)

    assert (lost["code"], lost["exit"], lost["stop"]) == ("lease_lost", 42, True)
    assert (missing["code"], missing["exit"], missing["stop"]) == ("not_found", 5, False)
    assert (foreign["code"], foreign["exit"], foreign["stop"]) == ("usage", 2, False)
    assert "not this role's" in foreign["message"]
    assert (typed["code"], typed["exit"]) == ("usage", 2)


def test_a_paused_project_makes_heartbeat_and_work_say_stop(cli_server, world, tmp_path):
    project_pause(project=world.project, actor=world.admin, reason="lunch", now=timezone.now())
    coder = Agent(cli_server, world, "coder-1", tmp_path)

    async def stops():
        async with coder.session() as session:
            return await refused(session, "heartbeat"), await refused(session, "work")

    beat, work = anyio.run(stops)

    assert (beat["code"], beat["exit"], beat["stop"]) == ("paused", 42, True)
    assert (work["exit"], work["stop"]) == (42, True)


def test_a_heartbeat_after_leave_says_the_session_ended_exit_8(cli_server, world, tmp_path):
    """The agent left while its session runs (its supervisor stopping, `liza leave`): the
    heartbeat tool's refusal is `not_registered`, exit 8, with stop — end the session — but no
    restart promised. (A `liza mcp` started after the leave ends at once, exit 8: the `/work`
    it asks the role of answers the same.)"""
    from agents.services import agent_leave

    coder = Agent(cli_server, world, "coder-1", tmp_path)

    def leave() -> None:  # in a thread of its own, with a connection of its own
        try:
            agent_leave(project=world.project, agent=world.agent("coder-1"), now=timezone.now())
        finally:
            connection.close()

    async def beat():
        async with coder.session() as session:
            await anyio.to_thread.run_sync(leave)
            result = await session.call_tool("heartbeat", {})
            assert result.is_error, result.structured_content
            return result.structured_content["error"], result.content[0].text

    error, text = anyio.run(beat)

    assert (error["code"], error["exit"], error["stop"]) == ("not_registered", 8, True)
    assert text.endswith(
        "ENDED: this agent left; end this session now, nothing restarts it (exit 8)"
    )


def test_a_key_the_server_refuses_ends_liza_mcp_with_its_exit_code(cli_server, world, tmp_path):
    key_file = tmp_path / "bad.key"
    key_file.write_text("liza_not-a-key")
    key_file.chmod(0o600)
    liza = Path(sys.executable).with_name("liza")

    done = subprocess.run(
        [str(liza), "mcp"],
        env={
            "LIZA_URL": cli_server.url,
            "LIZA_PROJECT": world.project.slug,
            "LIZA_KEY_FILE": str(key_file),
            "LIZA_RETRIES": "0",
            "PATH": "/usr/bin:/bin",
            "PYTHONPROFILEIMPORTTIME": "1",  # every module it imports, on stderr
        },
        input=b"",
        capture_output=True,
        timeout=60,
    )

    assert done.returncode == 3, done.stderr
    assert b"liza mcp:" in done.stderr and done.stdout == b""
    # Refused before the SDK was imported (~1 s of CPU: agents.client.mcp_tools).
    imported = {
        line.rsplit(b"|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith(b"import time:")
    }
    assert b"agents.client.mcp_server" in imported, done.stderr[-2000:]
    assert not {m for m in imported if m.split(b".")[0] in (b"mcp", b"mcp_types")}


def test_no_server_ends_liza_mcp_with_exit_7(tmp_path):
    key_file = tmp_path / "k.key"
    key_file.write_text("liza_whatever")
    key_file.chmod(0o600)

    done = subprocess.run(
        [str(Path(sys.executable).with_name("liza")), "mcp"],
        env={
            "LIZA_URL": f"http://127.0.0.1:{free_port()}",
            "LIZA_PROJECT": "demo",
            "LIZA_KEY_FILE": str(key_file),
            "LIZA_RETRIES": "0",
        },
        input=b"",
        capture_output=True,
        timeout=60,
    )

    assert done.returncode == 7, done.stderr
    assert b"unreachable" in done.stderr


def test_an_agent_reports_its_usage_through_the_usage_tool(cli_server, world, tmp_path):
    """Issue 24: every role's `usage` tool records its running run's totals (a float cost
    taken as a JSON number), counted once when repeated; a string cost is a usage error."""
    from decimal import Decimal

    from agents.models import RunUsage
    from agents.services import run_start

    run = run_start(project=world.project, agent=world.planner, now=timezone.now())
    planner = Agent(cli_server, world, "planner-1", tmp_path)

    async def report():
        async with planner.session() as session:
            for _ in range(2):
                body = await call(session, "usage", model="opus", output_tokens=300, cost_usd=0.125)
            typed = await refused(session, "usage", cost_usd="a lot")
            return body, typed

    body, typed = anyio.run(report)

    assert body["result"][0]["run"] == run.pk
    row = RunUsage.objects.get(run=run)
    assert (row.output_tokens, row.cost_usd) == (300, Decimal("0.125"))
    assert (typed["code"], typed["exit"]) == ("usage", 2)
