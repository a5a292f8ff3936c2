"""Every `liza` subcommand against a live server: its JSON output and its exit code.

The command runs in-process (click's runner) but talks HTTP to a real server process on the
suite's database; what it did is then read from the database. A few runs go through the
installed console script as a separate process (configuration by the environment, a key file,
no server at all).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from django.utils import timezone

from agents.client import Client
from agents.client.cli import ROLE_COMPLETE, WAIT, main
from agents.services import agent_create
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Discovery, Handoff, Task
from boards.coordination.services.projects import project_pause
from boards.coordination.services.tasks import task_cancel, task_finalize, task_release_claim
from boards.protocol import Action, GoalStatus, TaskStatus
from tests.api.helpers import key_for
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)


class Liza:
    """`liza --json …` as one agent of the world's project, on the live server."""

    def __init__(self, server, world: World, agent_id: str) -> None:
        self.env = {
            "LIZA_URL": server.url,
            "LIZA_PROJECT": world.project.slug,
            "LIZA_KEY": key_for(world.agent(agent_id)),
            "LIZA_RETRIES": "0",
        }

    def __call__(self, *args: str, exit: int = 0, as_json: bool = True):
        result = CliRunner().invoke(
            main, ["--json", *args] if as_json else list(args), env=self.env, catch_exceptions=False
        )
        assert result.exit_code == exit, (args, result.exit_code, result.output)
        return json.loads(result.output) if as_json else result.output


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(minutes=2))


def error_of(body, code: str, exit: int):
    assert body["error"]["code"] == code, body
    assert body["error"]["details"]["exit"] == exit, body
    return body["error"]


def test_the_planner_plans_a_goal_and_a_sprint(cli_server, world):
    planner = Liza(cli_server, world, "planner-1")

    goal = planner("goal", "create", "--description", "Ship the parser")
    assert goal["description"] == "Ship the parser"
    assert planner("goal", "show")["id"] == goal["id"]

    spec = ("--spec-ref", "specs/parser.md")
    t1 = planner("task", "create", "T1", "--description", "Lexer", "--done-when", "lexes", *spec)
    assert t1["task"]["status"] == TaskStatus.DRAFT
    planner("task", "create", "T2", "--description", "Parser", "--done-when", "parses", *spec)
    deps = planner("task", "dependencies", "T2", "--on", "T1")
    assert deps["task"]["depends_on"] == ["T1"]
    for key in ("T1", "T2"):
        assert planner("task", "finalize", key)["task"]["status"] == TaskStatus.UNCLAIMED
    sprint = planner("sprint", "create", "--planned", "T1", "--planned", "T2")
    assert planner("sprint", "show")["id"] == sprint["id"]

    planner("task", "create", "T3", "--description", "Docs", "--done-when", "read")
    refused = planner("task", "abandon", "T3", "--reason", "not needed", exit=4)
    assert error_of(refused, "invalid_transition", 4)["details"]["from"] == TaskStatus.DRAFT

    status = planner("status")
    assert status["counts"] == {TaskStatus.UNCLAIMED: 2, TaskStatus.DRAFT: 1}
    assert [t["key"] for t in status["tasks"][TaskStatus.UNCLAIMED]] == ["T1", "T2"]
    table = planner("status", as_json=False)
    assert "UNCLAIMED" in table and "T1, T2" in table
    assert Task.objects.get(project=world.project, key="T2").depends_on.count() == 1


def test_blocked_tasks_are_rescoped_or_abandoned(cli_server, world):
    world.blocked("T1")
    world.blocked("T2", coder="coder-2")
    planner = Liza(cli_server, world, "planner-1")

    abandoned = planner("task", "abandon", "T2", "--reason", "not needed")
    assert abandoned["task"]["status"] == TaskStatus.ABANDONED

    new = json.dumps([{"key": "T1a", "description": "Half", "done_when": "half done"}])
    created = planner("task", "rescope", "T1", "--reason", "too big", "--new-tasks", new)

    assert [t["key"] for t in created] == ["T1a"]
    assert world.task("T1").status == TaskStatus.SUPERSEDED


