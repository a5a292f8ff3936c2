"""A goal from plan to completion, driven through the HTTP API only (SPEC §6).

A human admin creates the agents over the API (each gets its key once); the planner, three
coders and two reviewers then play the whole protocol with their bearer keys through the routes
of boards/api/urls.py, and `manage.py liza_validate` must say VALID after every step; the
refusals met on the way (collision, wrong commit, missing reason, cycles) are asserted where
they happen. The edges that make agents exit and bad input are proven beside the module that
answers them (split from test_lifecycle.py, issue #22 item 3): test_heartbeats_lease_lost.py,
test_work_stop.py, test_tasks_role_complete_dependencies.py, tests/operations/test_inputs.py,
test_parsers_malformed.py, test_views_queries.py, test_base.py, tests/site/test_urls.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from tests.api.helpers import (
    api_base,
    assert_envelope,
    assert_field_error,
    assert_valid,
    bearer,
    session_client,
)
from tests.factories import ProjectFactory, member

pytestmark = pytest.mark.django_db


class Team:
    """The project's agents, each with the key the admin was shown when creating it."""

    def __init__(self, project: Project, admin) -> None:
        self.project = project
        self.slug = project.slug
        self.base = api_base(project.slug)
        self.admin = session_client(admin)
        self.clients: dict[str, APIClient] = {}
        self.validating = False
        self.steps = 0

    def hire(self, role: str) -> str:
        response = self.admin.post(f"{self.base}/agents", {"role": role}, format="json")
        assert response.status_code == 201, response.json()
        body = response.json()
        self.clients[body["agent"]["agent_id"]] = bearer(body["key"]["key"])
        return body["agent"]["agent_id"]

    def call(self, who: str, method: str, path: str, body: Any = None, *, status: int = 200):
        response = getattr(self.clients[who], method)(f"{self.base}/{path}", body, format="json")
        assert response.status_code == status, (who, method, path, response.json())
        if self.validating:
            self.steps += 1
            assert_valid(self.slug, f"{who} {method.upper()} {path} → {response.status_code}")
        return response

    def post(self, who: str, path: str, body: Any = None, *, status: int = 200) -> Any:
        return self.call(who, "post", path, body, status=status).json()

    def get(self, who: str, path: str) -> Any:
        return self.call(who, "get", path).json()

    def task(self, who: str, key: str) -> dict[str, Any]:
        return self.get(who, f"tasks/{key}")

    def claim_next(self, coder: str) -> dict[str, Any] | None:
        return self.post(coder, "tasks/claim-next", {"base_commit": "int0001"})["task"]

    def review_round(self, key: str, reviewer: str, commit: str) -> dict[str, Any]:
        """Claim the review, approve at `commit`, report the merge."""
        review = self.post(reviewer, f"tasks/{key}/review/claim", status=201)
        assert (review["task"], review["reviewer"], review["review_commit"]) == (
            key,
            reviewer,
            commit,
        )
        verdict = {"verdict": "APPROVED", "review_commit": commit, "reason": "Meets done_when"}
        approved = self.post(reviewer, f"tasks/{key}/verdict", verdict)["task"]
        assert approved["status"] == "APPROVED"
        assert approved["approved_by"] == [reviewer]
        return self.post(reviewer, f"tasks/{key}/merge", {"merge_commit": f"merge-{key}"})["task"]


def new_task(key: str, priority: int, **fields: Any) -> dict[str, Any]:
    return {
        "key": key,
        "description": f"Implement {key}",
        "priority": priority,
        "spec_ref": f"specs/retry.md#{key}",
        "done_when": f"{key} retries 5xx three times",
        **fields,
    }