def test_a_coder_and_a_reviewer_take_a_task_to_merged(cli_server, world):
    world.unclaimed("T1")
    coder = Liza(cli_server, world, "coder-1")
    reviewer = Liza(cli_server, world, "code-reviewer-1")

    assert coder("work", exit=0)["work"] is True
    claimed = coder("claim", "T1", "--base-commit", "c0ffee01")
    assert claimed["task"]["status"] == TaskStatus.CLAIMED
    assert coder("heartbeat")["task"] == "T1"
    submitted = coder("submit", "T1", "--commit", "abc1234", "--tree-clean")
    assert submitted["task"]["status"] == TaskStatus.READY_FOR_REVIEW

    assert reviewer("review", "claim", "T1")["reviewer"] == "code-reviewer-1"
    reviewer("review", "extend", "T1")
    approved = reviewer("review", "verdict", "T1", "approved", "--commit", "abc1234")
    assert approved["task"]["status"] == TaskStatus.APPROVED
    merged = reviewer("merge", "T1", "--commit", "def5678")
    assert merged["task"]["status"] == TaskStatus.MERGED

    events = Event.objects.filter(project=world.project, task__key="T1")
    assert events.filter(action=Action.CLAIMED).count() == 1
    assert world.task("T1").merge_commit == "def5678"


def test_an_integration_failure_is_reported(cli_server, world):
    world.approved("T1")
    reviewer = Liza(cli_server, world, "code-reviewer-1")

    failed = reviewer("integration-failed", "T1", "--reason", "conflicts with main")

    assert failed["task"]["status"] == TaskStatus.INTEGRATION_FAILED


def test_claim_without_a_key_takes_the_next_task_or_says_wait(cli_server, world):
    coder = Liza(cli_server, world, "coder-1")
    assert coder("claim", exit=WAIT) == {"task": None}

    world.unclaimed("T1")
    assert coder("claim-next", "--base-commit", "c0ffee01")["task"]["key"] == "T1"


def test_a_coder_blocks_records_and_hands_off(cli_server, world):
    world.claimed("T1")
    world.claimed("T2", coder="coder-2")
    coder = Liza(cli_server, world, "coder-1")

    found = coder("discover", "--description", "flaky test", "--severity", "low", "--during", "T1")
    assert found["severity"] == "low"
    coder("anomaly", "--type", "spec_ambiguity", "--details", '{"note": "unclear"}', "--task", "T1")
    coder("log", "--action", "note", "--detail", "started", "--task", "T1")
    blocked = coder("block", "T1", "--reason", "spec silent", "--question", "Which format?")
    assert blocked["task"]["status"] == TaskStatus.BLOCKED

    other = Liza(cli_server, world, "coder-2")
    handoff = other("handoff", "T2", "--summary", "half done", "--next-action", "write tests")
    assert handoff["summary"] == "half done"
    assert other("pickup", "T2")["next_action"] == "write tests"

    assert Discovery.objects.filter(project=world.project).count() == 1
    assert world.project.anomalies.count() == 1
    assert Handoff.objects.filter(task__key="T2").exists()


def test_register_answers_the_agent_or_a_collision_exit_6(cli_server, world):
    new = agent_create(project=world.project, actor=world.admin, role="coder", now=timezone.now())
    fresh = Liza(cli_server, world, new.agent_id)
    live = Liza(cli_server, world, "coder-1")  # registered by the World, its lease alive

    registered = fresh("register", "--terminal", "tty1")
    assert registered["agent_id"] == new.agent_id
    error_of(live("register", exit=6), "collision", 6)


def test_register_says_its_generation_and_a_superseded_sessions_liza_exits_8(cli_server, world):
    """`liza register` says the session's generation; a `liza` of an older session
    (LIZA_GENERATION, as its supervisor set it) is refused `not_registered`, exit 8, its
    leave included, which no longer ends the live session; the live one's is served."""
    coder = Liza(cli_server, world, "coder-1")
    coder("leave")

    said = coder("register", as_json=False)

    assert said.split() == ["coder-1", "coder", "STARTING", "generation", "2"]
    stale, live = Liza(cli_server, world, "coder-1"), Liza(cli_server, world, "coder-1")
    stale.env["LIZA_GENERATION"], live.env["LIZA_GENERATION"] = "1", "2"
    for command in ("heartbeat", "leave"):
        error = error_of(stale(command, exit=8), "not_registered", 8)
        assert error["message"].startswith("session 1 of coder-1 was superseded by session 2")
    assert world.agent("coder-1").left_at is None
    assert live("heartbeat")["agent"]["generation"] == 2


def test_a_heartbeat_after_leave_exits_8_not_registered_until_it_registers_again(cli_server, world):
    coder = Liza(cli_server, world, "coder-1")
    coder("leave")

    error = error_of(coder("heartbeat", exit=8), "not_registered", 8)
    assert error["message"].startswith("coder-1 is not registered: it left at ")
    said = coder("heartbeat", exit=8, as_json=False)
    assert said.startswith("liza: not_registered: coder-1 is not registered: it left at ")
    assert said.rstrip().endswith("register again to start a new session")
    assert not world.agent("coder-1").has_live_lease(timezone.now())

    coder("register")
    assert coder("heartbeat")["agent"]["agent_id"] == "coder-1"
    assert world.agent("coder-1").has_live_lease(timezone.now())


def test_work_waits_on_an_open_goal_before_its_first_task_and_completes_with_it(cli_server, world):
    """A coder or reviewer asking before the planner wrote a task was told "complete" (10) and
    its supervisor stopped; under an open goal it waits (11) until the goal is COMPLETED."""
    coder = Liza(cli_server, world, "coder-1")
    reviewer = Liza(cli_server, world, "code-reviewer-1")
    planner = Liza(cli_server, world, "planner-1")
    goal = planner("goal", "create", "--description", "Ship the parser")

    for agent in (coder, reviewer):
        waiting = agent("work", exit=WAIT, as_json=False)
        assert f"goal {goal['id']} is IN_PROGRESS" in waiting and "Retry-After: " in waiting

    spec = ("--spec-ref", "specs/parser.md")
    planner("task", "create", "T1", "--description", "Lexer", "--done-when", "lexes", *spec)
    planner("task", "finalize", "T1")
    assert coder("work")["work"] is True

    task_cancel(task=world.task("T1"), actor=world.admin, reason="not needed", now=timezone.now())
    # Every task ended, the goal open: the planner's turn (plan more, or complete the goal).
    assert coder("work", exit=WAIT)["exit"] is None
    assert planner("work")["work"] is True
    assert planner("goal", "complete", "--reason", "T1 ended")["status"] == GoalStatus.COMPLETED

    for agent in (coder, reviewer, planner):
        assert agent("work", exit=ROLE_COMPLETE)["exit"] == 0


def test_work_says_complete_wait_work_or_stop(cli_server, world):
    coder = Liza(cli_server, world, "coder-1")
    planner = Liza(cli_server, world, "planner-1")

    assert coder("work", exit=ROLE_COMPLETE)["exit"] == 0  # nothing planned, nothing to come

    world.draft("T1")  # a DRAFT may be finalized soon: ask again later
    waiting = coder("work", exit=WAIT, as_json=False)
    assert "Retry-After: " in waiting

    task_finalize(task=world.task("T1"), actor=world.planner, now=timezone.now())
    assert coder("work", exit=0)["work"] is True

    project_pause(project=world.project, actor=world.admin, reason="lunch", now=timezone.now())
    assert planner("work", exit=42)["exit"] == 42
    assert coder("heartbeat", exit=42)["stop"] == "paused"


def test_a_lost_lease_exits_42_and_a_conflict_4(cli_server, world):
    world.claimed("T1", coder="coder-2")
    coder = Liza(cli_server, world, "coder-1")
    error_of(coder("claim", "T1", "--base-commit", "c0ffee01", exit=4), "conflict", 4)

    world.claimed("T2")
    task_release_claim(task=world.task("T2"), actor=world.admin, reason="stuck", now=timezone.now())
    body = coder("submit", "T2", "--commit", "abc1234", "--tree-clean", exit=42)
    error_of(body, "lease_lost", 42)


def test_not_found_exits_5_and_a_refusal_3(cli_server, world):
    coder = Liza(cli_server, world, "coder-1")

    error_of(coder("task", "show", "NOPE", exit=5), "not_found", 5)
    error_of(coder("goal", "create", "--description", "x", exit=3), "permission_denied", 3)