def test_a_goal_from_plan_to_completion_over_http():
    project = ProjectFactory()
    team = Team(project, member(project, "admin"))
    ids = [
        team.hire(role)
        for role in ("planner", "coder", "coder", "coder", "code_reviewer", "code_reviewer")
    ]
    assert ids == [
        "planner-1",
        "coder-1",
        "coder-2",
        "coder-3",
        "code-reviewer-1",
        "code-reviewer-2",
    ]

    # -- the planner registers and sets the goal; from here on every step must validate
    assert team.post("planner-1", "agents/register", {"terminal": "/dev/pts/1"})["status"] == (
        "STARTING"
    )
    goal = team.post(
        "planner-1",
        "goal",
        {"description": "Retry logic for every API call", "spec_ref": "specs/retry.md"},
        status=201,
    )
    assert goal["status"] == "IN_PROGRESS"
    assert [e["event"] for e in goal["alignment_history"]] == ["initialization"]
    team.validating = True
    assert_valid(team.slug, "the goal")

    # -- everyone registers and heartbeats: STARTING → IDLE, nobody told to stop
    for agent_id in ids:
        if agent_id != "planner-1":
            agent = team.post(agent_id, "agents/register", {})
            assert agent["agent_id"] == agent_id and agent["status"] == "STARTING"
        beat = team.post(agent_id, "agents/heartbeat", {"context_percent": 5})
        assert beat["agent"]["status"] == "IDLE"
        assert (beat["stop"], beat["exit"], beat["task"]) == (None, None, None)

    # -- a second process with a live id is a collision: it must exit (seed 000 identity)
    before = Agent.objects.get(project=project, agent_id="coder-1").registered_at
    error = assert_envelope(
        team.call("coder-1", "post", "agents/register", {}, status=409), 409, "collision"
    )
    assert error["details"]["agent_id"] == "coder-1"
    assert Agent.objects.get(project=project, agent_id="coder-1").registered_at == before

    # -- the planner drafts four tasks; one depends on another
    team.post("planner-1", "tasks", new_task("t-api", 2), status=201)
    team.post("planner-1", "tasks", new_task("t-client", 1, depends_on=["t-api"]), status=201)
    team.post("planner-1", "tasks", new_task("t-docs", 3), status=201)
    drafted = team.post("planner-1", "tasks", new_task("t-ui", 1), status=201)["task"]
    assert drafted["status"] == "DRAFT" and drafted["assigned_to"] == ""
    assert team.task("planner-1", "t-client")["depends_on"] == ["t-api"]

    # A dependency closing a loop is refused, naming depends_on, and nothing changes.
    cycle = team.call(
        "planner-1", "put", "tasks/t-api/dependencies", {"depends_on": ["t-client"]}, status=400
    )
    assert "cycle" in assert_field_error(cycle, "depends_on")["message"]
    assert team.task("planner-1", "t-api")["depends_on"] == []

    sprint = team.post(
        "planner-1",
        "sprint",
        {"planned": ["t-api", "t-client", "t-docs", "t-ui"]},
        status=201,
    )
    assert sprint["status"] == "IN_PROGRESS"
    assert sorted(sprint["planned"]) == ["t-api", "t-client", "t-docs", "t-ui"]

    # -- coders find only DRAFTs: not done (no exit 0), ask again after coder_poll_interval
    ProjectConfig.objects.filter(project=project).update(coder_poll_interval=17)
    for agent_id, role in (("coder-1", "coder"), ("code-reviewer-1", "code_reviewer")):
        response = team.call(agent_id, "get", "work")
        work = response.json()
        assert (work["role"], work["work"], work["exit"]) == (role, False, None)
        assert (work["waiting_for_drafts"], work["retry_after"]) == (4, 17)
        assert response["Retry-After"] == "17"
    assert team.claim_next("coder-3") is None  # no work: 200 with a null task

    for key in ("t-api", "t-client", "t-docs", "t-ui"):
        assert team.post("planner-1", f"tasks/{key}/finalize")["task"]["status"] == "UNCLAIMED"
    response = team.call("coder-1", "get", "work")
    assert (response.json()["work"], response.json()["exit"]) == (True, None)
    assert "Retry-After" not in response

    # -- claims follow dependencies, then priority: t-client (p1) waits on t-api (p2)
    ui = team.claim_next("coder-1")
    assert (ui["key"], ui["status"], ui["assigned_to"], ui["iteration"]) == (
        "t-ui",
        "CLAIMED",
        "coder-1",
        1,
    )
    assert ui["base_commit"] == "int0001" and ui["lease_expires"]
    assert team.claim_next("coder-2")["key"] == "t-api"
    assert team.claim_next("coder-3")["key"] == "t-docs"
    client_task = team.task("planner-1", "t-client")
    assert (client_task["status"], client_task["waiting_on"]) == ("UNCLAIMED", ["t-api"])

    # Heartbeats extend the task lease the coder holds.
    beat = team.post("coder-1", "agents/heartbeat", {})
    assert beat["task"] == "t-ui" and beat["agent"]["status"] == "WORKING"
    assert beat["task_lease_expires"] >= ui["lease_expires"]

    # -- coder-3 is blocked; the planner rescopes t-docs into two tasks
    blocked = team.post(
        "coder-3",
        "tasks/t-docs/block",
        {
            "reason": "Two audiences, one task",
            "questions": ["Is the guide a separate deliverable?"],
            "attempted": ["Wrote the API reference half"],
        },
    )["task"]
    assert (blocked["status"], blocked["failed_by"]) == ("BLOCKED", ["coder-3"])
    assert team.get("planner-1", "work")["work"] is True
    created = team.post(
        "planner-1",
        "tasks/t-docs/rescope",
        {
            "reason": "Split by audience",
            "new_tasks": [
                {"key": "t-docs-api", "description": "API reference", "done_when": "documented"},
                {
                    "key": "t-docs-guide",
                    "description": "User guide",
                    "done_when": "guide written",
                    "depends_on": ["t-docs-api"],
                },
            ],
        },
        status=201,
    )
    assert [(t["key"], t["status"], t["supersedes"]) for t in created] == [
        ("t-docs-api", "UNCLAIMED", "t-docs"),
        ("t-docs-guide", "UNCLAIMED", "t-docs"),
    ]
    docs = team.task("planner-1", "t-docs")
    assert docs["status"] == "SUPERSEDED"
    assert docs["superseded_by"] == ["t-docs-api", "t-docs-guide"]
    assert docs["rescope_reason"] == "Split by audience"
    history = team.get("planner-1", "goal")["alignment_history"]
    assert history[-1]["event"] == "rescope_t-docs"
    assert "t-docs-api" in history[-1]["summary"]
    assert {"t-docs-api", "t-docs-guide"} <= set(team.get("planner-1", "sprint")["planned"])

    # -- t-api: review, a wrong verdict or two, rejection
    submitted = team.post(
        "coder-2", "tasks/t-api/request-review", {"review_commit": "a1a1a1a1", "tree_clean": True}
    )["task"]
    assert (submitted["status"], submitted["lease_expires"]) == ("READY_FOR_REVIEW", None)
    assert team.get("code-reviewer-1", "work")["work"] is True
    team.post("code-reviewer-1", "tasks/t-api/review/claim", status=201)
    assert team.task("code-reviewer-2", "t-api")["reviewing_by"] == ["code-reviewer-1"]
    taken = team.call("code-reviewer-2", "post", "tasks/t-api/review/claim", status=409)
    assert assert_envelope(taken, 409, "conflict")["details"]["reviewing_by"] == ["code-reviewer-1"]
    beat = team.post("code-reviewer-1", "agents/heartbeat", {})
    assert list(beat["review_leases"]) == ["t-api"]

    wrong_commit = team.call(
        "code-reviewer-1",
        "post",
        "tasks/t-api/verdict",
        {"verdict": "APPROVED", "review_commit": "ffffffff"},
        status=409,
    )
    details = assert_envelope(wrong_commit, 409, "conflict")["details"]
    assert (details["expected"], details["got"]) == ("a1a1a1a1", "ffffffff")
    no_reason = team.call(
        "code-reviewer-1",
        "post",
        "tasks/t-api/verdict",
        {"verdict": "REJECTED", "review_commit": "a1a1a1a1"},
        status=400,
    )
    assert_field_error(no_reason, "reason")
    assert team.task("planner-1", "t-api")["status"] == "READY_FOR_REVIEW"

    rejected = team.post(
        "code-reviewer-1",
        "tasks/t-api/verdict",
        {"verdict": "REJECTED", "review_commit": "a1a1a1a1", "reason": "POST is not idempotent"},
    )["task"]
    assert rejected["status"] == "REJECTED"
    assert rejected["rejection_reason"] == "POST is not idempotent"
    assert (rejected["review_cycles_current"], rejected["review_cycles_total"]) == (1, 1)
    assert rejected["reviewing_by"] == []

    # -- its coder re-claims it first, although t-docs-api is free: iteration 2, same worktree
    assert team.get("coder-2", "work")["work"] is True
    again = team.claim_next("coder-2")
    assert (again["key"], again["status"], again["iteration"]) == ("t-api", "CLAIMED", 2)
    assert (again["review_cycles_current"], again["review_cycles_total"]) == (1, 1)
    assert again["worktree"] == submitted["worktree"] != ""
    assert team.claim_next("coder-3")["key"] == "t-docs-api"  # t-docs-guide waits on it

    team.post(
        "coder-2", "tasks/t-api/request-review", {"review_commit": "b2b2b2b2", "tree_clean": True}
    )
    merged = team.review_round("t-api", "code-reviewer-1", "b2b2b2b2")
    assert (merged["status"], merged["merge_commit"], merged["worktree"]) == (
        "MERGED",
        "merge-t-api",
        "",
    )

    # -- t-ui, then t-client (its dependency is merged now)
    team.post(
        "coder-1", "tasks/t-ui/request-review", {"review_commit": "c3c3c3c3", "tree_clean": True}
    )
    team.review_round("t-ui", "code-reviewer-2", "c3c3c3c3")
    assert team.claim_next("coder-1")["key"] == "t-client"

    team.post(
        "coder-3",
        "tasks/t-docs-api/request-review",
        {"review_commit": "d4d4d4d4", "tree_clean": True},
    )
    team.review_round("t-docs-api", "code-reviewer-2", "d4d4d4d4")
    assert team.claim_next("coder-3")["key"] == "t-docs-guide"

    team.post(
        "coder-1",
        "tasks/t-client/request-review",
        {"review_commit": "e5e5e5e5", "tree_clean": True},
    )
    team.review_round("t-client", "code-reviewer-1", "e5e5e5e5")

    # -- the last planned task merges: the sprint completes by itself
    team.post(
        "coder-3",
        "tasks/t-docs-guide/request-review",
        {"review_commit": "f6f6f6f6", "tree_clean": True},
    )
    assert team.get("planner-1", "sprint")["status"] == "IN_PROGRESS"
    team.review_round("t-docs-guide", "code-reviewer-2", "f6f6f6f6")
    sprint = team.get("planner-1", "sprint")
    assert sprint["status"] == "COMPLETED" and sprint["ended"]
    assert sprint["metrics"]["review_verdict_rejections"] == 1
    assert sprint["metrics"]["review_verdict_approvals"] == 5
    assert Event.objects.filter(
        project=project, action="sprint_completed", actor_kind="system"
    ).exists()

    # -- every task ended, the goal still open: the planner's turn (a next sprint, or the goal
    # complete); coders and reviewers wait for its decision, then every role is done
    for agent_id in ("coder-1", "coder-2", "code-reviewer-1"):
        work = team.get(agent_id, "work")
        assert (work["work"], work["exit"]) == (False, None), agent_id
        assert "IN_PROGRESS" in work["reason"] and work["retry_after"], agent_id
    planner_work = team.get("planner-1", "work")
    assert (planner_work["work"], planner_work["exit"]) == (True, None)  # the goal is open
    done = team.post("planner-1", "goal/complete", {"reason": "Every endpoint retries"})
    assert done["status"] == "COMPLETED"
    assert done["alignment_history"][-1]["event"] == "goal_completed"
    for agent_id in ("planner-1", "coder-1", "coder-2", "code-reviewer-1"):
        work = team.get(agent_id, "work")
        assert (work["work"], work["exit"], work["retry_after"]) == (False, 0, None), agent_id

    statuses = dict(Task.objects.filter(project=project).values_list("key", "status"))
    assert statuses == {
        "t-api": "MERGED",
        "t-client": "MERGED",
        "t-ui": "MERGED",
        "t-docs": "SUPERSEDED",
        "t-docs-api": "MERGED",
        "t-docs-guide": "MERGED",
    }
    # The task's history is its events, refusals included (SPEC §4.1).
    actions = [e["action"] for e in team.get("planner-1", "events?task=t-api&limit=1000")]
    for action in (
        "created",
        "finalized",
        "claimed",
        "ready_for_review",
        "review_claimed",
        "claim_review_failed",
        "verdict_failed",
        "rejected",
        "approved",
        "merged",
    ):
        assert action in actions, action
    assert actions.index("rejected") < actions.index("approved") < actions.index("merged")
    assert team.steps > 60