def test_a_wrong_key_is_refused_exit_3(cli_server, world):
    coder = Liza(cli_server, world, "coder-1")
    coder.env["LIZA_KEY"] = "liza_0000_wrong"

    error_of(coder("status", exit=3), "authentication_failed", 3)


# -- the console script, a process of its own -------------------------------------------------


def liza_process(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    script = shutil.which("liza", path=str(Path(sys.executable).parent))
    assert script, "the liza console script is installed with the project (pip install -e .)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    return subprocess.run(
        [script, *args], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def test_the_console_script_reads_a_private_key_file(cli_server, world, tmp_path):
    world.unclaimed("T1")
    key_file = tmp_path / "key"
    key_file.write_text(key_for(world.coder) + "\n")
    key_file.chmod(0o600)
    env = {"LIZA_URL": cli_server.url, "LIZA_PROJECT": world.project.slug}

    done = liza_process({**env, "LIZA_KEY_FILE": str(key_file)}, "--json", "status")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"] == {TaskStatus.UNCLAIMED: 1}

    key_file.chmod(0o644)
    refused = liza_process({**env, "LIZA_KEY_FILE": str(key_file)}, "status")
    assert refused.returncode == 2
    assert "world-readable" in refused.stderr and "chmod 600" in refused.stderr


def test_missing_configuration_is_a_usage_error_exit_2():
    done = liza_process({"LIZA_URL": "http://127.0.0.1:9"}, "status")

    assert done.returncode == 2
    assert "LIZA_PROJECT" in done.stderr and "LIZA_KEY" in done.stderr


def test_no_server_exits_7():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        "LIZA_URL": f"http://127.0.0.1:{port}",
        "LIZA_PROJECT": "p",
        "LIZA_KEY": "k",
        "LIZA_RETRIES": "1",
    }

    done = liza_process(env, "--json", "heartbeat")

    assert done.returncode == 7, done.stderr
    error_of(json.loads(done.stdout), "unreachable", 7)


class _Redirecting:
    """A real HTTP server that answers every request 301 to https, as a TLS proxy does."""

    def __enter__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def _redirect(self):
                self.send_response(301)
                self.send_header("Location", f"https://board.example{self.path}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("args", [("--json", "heartbeat"), ("status",)])
def test_a_redirect_is_refused_with_its_location_exit_7(args):
    """Issue #27: a proxy's http → https redirect was a traceback and exit 1. The client follows
    no redirect (its key would go elsewhere); it names the Location and exits 7."""
    with _Redirecting() as proxy:
        env = {"LIZA_URL": proxy.url, "LIZA_PROJECT": "p", "LIZA_KEY": "k", "LIZA_RETRIES": "0"}
        done = liza_process(env, *args)

    assert done.returncode == 7, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    where = "https://board.example/api/v1/projects/p"
    if args[0] == "--json":
        error = error_of(json.loads(done.stdout), "redirected", 7)
        assert error["details"]["location"].startswith(where)
    else:
        assert "liza: redirected: the server answered 301 redirecting to " + where in done.stderr


def test_help_documents_every_exit_code():
    done = liza_process({}, "--help")

    assert done.returncode == 0
    for code in ("0", "2", "3", "4", "5", "6", "7", str(ROLE_COMPLETE), str(WAIT), "14", "42"):
        assert f"\n    {code} " in done.stdout, code


def test_the_sprints_human_decisions_reach_the_server_and_are_refused_to_agents(cli_server, world):
    world.unclaimed("T1")
    planner = Liza(cli_server, world, "planner-1")
    planner("goal", "create", "--description", "A goal")
    planner("sprint", "create", "--planned", "T1")

    for args in (
        ("sprint", "checkpoint", "--reason", "look"),
        ("sprint", "continue", "--decision", "go on"),
        ("sprint", "abort", "--reason", "stop"),
    ):
        error_of(planner(*args, exit=3), "permission_denied", 3)


def test_a_write_retried_with_its_key_is_applied_once_on_the_server(cli_server, world):
    with Client(cli_server.url, world.project.slug, key_for(world.coder)) as client:
        body = {"description": "one finding", "severity": "low"}
        first = client.request("POST", "discoveries", json=body, idempotency_key="retry-1")
        again = client.request("POST", "discoveries", json=body, idempotency_key="retry-1")

    assert (first.status, again.status) == (201, 201)
    assert again.body == first.body
    assert again.headers.get("idempotent-replayed") == "true"
    assert Discovery.objects.filter(project=world.project).count() == 1


def test_the_planner_answers_a_blocked_task_and_completes_the_goal(cli_server, world):
    planner = Liza(cli_server, world, "planner-1")
    planner("goal", "create", "--description", "Ship the parser")
    world.blocked("T1")

    released = planner("task", "release", "T1", "--reason", "Use JSON")
    assert released["task"]["status"] == TaskStatus.UNCLAIMED
    assert planner("status", "--status", "UNCLAIMED")["counts"] == {TaskStatus.UNCLAIMED: 1}
    assert planner("status", "--status", "BLOCKED")["counts"] == {}


def test_the_planner_completes_a_goal_once(cli_server, world):
    planner = Liza(cli_server, world, "planner-1")
    planner("goal", "create", "--description", "Ship the parser")

    assert planner("goal", "complete", "--reason", "nothing left")["status"] == GoalStatus.COMPLETED
    again = planner("goal", "complete", "--reason", "again", exit=4)
    error_of(again, "invalid_transition", 4)


def test_submit_from_the_repository_uploads_what_the_commit_changed(
    cli_server, world, tmp_path, monkeypatch
):
    """Issue 25: run in the task's repository, `liza submit` sends the change summary from the
    task's base commit to the review commit; the drawer shows it."""
    from boards.coordination.models.tasks import ChangeSummary
    from tests.agents.client.gitrepo import git, new_repo

    repo = new_repo(tmp_path / "repo", {"app.py": "one\n"}, email="a@example.com", name="A")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text("one\ntwo\n")
    git(repo, "commit", "-qam", "two")
    head = git(repo, "rev-parse", "HEAD")
    world.unclaimed("T1")
    coder = Liza(cli_server, world, "coder-1")
    coder("claim", "T1", "--base-commit", base)
    monkeypatch.chdir(repo)

    assert coder("submit", "T1", "--commit", head, "--tree-clean")["task"]["status"] == (
        TaskStatus.READY_FOR_REVIEW
    )
    [summary] = ChangeSummary.objects.filter(task=world.task("T1"))
    assert summary.files == [{"path": "app.py", "added": 1, "deleted": 0}]
    assert "+two" in summary.diff and summary.review_commit == head


def test_submit_reports_the_pull_request_and_a_bad_one_is_refused(cli_server, world):
    """Issue 25: `liza submit --pr-url` sends the pull request's address; one that is not
    http(s) is a validation error (refused, exit 3) and the task does not move."""
    world.unclaimed("T1")
    coder = Liza(cli_server, world, "coder-1")
    coder("claim", "T1", "--base-commit", "c0ffee01")
    bad = coder("submit", "T1", "--commit", "abc1234", "--tree-clean", "--pr-url",
                "javascript:alert(1)", exit=3)  # fmt: skip
    error_of(bad, "validation_error", 3)
    assert world.task("T1").status == TaskStatus.CLAIMED
    pr = "https://github.com/acme/shop/pull/7"
    submitted = coder("submit", "T1", "--commit", "abc1234", "--tree-clean", "--pr-url", pr)
    assert submitted["task"]["pr_url"] == pr


def test_usage_reports_running_totals_of_the_running_run(cli_server, world):
    """Issue 24: `liza usage` reports the session's totals so far to its running run; again is
    counted once; with no running run it is a conflict (exit 4); a negative count a usage
    error (exit 2, never sent)."""
    from decimal import Decimal

    from agents.models import RunUsage
    from agents.services import run_start

    liza = Liza(cli_server, world, "coder-1")
    error_of(liza("usage", "--model", "opus", "--input-tokens", "5", exit=4), "conflict", 4)
    run = run_start(project=world.project, agent=world.coder, now=timezone.now())
    args = ("usage", "--model", "opus", "--input-tokens", "1200", "--cost-usd", "0.4")
    for _ in range(2):
        body = liza(*args)
    assert body[0]["run"] == run.pk and body[0]["tokens"] == 1200
    row = RunUsage.objects.get(run=run)
    assert (row.input_tokens, row.cost_usd) == (1200, Decimal("0.4"))
    liza("usage", "--input-tokens", "-1", exit=2, as_json=False)
