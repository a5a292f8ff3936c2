"""Tenant and role matrix over every endpoint of boards/api/urls.py (SPEC §3, §11; STYLE.md Tests).

One table row per (URL name, method): how to put the project in a state where the call makes
sense, the body and what success changes. Who may make it is not restated (issue 22 §3): the
agent roles come from the operation's contract entry (agents.client.contract, `roles`, matched
by URL name and method), the people from where the product declares them (`people_of`): an
operation's service (`authority.people`, which its `require_role` enforces), a read view's
`readers` (none: every member role, as the tenancy rule admits), or the service a composite
view runs. Every principal is then asked:

- anonymous, a revoked key, an unknown key → 401 with the error envelope;
- an agent of another project (with the same agent id and role) and a logged-in user without a
  membership → 404, the very answer for a project or object that does not exist;
- an agent of this project of every role the contract does not give the call → 403
  (override-block: 409, see its row);
- viewer / member / planner (a member with the planner right) / admin → success when the
  declaration admits them, else 403;
- the agent with the right role → success, with the effect checked and the state still VALID.

A refused write must leave every row of the project as it was. A guard test keeps the table in
step with the URL patterns and the contract, so a new endpoint cannot be left out of the matrix;
another holds the declarations themselves to SPEC §3, since every row now follows them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import URLPattern
from django.utils import timezone
from rest_framework.test import APIClient

from agents import services as agent_services
from agents.client.contract import CODER, CONTRACT, PLANNER, REVIEWER, ROLES
from agents.client.contract import Endpoint as ContractEntry
from agents.models import Agent, AgentKey, Budget, Run, RunUsage
from agents.services import (
    agent_create,
    agent_handoff,
    agent_key_issue,
    agent_key_revoke,
    agent_set_enabled,
)
from boards.api import urls as api_urls
from boards.coordination.models.projects import Goal, Membership, Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, Anomaly, CircuitBreaker, Event
from boards.coordination.models.tasks import Discovery, HumanNote, Review, Task
from boards.coordination.selectors.access import PLAN, role_allows
from boards.coordination.services import projects, tasks
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.budgets import budget_set
from boards.coordination.services.goals import goal_abort, goal_create
from boards.coordination.services.projects import membership_set
from boards.coordination.services.records import discovery_create
from boards.coordination.services.sprints import sprint_checkpoint, sprint_create
from boards.operations import operation
from boards.watch.models import NotificationPreference
from boards.watch.services.watch import watch_sweep
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    assert_valid,
    bearer,
    csrf_pair,
    domain_snapshot,
    http_start,
    key_for,
    session_client,
)
from tests.factories import T0, ProjectFactory, UserFactory, member, register
from tests.lifecycle import World
from tests.watch.breaker_fixtures import trip

pytestmark = pytest.mark.django_db

HUMANS = ("viewer", "member", "planner", "admin")
# Each person's membership role; the planner is a member given the planner right (issue 25).
ROLE_OF = {"viewer": "viewer", "member": "member", "planner": "member", "admin": "admin"}
CONTRACT_BY_ROUTE = {(e.route, e.method): e for e in CONTRACT}
PRINCIPALS = (
    "anonymous",
    "revoked_key",
    "unknown_key",
    "foreign_agent",
    "outsider",
    "wrong_role",
    *HUMANS,
    "right_agent",
)
# Well-formed (liza_<12 hex>_<secret>) but issued by nobody.
UNKNOWN_KEY = "liza_0123456789ab_" + "x" * 43
MISSING = {
    "key": "no-such-task",
    "agent_id": "coder-99",
    "prefix": "000000000000",
    "disc_id": "disc-999",
    "alert_id": "999999999",
    "run_id": "999999999",
}


class Tenant:
    """The project under test, its people and agents, and a second project next door."""

    def __init__(self) -> None:
        self.world = World(now=http_start())
        self.project = self.world.project
        self.slug = self.project.slug
        goal_create(
            project=self.project,
            actor=self.world.planner,
            description="Retry logic for every API call",
            now=self.world.tick(),
        )
        self.users = {
            "viewer": member(self.project, "viewer"),
            "member": member(self.project, "member"),
            "planner": UserFactory(),
            "admin": self.world.admin,
        }
        # A member given the planner right (issue 25): planning is theirs too.
        membership_set(
            project=self.project, user=self.users["planner"], role="member", can_plan=True,
            actor=SYSTEM, now=T0,
        )  # fmt: skip
        self.outsider = UserFactory()
        self.foreign = ProjectFactory()
        # The outsider is an admin next door: being admin of B must not open A.
        membership_set(project=self.foreign, user=self.outsider, role="admin", actor=SYSTEM, now=T0)

    def agent(self, agent_id: str) -> Agent:
        return self.world.agent(agent_id)

    def foreign_agent(self, agent_id: str) -> Agent:
        existing = Agent.objects.filter(project=self.foreign, agent_id=agent_id).first()
        return existing or register(self.foreign, agent_id, now=self.world.now)


# -- the table -----------------------------------------------------------------------------------

Setup = Callable[[Tenant], dict[str, str]]
Check = Callable[[Tenant, dict[str, str], Any], None]


# The agent asked for each role: the first of its kind in the World (tests/lifecycle.py).
AGENT_OF = {PLANNER: "planner-1", CODER: "coder-1", REVIEWER: "code-reviewer-1"}


def role_of(agent_id: str) -> str:
    """The role of a World agent, by its id (code-reviewer-2 is a code_reviewer)."""
    return next(role for role, first in AGENT_OF.items() if agent_id[:-1] == first[:-1])


# The composite writes a view makes itself (boards/api/views.py), by contract name: they are for
# the people their services are declared for.
VIEW_SERVICES: dict[str, Callable[..., Any]] = {
    "agents_create": agent_services.agent_create_with_key,
    "agents_register": agent_services.agent_register,
    "agents_heartbeat": agent_services.agent_heartbeat,
}


def _handler(entry: ContractEntry) -> Callable[..., Any]:
    """What answers `entry`: its view's handler, else its declared operation's service."""
    view = api_urls.VIEWS.get(entry.name)
    if view is None:
        return operation(entry.name).service
    if entry.method == "GET":
        return view.get
    return VIEW_SERVICES[entry.name]


def people_of(entry: ContractEntry) -> str | None:
    """Which people the product declares `entry` for: a declared operation's role (its
    service's `authority.people`, enforced by its `require_role`), a read's `readers` (without
    them: every member role, whom the tenancy rule admits), a composite write's service's
    `people`. A membership role (and those above), `PLAN`, or None (agents only)."""
    if api_urls.VIEWS.get(entry.name) is None:
        return operation(entry.name).role
    handler = _handler(entry)
    if entry.method == "GET":
        return getattr(handler, "readers", Membership.Role.VIEWER)
    return handler.people


@dataclass(frozen=True)
class Endpoint:
    """One row: the setup, the body and the effect. Which agent roles may call comes from the
    contract's entry (`agents.client.contract`, matched by URL name and method), which people
    from the product's declaration (`people_of`)."""

    name: str  # URL pattern name in boards.api.urls
    method: str
    path: str  # below /api/v1/projects/<slug>/, with {key}, {agent_id} or {prefix}
    setup: Setup
    body: dict[str, Any] | Callable[[], dict[str, Any]] | None = None
    query: str = ""
    ok: int = 200
    wrong_status: int = 403
    wrong_code: str = "permission_denied"
    check: Check | None = field(default=None, repr=False)
    # The agent (by id) that calls when the setup needs that very one (coder-2 claims what
    # coder-1 failed), or when the contract offers the call to no agent's tools but the
    # supervisor makes it (runs, usage, registration, review claim-next).
    agent: str | None = None
    # An agent refused for what the contract cannot state: not its run, or a supervisor's call
    # open to one role only (review claim-next).
    refused: str | None = None

    @property
    def contract(self) -> ContractEntry:
        return CONTRACT_BY_ROUTE[self.name, self.method]

    @property
    def people(self) -> str | None:
        """The people the product declares the call for (`people_of`)."""
        return people_of(self.contract)

    @property
    def humans(self) -> frozenset[str]:
        """The matrix's people the declaration admits: a membership role and those above it;
        the planner right (`PLAN`): the admin and the member holding it; an agents' call: none."""
        if self.people is None:
            return frozenset()
        if self.people == PLAN:
            return frozenset({"planner", "admin"})
        return frozenset(h for h in HUMANS if role_allows(ROLE_OF[h], self.people))

    @property
    def is_read(self) -> bool:
        """Open to every principal of the project: a GET whose view names no `readers` (the
        inbox, an agent's keys and one's notifications do: those are for people only)."""
        return self.method == "GET" and not hasattr(_handler(self.contract), "readers")

    @property
    def right(self) -> str | None:
        """The agent that may make the call: of a role the contract offers it to."""
        roles = self.contract.roles
        if self.agent is not None:
            return self.agent
        if self.is_read:
            return AGENT_OF[CODER]
        return next((AGENT_OF[r] for r in ROLES if r in roles), None)

    @property
    def wrong(self) -> list[str]:
        """An agent of every role the contract does not offer the call to (none for reads, open
        to every agent; the supervisor's calls, which no tool offers, are checked by `refused`)."""
        if self.is_read:
            return []
        if self.agent is not None and not self.contract.roles:
            return [self.refused] if self.refused else []
        return [AGENT_OF[r] for r in ROLES if r not in self.contract.roles]

    @property
    def id(self) -> str:
        return f"{self.method} {self.name}"

    def url(self, slug: str, values: dict[str, str]) -> str:
        return f"{api_base(slug)}/{self.path.format(**values)}{self.query}"

    def expected(self, principal: str) -> tuple[int, str | None]:
        """(status, error code or None for success) for `principal`."""
        if principal == "anonymous":
            return 401, "not_authenticated"
        if principal in ("revoked_key", "unknown_key"):
            return 401, "authentication_failed"
        if principal in ("foreign_agent", "outsider"):
            return 404, "not_found"
        if principal.startswith("wrong_role"):
            return (self.wrong_status, self.wrong_code)
        if principal in HUMANS:
            return (self.ok, None) if principal in self.humans else (403, "permission_denied")
        return self.ok, None

    def principals(self) -> list[str]:
        """Every principal, the wrong role once an agent (`wrong_role:coder-1`)."""
        wrong = [f"wrong_role:{agent_id}" for agent_id in self.wrong]
        people = [p for p in PRINCIPALS if p not in ("wrong_role", "right_agent")]
        return people + wrong + (["right_agent"] if self.right else [])

    def client(self, t: Tenant, principal: str) -> APIClient:
        agent_id = self.right or (self.wrong or ["coder-1"])[0]
        if principal == "anonymous":
            return APIClient()
        if principal == "revoked_key":
            plain = key_for(t.agent(agent_id))
            key = AgentKey.objects.get(prefix=plain.split("_")[1])
            agent_key_revoke(actor=SYSTEM, key=key, now=t.world.now)
            return bearer(plain)
        if principal == "unknown_key":
            return bearer(UNKNOWN_KEY)
        if principal == "foreign_agent":
            return agent_client(t.foreign_agent(agent_id))
        if principal == "outsider":
            return session_client(t.outsider)
        if principal.startswith("wrong_role:"):
            return agent_client(t.agent(principal.split(":", 1)[1]))
        if principal.startswith("agent:"):
            return agent_client(t.agent(principal.split(":", 1)[1]))
        if principal in HUMANS:
            return session_client(t.users[principal])
        assert self.right is not None, self.id
        return agent_client(t.agent(self.right))

    def call(self, client: APIClient, url: str):
        body = self.body() if callable(self.body) else self.body  # a body that needs the time
        return getattr(client, self.method.lower())(url, body, format="json")


# setups: the project state each call needs, through the real services (tests/lifecycle.py)


def nothing(t: Tenant) -> dict[str, str]:
    return {}


def task_in(status: str, **fields: Any) -> Setup:
    def setup(t: Tenant) -> dict[str, str]:
        t.world.drive_to(status, "t1", **fields)
        return {"key": "t1"}

    return setup


def two_drafts(t: Tenant) -> dict[str, str]:
    t.world.draft("t0")
    t.world.draft("t1")
    return {"key": "t1"}


def handed_off(t: Tenant) -> dict[str, str]:
    t.world.claimed("t1")
    agent_handoff(
        agent=t.agent("coder-1"),
        task=t.world.task("t1"),
        now=t.world.tick(),
        summary="Half the decorator",
        next_action="Finish the decorator",
    )
    return {"key": "t1"}


def no_goal(t: Tenant) -> dict[str, str]:
    goal = Goal.objects.get(project=t.project, status="IN_PROGRESS")
    goal_abort(goal=goal, actor=t.world.admin, reason="Start over", now=t.world.tick())
    return {}


def sprint_open(t: Tenant) -> dict[str, str]:
    t.world.unclaimed("t1")
    sprint_create(
        project=t.project,
        actor=t.world.planner,
        goal=Goal.objects.get(project=t.project, status="IN_PROGRESS"),
        planned=["t1"],
        now=t.world.tick(),
    )
    return {}


def sprint_with_nothing_planned(t: Tenant) -> dict[str, str]:
    """A sprint that may close at once: every planned task (of none) has ended."""
    sprint_create(
        project=t.project,
        actor=t.world.planner,
        goal=Goal.objects.get(project=t.project, status="IN_PROGRESS"),
        planned=[],
        now=t.world.tick(),
    )
    return {}


def unregistered_coder(t: Tenant) -> dict[str, str]:
    agent_create(project=t.project, actor=t.world.admin, role="coder", now=t.world.tick())
    return {"agent_id": "coder-4"}


def agent_coder_1(t: Tenant) -> dict[str, str]:
    agent_key_issue(actor=SYSTEM, agent=t.agent("coder-1"), now=t.world.tick(), label="laptop")
    return {"agent_id": "coder-1"}


def new_task_key(t: Tenant) -> dict[str, str]:
    return {"key": "t-new"}


def spare_key(t: Tenant) -> dict[str, str]:
    key, _ = agent_key_issue(
        actor=SYSTEM, agent=t.agent("coder-2"), now=t.world.tick(), label="spare"
    )
    return {"prefix": key.prefix}


def awaiting_human_approval(t: Tenant) -> dict[str, str]:
    t.world.under_review("t1", needs_human_approval=True)
    t.world.verdict("t1", "APPROVED")
    assert t.world.task("t1").status == "READY_FOR_REVIEW"
    return {"key": "t1"}


def suspended(t: Tenant) -> dict[str, str]:
    t.world.unclaimed("t1")
    tasks.task_suspend(
        task=t.world.task("t1"), actor=t.world.admin, reason="Wait", now=t.world.tick()
    )
    return {"key": "t1"}


def sprint_at_checkpoint(t: Tenant) -> dict[str, str]:
    sprint_open(t)
    sprint = Sprint.objects.get(project=t.project, status="IN_PROGRESS")
    sprint_checkpoint(sprint=sprint, actor=t.world.admin, reason="Look", now=t.world.tick())
    return {}


def paused(t: Tenant) -> dict[str, str]:
    projects.project_pause(
        project=t.project, actor=t.world.admin, reason="Lunch", now=t.world.tick()
    )
    return {}


def a_discovery(t: Tenant) -> dict[str, str]:
    discovery = discovery_create(
        project=t.project,
        actor=t.agent("coder-1"),
        description="No idempotency keys",
        severity="high",
        now=t.world.tick(),
    )
    return {"disc_id": discovery.disc_id}


def an_alert(t: Tenant) -> dict[str, str]:
    t.world.drive_to("BLOCKED", "t1")
    watch_sweep(project=t.project, now=t.world.tick())
    return {"alert_id": str(Alert.objects.get(project=t.project, subject="t1").pk)}


def a_trip(t: Tenant) -> dict[str, str]:
    trip(t.world)
    return {}


def disabled_coder_2(t: Tenant) -> dict[str, str]:
    agent_set_enabled(agent=t.agent("coder-2"), actor=t.world.admin, enabled=False, now=t.world.now)
    return {"agent_id": "coder-2"}


# checks: what a successful call must have changed


def project_now(**expected: Any) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        project = Project.objects.get(pk=t.project.pk)
        for name, value in expected.items():
            assert (getattr(project, name) is not None) is value, (name, getattr(project, name))

    return check


def sprint_now(status: str) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        sprint = Sprint.objects.get(project=t.project)
        assert sprint.status == status
        assert response.json()["status"] == status

    return check


def no_notifications_yet(response) -> None:
    answer = response.json()
    assert answer["events"] == [] and answer["email"] is False and answer["chat_url_set"] is False


def notifications_now(**expected: Any) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        [pref] = NotificationPreference.objects.filter(project=t.project)
        assert pref.user.username == response.json()["user"]
        for name, value in expected.items():
            assert getattr(pref, name) == value
            assert response.json()[name] == value

    return check


def config_now(**expected: Any) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        config = ProjectConfig.objects.get(project=t.project)
        for name, value in expected.items():
            assert getattr(config, name) == value
            assert response.json()[name] == value

    return check


def agent_enabled(agent_id: str, value: bool) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        assert t.agent(agent_id).enabled is value
        assert response.json()["enabled"] is value

    return check


def agent_overloaded(agent_id: str, value: bool) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        assert t.agent(agent_id).overloaded is value
        assert response.json()["overloaded"] is value

    return check


def deadline_2099(t: Tenant, values: dict[str, str], response) -> None:
    assert Sprint.objects.get(project=t.project).deadline.year == 2099
    assert response.json()["deadline"].startswith("2099-01-01")


def goal_aborted(t: Tenant, values: dict[str, str], response) -> None:
    assert Goal.objects.get(project=t.project).status == "ABORTED"
    assert response.json()["status"] == "ABORTED"


def inbox_lists_the_blocked_task(t: Tenant, values: dict[str, str], response) -> None:
    assert [row["key"] for row in response.json()["blocked"]] == ["t1"]


def alert_acknowledged(t: Tenant, values: dict[str, str], response) -> None:
    alert = Alert.objects.get(pk=values["alert_id"])
    assert alert.acknowledged_by is not None and alert.acknowledged_at is not None
    assert response.json()["acknowledged_by"] == alert.acknowledged_by.username


def breaker_resolved(t: Tenant, values: dict[str, str], response) -> None:
    breaker = CircuitBreaker.objects.get(project=t.project)
    assert (breaker.status, breaker.current_trigger) == ("OK", None)
    assert response.json()["status"] == "OK"
    assert response.json()["history"][-1]["resolution"] == "Gateway back"


def discovery_deferred(t: Tenant, values: dict[str, str], response) -> None:
    discovery = Discovery.objects.get(project=t.project, disc_id=values["disc_id"])
    assert (discovery.triage, discovery.triage_note) == ("deferred", "Next sprint")


def note_written(t: Tenant, values: dict[str, str], response) -> None:
    note = HumanNote.objects.get(project=t.project)
    assert note.message == "Use the retry helper"
    assert response.json()["message"] == note.message


def task_now(status: str, **expected: Any) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        task = t.world.task(values.get("key", "t1"))
        assert task.status == status, task.status
        for name, value in expected.items():
            assert getattr(task, name) == value, (name, getattr(task, name))
        body = response.json()
        if "task" in body:
            assert body["task"]["key"] == task.key
            assert body["task"]["status"] == status

    return check


def review_open(t: Tenant, values: dict[str, str], response) -> None:
    review = Review.objects.get(project=t.project, task__key="t1", closed_at__isnull=True)
    assert review.reviewer == "code-reviewer-1"
    body = response.json()
    # review/claim answers the review; reviews/claim-next the review and its task.
    assert body.get("review", body)["reviewer"] == "code-reviewer-1"
    if "review" in body:
        assert body["task"]["key"] == "t1" and body["review"]["task"] == "t1"


def review_released(t: Tenant, values: dict[str, str], response) -> None:
    assert not Review.objects.filter(project=t.project, closed_at__isnull=True).exists()
    assert Task.objects.get(project=t.project, key="t1").status == "READY_FOR_REVIEW"
    assert response.json()["reviewer"] == "code-reviewer-1"
    assert Event.objects.filter(project=t.project, action="review_released").exists()


def review_extended(t: Tenant, values: dict[str, str], response) -> None:
    review = Review.objects.get(project=t.project, task__key="t1", closed_at__isnull=True)
    assert review.lease_expires > t.world.now  # extended from the real clock, past the World's
    assert Event.objects.filter(project=t.project, action="review_extended").exists()


def depends_on_t0(t: Tenant, values: dict[str, str], response) -> None:
    assert [d.key for d in t.world.task("t1").depends_on.all()] == ["t0"]
    assert response.json()["task"]["depends_on"] == ["t0"]


def rescoped(t: Tenant, values: dict[str, str], response) -> None:
    task = t.world.task("t1")
    assert task.status == "SUPERSEDED"
    assert task.superseded_by == ["t1a"]
    assert t.world.task("t1a").supersedes == "t1"
    assert [row["key"] for row in response.json()] == ["t1a"]


def handoff_pending(value: bool) -> Check:
    def check(t: Tenant, values: dict[str, str], response) -> None:
        assert t.world.task("t1").handoff_pending is value
        assert response.json()["summary"] == "Half the decorator"
        assert response.json()["next_action"] == "Finish the decorator"

    return check


def new_goal(t: Tenant, values: dict[str, str], response) -> None:
    goal = Goal.objects.get(project=t.project, status="IN_PROGRESS")
    assert goal.description == "The next goal"
    assert response.json()["id"] == goal.goal_id


def goal_completed(t: Tenant, values: dict[str, str], response) -> None:
    assert Goal.objects.get(project=t.project).status == "COMPLETED"
    assert response.json()["status"] == "COMPLETED"


def goal_restated(t: Tenant, values: dict[str, str], response) -> None:
    goal = Goal.objects.get(project=t.project)
    assert goal.description == "Every endpoint retries, with backoff"
    assert response.json()["description"] == goal.description


def sprint_opened(t: Tenant, values: dict[str, str], response) -> None:
    sprint = Sprint.objects.get(project=t.project, status="IN_PROGRESS")
    assert response.json()["id"] == sprint.sprint_id


def one_discovery(t: Tenant, values: dict[str, str], response) -> None:
    assert Discovery.objects.filter(project=t.project).count() == 1
    assert response.json()["id"] == "disc-1"


def one_anomaly(t: Tenant, values: dict[str, str], response) -> None:
    assert Anomaly.objects.get(project=t.project).type == "spec_gap"


def a_run(t: Tenant) -> dict[str, str]:
    t.world.claimed("t1")
    run = agent_services.run_start(
        project=t.project, agent=t.agent("coder-1"), now=t.world.tick(), task="t1"
    )
    return {"key": "t1", "run_id": str(run.pk)}


def run_started(t: Tenant, values: dict[str, str], response) -> None:
    run = Run.objects.get(project=t.project)
    assert (run.agent.agent_id, run.task.key, run.restart_reason) == ("coder-1", "t1", "start")
    assert response.json()["id"] == run.pk and run.ended is None


def quota_paused(t: Tenant, values: dict[str, str], response) -> None:
    agent = Agent.objects.get(project=t.project, agent_id="coder-1")
    assert agent.quota_provider == "claude" and agent.quota_until > timezone.now()


def run_streamed(t: Tenant, values: dict[str, str], response) -> None:
    run = Run.objects.get(pk=values["run_id"])
    assert run.ended is None and run.output == "line 1" and run.last_output_at is not None


def usage_recorded(t: Tenant, values: dict[str, str], response) -> None:
    row = RunUsage.objects.get(project=t.project)
    assert (row.run_id, row.model, row.input_tokens) == (int(values["run_id"]), "opus", 5)
    assert row.cost_usd == Decimal("0.25") and response.json()[0]["tokens"] == 5


def a_budget(t: Tenant) -> dict[str, str]:
    budget_set(
        project=t.project, actor=t.world.admin, now=t.world.tick(), scope="project",
        limit_usd=Decimal(5),
    )  # fmt: skip
    return {}


def budget_raised(t: Tenant, values: dict[str, str], response) -> None:
    budget = Budget.objects.get(project=t.project, scope="task", subject="t1")
    assert budget.limit_usd == Decimal("7.50") and budget.limit_tokens is None
    assert response.json()[0]["state"] == "ok"
    assert Event.objects.filter(project=t.project, action="budget_set").exists()


def run_crashed(t: Tenant, values: dict[str, str], response) -> None:
    run = Run.objects.get(pk=values["run_id"])
    assert run.exit_code == 1 and run.crashed and run.output == "boom"
    assert Event.objects.filter(project=t.project, action="agent_crashed", task__key="t1").exists()


def logged(t: Tenant, values: dict[str, str], response) -> None:
    event = Event.objects.get(project=t.project, action="note")
    assert event.detail == "Picked the retry library"
    assert response.json()["id"] == event.pk


def agent_created(t: Tenant, values: dict[str, str], response) -> None:
    body = response.json()
    assert body["agent"]["agent_id"] == "coder-4"
    # The key is shown once, and it works.
    assert bearer(body["key"]["key"]).get(f"{api_base(t.slug)}/tasks").status_code == 200


def registered(t: Tenant, values: dict[str, str], response) -> None:
    agent = t.agent("coder-4")
    assert agent.registered_at is not None and agent.lease_expires is not None
    assert response.json()["agent_id"] == "coder-4"


def agent_left(t: Tenant, values: dict[str, str], response) -> None:
    assert not t.agent("coder-1").has_live_lease(timezone.now())
    assert response.json()["agent_id"] == "coder-1"
    assert Event.objects.filter(project=t.project, action="deregistered").exists()


def heartbeat_seen(t: Tenant, values: dict[str, str], response) -> None:
    assert t.agent("coder-1").heartbeat > t.world.now
    assert response.json()["stop"] is None


def keys_listed(t: Tenant, values: dict[str, str], response) -> None:
    prefixes = {row["prefix"] for row in response.json()}
    assert prefixes == set(
        AgentKey.objects.filter(agent__agent_id="coder-1", project=t.project).values_list(
            "prefix", flat=True
        )
    )
    assert "key" not in response.json()[0]  # the secret is never shown again


def key_issued(t: Tenant, values: dict[str, str], response) -> None:
    assert bearer(response.json()["key"]).get(f"{api_base(t.slug)}/work").status_code == 200


def key_revoked(t: Tenant, values: dict[str, str], response) -> None:
    assert AgentKey.objects.get(prefix=values["prefix"]).revoked_at is not None
    assert response.json()["revoked_at"] is not None


TASK = "tasks/{key}"

ENDPOINTS: tuple[Endpoint, ...] = (
    # -- reads: every principal of the project, agents of any role and humans of any role
    Endpoint("api-tasks", "GET", "tasks", task_in("CLAIMED")),
    Endpoint("api-task", "GET", TASK, task_in("DRAFT")),
    Endpoint("api-events", "GET", "events", task_in("UNCLAIMED")),
    Endpoint("api-goal", "GET", "goal", nothing),
    Endpoint("api-sprint", "GET", "sprint", sprint_open),
    Endpoint("api-work", "GET", "work", task_in("UNCLAIMED"), query="?role=coder"),
    Endpoint("api-discoveries", "GET", "discoveries", nothing),
    Endpoint("api-anomalies", "GET", "anomalies", nothing),
    Endpoint("api-alerts", "GET", "alerts", an_alert),
    Endpoint("api-agents", "GET", "agents", nothing),
    Endpoint("api-circuit-breaker", "GET", "circuit-breaker", a_trip),
    Endpoint("api-agent", "GET", "agents/{agent_id}", agent_coder_1),
    # -- planner operations: the planner agent, or a human admin
    Endpoint(
        "api-tasks",
        "POST",
        "tasks",
        new_task_key,
        body={"key": "t-new", "description": "A new task", "spec_ref": "specs/new.md"},
        ok=201,
        check=task_now("DRAFT"),
    ),
    Endpoint(
        "api-finalize",
        "POST",
        TASK + "/finalize",
        task_in("DRAFT"),
        check=task_now("UNCLAIMED"),
    ),
    Endpoint(
        "api-dependencies",
        "PUT",
        TASK + "/dependencies",
        two_drafts,
        body={"depends_on": ["t0"]},
        check=depends_on_t0,
    ),
    Endpoint(
        "api-rescope",
        "POST",
        TASK + "/rescope",
        task_in("BLOCKED"),
        body={
            "reason": "Too broad",
            "new_tasks": [{"key": "t1a", "description": "The first half", "done_when": "half"}],
        },
        ok=201,
        check=rescoped,
    ),
    Endpoint(
        "api-abandon",
        "POST",
        TASK + "/abandon",
        task_in("BLOCKED"),
        body={"reason": "No longer needed"},
        check=task_now("ABANDONED"),
    ),
    Endpoint(
        "api-release",
        "POST",
        TASK + "/release",
        task_in("BLOCKED"),
        body={"reason": "Errors are retried three times"},
        check=task_now("UNCLAIMED", failed_by=["coder-1"], worktree=""),
    ),
    Endpoint(
        "api-goal",
        "POST",
        "goal",
        no_goal,
        body={"description": "The next goal"},
        ok=201,
        check=new_goal,
    ),
    # -- the planning operations given an endpoint by the contract alone (issue 22 §2)
    Endpoint(
        "api-task",
        "PATCH",
        TASK,
        task_in("DRAFT"),
        body={"description": "A sharper task", "priority": 1},
        check=task_now("DRAFT", description="A sharper task", priority=1),
    ),
    Endpoint(
        "api-goal",
        "PATCH",
        "goal",
        nothing,
        body={"description": "Every endpoint retries, with backoff"},
        check=goal_restated,
    ),
    Endpoint(
        "api-sprint-complete",
        "POST",
        "sprint/complete",
        sprint_with_nothing_planned,
        check=sprint_now("COMPLETED"),
    ),
    Endpoint(
        "api-goal-complete",
        "POST",
        "goal/complete",
        nothing,
        body={"reason": "Every endpoint retries"},
        check=goal_completed,
    ),
    Endpoint(
        "api-sprint",
        "POST",
        "sprint",
        task_in("UNCLAIMED"),
        body={"planned": ["t1"]},
        ok=201,
        check=sprint_opened,
    ),
    # -- the override block: human admins only. An agent asking is refused as the forbidden
    #    transition it is (SPEC §5.1 "never available to agents"), not as a missing permission.
    Endpoint(
        "api-override-block",
        "POST",
        TASK + "/override-block",
        task_in("CLAIMED"),
        body={"reason": "Stop: the spec changed", "questions": ["Which spec applies?"]},
        wrong_status=409,
        wrong_code="invalid_transition",
        check=task_now("BLOCKED", assigned_to="coder-1"),
    ),
    # -- coder operations: agents only (a human is never a coder)
    Endpoint(
        "api-claim-next",
        "POST",
        "tasks/claim-next",
        task_in("UNCLAIMED"),
        body={"base_commit": "base0001"},
        check=task_now("CLAIMED", assigned_to="coder-1", iteration=1),
    ),
    Endpoint(
        "api-claim",
        "POST",
        TASK + "/claim",
        task_in("UNCLAIMED"),
        body={"base_commit": "base0001"},
        check=task_now("CLAIMED", assigned_to="coder-2"),
        agent="coder-2",
    ),
    Endpoint(
        "api-request-review",
        "POST",
        TASK + "/request-review",
        task_in("CLAIMED"),
        body={"review_commit": "feed0001", "tree_clean": True},
        check=task_now("READY_FOR_REVIEW", review_commit="feed0001"),
    ),
    Endpoint(
        "api-block",
        "POST",
        TASK + "/block",
        task_in("CLAIMED"),
        body={"reason": "Spec is silent", "questions": ["Retry on 409?"], "attempted": ["spec"]},
        check=task_now("BLOCKED", failed_by=["coder-1"]),
    ),
    Endpoint(
        "api-handoff",
        "POST",
        TASK + "/handoff",
        task_in("CLAIMED"),
        body={"summary": "Half the decorator", "next_action": "Finish the decorator"},
        ok=201,
        check=handoff_pending(True),
    ),
    Endpoint(
        "api-handoff-pickup",
        "POST",
        TASK + "/handoff/pickup",
        handed_off,
        check=handoff_pending(False),
    ),
    # -- reviewer operations
    Endpoint(
        "api-review-claim",
        "POST",
        TASK + "/review/claim",
        task_in("READY_FOR_REVIEW"),
        ok=201,
        check=review_open,
    ),
    Endpoint(
        "api-review-claim-next",
        "POST",
        "reviews/claim-next",
        task_in("READY_FOR_REVIEW"),
        check=review_open,
        agent="code-reviewer-1",
        refused="coder-2",
    ),
    Endpoint(
        "api-review-extend",
        "POST",
        TASK + "/review/extend",
        lambda t: (t.world.under_review("t1"), {"key": "t1"})[1],
        check=review_extended,
    ),
    Endpoint(
        "api-review-release",
        "POST",
        TASK + "/review/release",
        lambda t: (t.world.under_review("t1"), {"key": "t1"})[1],
        body={"reason": "Beyond what I can judge"},
        check=review_released,
    ),
    Endpoint(
        "api-verdict",
        "POST",
        TASK + "/verdict",
        lambda t: (t.world.under_review("t1"), {"key": "t1"})[1],
        body={"verdict": "APPROVED", "review_commit": "c0ffee01", "reason": "Correct"},
        check=task_now("APPROVED", approved_by=["code-reviewer-1"]),
    ),
    Endpoint(
        "api-merge",
        "POST",
        TASK + "/merge",
        task_in("APPROVED"),
        body={"merge_commit": "merge0001"},
        check=task_now("MERGED", merge_commit="merge0001", worktree=""),
    ),
    Endpoint(
        "api-integration-failure",
        "POST",
        TASK + "/integration-failure",
        task_in("APPROVED"),
        body={"reason": "Conflict in api.py"},
        check=task_now("INTEGRATION_FAILED"),
    ),
    # -- any agent role: records and liveness
    Endpoint(
        "api-discoveries",
        "POST",
        "discoveries",
        nothing,
        body={"description": "No idempotency keys", "severity": "high"},
        ok=201,
        check=one_discovery,
        agent="coder-1",
    ),
    Endpoint(
        "api-anomalies",
        "POST",
        "anomalies",
        nothing,
        body={"type": "spec_gap", "details": {"note": "no error model"}},
        ok=201,
        check=one_anomaly,
        agent="code-reviewer-1",
    ),
    Endpoint(
        "api-log",
        "POST",
        "log",
        nothing,
        body={"action": "note", "detail": "Picked the retry library"},
        ok=201,
        check=logged,
    ),
    Endpoint("api-runs", "GET", "runs", a_run, query="?task=t1"),
    Endpoint(
        "api-runs",
        "POST",
        "runs",
        task_in("CLAIMED"),
        body={"task": "t1", "restart_reason": "start", "command": "agent.sh"},
        ok=201,
        check=run_started,
        agent="coder-1",
    ),
    Endpoint(
        "api-run-finish",
        "POST",
        "runs/{run_id}/finish",
        a_run,
        body={"exit_code": 1, "output": "boom"},
        check=run_crashed,
        agent="coder-1",
        refused="coder-2",
    ),
    Endpoint(
        "api-run-output",
        "POST",
        "runs/{run_id}/output",
        a_run,
        body={"text": "line 1"},
        check=run_streamed,
        agent="coder-1",
        refused="coder-2",
    ),
    Endpoint(
        "api-usage",
        "POST",
        "usage",
        a_run,
        body={"usage": [{"model": "opus", "input_tokens": 5, "cost_usd": 0.25}]},
        check=usage_recorded,
        agent="coder-1",
    ),
    Endpoint("api-budgets", "GET", "budgets", a_budget),
    Endpoint(
        "api-budgets",
        "POST",
        "budgets",
        task_in("UNCLAIMED"),
        body={"scope": "task", "subject": "t1", "limit_usd": 7.5},
        check=budget_raised,
    ),
    Endpoint(
        "api-register",
        "POST",
        "agents/register",
        unregistered_coder,
        body={"terminal": "/dev/pts/4"},
        check=registered,
        agent="coder-4",
    ),
    Endpoint(
        "api-heartbeat",
        "POST",
        "agents/heartbeat",
        task_in("CLAIMED"),
        body={"context_percent": 40},
        check=heartbeat_seen,
        agent="coder-1",
    ),
    Endpoint(
        "api-agent-leave",
        "POST",
        "agents/leave",
        nothing,
        check=agent_left,
        agent="coder-1",
    ),
    Endpoint(
        "api-agent-quota",
        "POST",
        "agents/quota",
        nothing,
        body=lambda: {
            "until": (timezone.now() + timedelta(hours=2)).isoformat(),
            "provider": "claude",
        },
        check=quota_paused,
        agent="coder-1",
    ),
    # -- agent and key management: human admins only
    Endpoint(
        "api-agents",
        "POST",
        "agents",
        nothing,
        body={"role": "coder", "label": "laptop"},
        ok=201,
        check=agent_created,
    ),
    Endpoint(
        "api-agent-keys",
        "GET",
        "agents/{agent_id}/keys",
        agent_coder_1,
        check=keys_listed,
    ),
    Endpoint(
        "api-agent-keys",
        "POST",
        "agents/{agent_id}/keys",
        agent_coder_1,
        body={"label": "second machine"},
        ok=201,
        check=key_issued,
    ),
    Endpoint(
        "api-key-revoke",
        "POST",
        "keys/{prefix}/revoke",
        spare_key,
        check=key_revoked,
    ),
    # -- human oversight (SPEC §7): admins; members write notes and triage discoveries
    Endpoint("api-config", "GET", "config", nothing),
    Endpoint(
        "api-notifications",
        "GET",
        "notifications",
        nothing,
        check=lambda t, values, response: no_notifications_yet(response),
    ),
    Endpoint(
        "api-notifications",
        "PATCH",
        "notifications",
        nothing,
        body={"events": ["quota", "blocked"], "email": True, "digest_minutes": 30},
        check=notifications_now(events=["blocked", "quota"], email=True, digest_minutes=30),
    ),
    Endpoint(
        "api-inbox",
        "GET",
        "inbox",
        task_in("BLOCKED"),
        check=inbox_lists_the_blocked_task,
    ),
    Endpoint(
        "api-release-claim",
        "POST",
        TASK + "/release-claim",
        task_in("CLAIMED"),
        body={"reason": "The coder's machine died"},
        check=task_now("UNCLAIMED", assigned_to=""),
    ),
    Endpoint(
        "api-cancel",
        "POST",
        TASK + "/cancel",
        task_in("CLAIMED"),
        body={"reason": "Out of scope"},
        check=task_now("ABANDONED"),
    ),
    Endpoint(
        "api-suspend",
        "POST",
        TASK + "/suspend",
        task_in("UNCLAIMED"),
        body={"reason": "Wait for the API freeze"},
        check=task_now("UNCLAIMED", is_suspended=True),
    ),
    Endpoint(
        "api-resume",
        "POST",
        TASK + "/resume",
        suspended,
        check=task_now("UNCLAIMED", is_suspended=False),
    ),
    Endpoint(
        "api-approve",
        "POST",
        TASK + "/approve",
        awaiting_human_approval,
        body={"note": "Checked the migration"},
        check=task_now("APPROVED", approved_by=["code-reviewer-1"]),
    ),
    Endpoint(
        "api-reject",
        "POST",
        TASK + "/reject",
        awaiting_human_approval,
        body={"reason": "Not with this migration"},
        check=task_now("REJECTED", review_cycles_current=1),
    ),
    Endpoint(
        "api-limits",
        "PATCH",
        TASK + "/limits",
        task_in("UNCLAIMED"),
        body={"max_iterations": 4},
        check=task_now("UNCLAIMED", max_iterations=4),
    ),
    Endpoint(
        "api-sprint-checkpoint",
        "POST",
        "sprint/checkpoint",
        sprint_open,
        body={"reason": "Mid-sprint look"},
        check=sprint_now("CHECKPOINT"),
    ),
    Endpoint(
        "api-sprint-continue",
        "POST",
        "sprint/continue",
        sprint_at_checkpoint,
        body={"decision": "On track"},
        check=sprint_now("IN_PROGRESS"),
    ),
    Endpoint(
        "api-sprint-abort",
        "POST",
        "sprint/abort",
        sprint_open,
        body={"reason": "Wrong plan"},
        check=sprint_now("ABORTED"),
    ),
    Endpoint(
        "api-sprint-deadline",
        "PUT",
        "sprint/deadline",
        sprint_open,
        body={"deadline": "2099-01-01T00:00:00Z"},
        check=deadline_2099,
    ),
    Endpoint(
        "api-project-pause",
        "POST",
        "project/pause",
        nothing,
        body={"reason": "Lunch"},
        check=project_now(paused_at=True),
    ),
    Endpoint(
        "api-project-resume",
        "POST",
        "project/resume",
        paused,
        check=project_now(paused_at=False),
    ),
    Endpoint(
        "api-goal-abort",
        "POST",
        "goal/abort",
        nothing,
        body={"reason": "The product was cancelled"},
        check=goal_aborted,
    ),
    Endpoint(
        "api-config",
        "PATCH",
        "config",
        nothing,
        body={"coder_poll_interval": 45},
        check=config_now(coder_poll_interval=45),
    ),
    Endpoint(
        "api-notes",
        "POST",
        "notes",
        task_in("UNCLAIMED"),
        body={"message": "Use the retry helper", "task": "t1"},
        ok=201,
        check=note_written,
    ),
    Endpoint(
        "api-discovery-triage",
        "POST",
        "discoveries/{disc_id}/triage",
        a_discovery,
        body={"decision": "defer", "note": "Next sprint"},
        check=discovery_deferred,
    ),
    Endpoint(
        "api-alert-acknowledge",
        "POST",
        "alerts/{alert_id}/acknowledge",
        an_alert,
        check=alert_acknowledged,
    ),
    Endpoint(
        "api-circuit-breaker-resolve",
        "POST",
        "circuit-breaker/resolve",
        a_trip,
        body={"reason": "Gateway back"},
        check=breaker_resolved,
    ),
    Endpoint(
        "api-agent-disable",
        "POST",
        "agents/{agent_id}/disable",
        agent_coder_1,
        check=agent_enabled("coder-1", False),
    ),
    Endpoint(
        "api-agent-enable",
        "POST",
        "agents/{agent_id}/enable",
        disabled_coder_2,
        check=agent_enabled("coder-2", True),
    ),
    Endpoint(
        "api-agent-availability",
        "POST",
        "agents/{agent_id}/availability",
        agent_coder_1,
        body={"state": "overloaded"},
        check=agent_overloaded("coder-1", True),
    ),
)

WRITES = [e for e in ENDPOINTS if not e.is_read]
READS = [e for e in ENDPOINTS if e.is_read]


def _allowed_cases() -> list[Any]:
    cases = []
    for endpoint in WRITES:
        for principal in endpoint.principals():
            if endpoint.expected(principal)[1] is None:
                cases.append(pytest.param(endpoint, principal, id=f"{endpoint.id}-{principal}"))
    return cases


# -- the guard ------------------------------------------------------------------------------------


def _routes() -> set[tuple[str, str]]:
    routes = set()
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern), pattern
        view = pattern.callback.view_class
        for method in ("get", "post", "put", "patch", "delete"):
            if hasattr(view, method):
                routes.add((pattern.name, method.upper()))
    return routes


def test_the_matrix_covers_every_url_pattern_and_method():
    names = {p.name for p in api_urls.urlpatterns}
    table = {(e.name, e.method) for e in ENDPOINTS}
    assert names == {name for name, _ in table}, names ^ {name for name, _ in table}
    assert table == _routes(), table ^ _routes()
    assert len(table) == len(ENDPOINTS), "one row per (URL name, method)"


def test_every_contract_entry_has_a_row_and_the_rows_restate_no_roles():
    """Issue 22 §3: who may call comes from the contract (agents) and the product's declaration
    (people), the row keeps what neither can know."""
    entries = {(e.route, e.method) for e in CONTRACT}
    assert entries == {(e.name, e.method) for e in ENDPOINTS}, entries ^ {
        (e.name, e.method) for e in ENDPOINTS
    }
    fields = {f.name for f in dataclasses.fields(Endpoint)}
    assert not fields & {"right", "wrong", "roles", "agent_role", "humans", "people"}, fields
    for row in ENDPOINTS:
        assert row.path == row.contract.path, row.id
        roles = row.contract.roles
        if row.agent is not None and roles:
            # Naming an agent picks one of the contract's roles, never another.
            assert role_of(row.agent) in roles, row.id
        if row.refused is not None:
            # Only where the contract is silent (a supervisor's call, no tool offers it).
            assert row.agent is not None and not roles, row.id
        if roles and not row.is_read:
            assert role_of(row.right) in roles, row.id
            assert {role_of(a) for a in row.wrong} == set(ROLES) - roles, row.id
        if not roles and row.agent is None and not row.is_read:
            assert row.right is None and len(row.wrong) == len(ROLES), row.id


# SPEC §3 (and issue 25's planner right), over the declarations the rows follow: a declaration
# that gives people more, or less, than the protocol does fails here, although every principal's
# answer would agree with it. Viewers read and set their own notifications; members also write
# notes, discoveries and anomalies and triage discoveries; planning is the planner right's; the
# inbox and an agent's keys are read by admins; every other person's write is an admin's.
OWN_SETTINGS = {("api-notifications", "PATCH")}
MEMBERS_WRITE = OWN_SETTINGS | {
    ("api-notes", "POST"),
    ("api-discoveries", "POST"),
    ("api-anomalies", "POST"),
    ("api-discovery-triage", "POST"),
}
PLANNING = {
    ("api-tasks", "POST"),
    ("api-task", "PATCH"),
    ("api-finalize", "POST"),
    ("api-dependencies", "PUT"),
    ("api-goal", "POST"),
    ("api-goal", "PATCH"),
    ("api-sprint", "POST"),
    ("api-sprint-complete", "POST"),
}
ADMINS_READ = {("api-inbox", "GET"), ("api-agent-keys", "GET")}


def test_the_declared_people_are_the_protocols():
    def open_to(person: str, method: str) -> set[tuple[str, str]]:
        return {
            (e.name, e.method)
            for e in ENDPOINTS
            if person in e.humans and (e.method == "GET") == (method == "GET")
        }

    reads = {(e.name, e.method) for e in ENDPOINTS if e.method == "GET"}
    assert open_to("viewer", "GET") == reads - ADMINS_READ
    assert open_to("admin", "GET") == reads
    assert open_to("viewer", "POST") == OWN_SETTINGS
    assert open_to("member", "POST") == MEMBERS_WRITE
    assert open_to("planner", "POST") == MEMBERS_WRITE | PLANNING
    assert {(e.name, e.method) for e in ENDPOINTS if e.people == PLAN} == PLANNING
    # An admin writes everything a person may write at all.
    people_write = {(e.name, e.method) for e in ENDPOINTS if e.method != "GET" and e.humans}
    assert open_to("admin", "POST") == people_write


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_refused_principals_get_the_envelope_and_change_nothing(endpoint: Endpoint):
    t = Tenant()
    values = endpoint.setup(t)
    url = endpoint.url(t.slug, values)
    refused = [p for p in endpoint.principals() if endpoint.expected(p)[1] is not None]
    # Issuing the principals' keys is setup, not the calls under test.
    clients = {p: endpoint.client(t, p) for p in refused}
    before, foreign_before = domain_snapshot(t.project), domain_snapshot(t.foreign)
    mismatches = []
    for principal, client in clients.items():
        status, code = endpoint.expected(principal)
        response = endpoint.call(client, url)
        try:
            assert_envelope(response, status, code)
        except AssertionError as exc:
            mismatches.append(f"{principal}: expected {status} {code}, got {exc}")
            continue
        if domain_snapshot(t.project) != before:
            mismatches.append(f"{principal}: a refused call changed the project")
    if domain_snapshot(t.foreign) != foreign_before:
        mismatches.append("a refused call changed the other project")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_another_tenant_is_indistinguishable_from_nothing(endpoint: Endpoint):
    """SPEC §3: a key of project B gets for A exactly what a missing project or object gets."""
    t = Tenant()
    values = endpoint.setup(t)
    insider = endpoint.client(t, "right_agent" if endpoint.right else "admin")
    foreign = endpoint.call(endpoint.client(t, "foreign_agent"), endpoint.url(t.slug, values))
    outsider = endpoint.call(endpoint.client(t, "outsider"), endpoint.url(t.slug, values))
    no_project = endpoint.call(insider, endpoint.url("no-such-project", values))
    answers = {"foreign agent": foreign, "outsider": outsider, "no such project": no_project}
    if "{" in endpoint.path:
        answers["no such object"] = endpoint.call(insider, endpoint.url(t.slug, MISSING))
    for who, response in answers.items():
        assert_envelope(response, 404, "not_found")
        assert response.json() == foreign.json(), who


# -- the principals that may ---------------------------------------------------------------------


@pytest.mark.parametrize(("endpoint", "principal"), _allowed_cases())
def test_allowed_principal_succeeds(endpoint: Endpoint, principal: str):
    t = Tenant()
    values = endpoint.setup(t)
    response = endpoint.call(endpoint.client(t, principal), endpoint.url(t.slug, values))
    assert response.status_code == endpoint.ok, response.json()
    if endpoint.check is not None:
        endpoint.check(t, values, response)
    assert_valid(t.slug, endpoint.id)


@pytest.mark.parametrize("endpoint", READS, ids=lambda e: e.id)
def test_reads_answer_every_agent_and_member_of_the_project(endpoint: Endpoint):
    t = Tenant()
    values = endpoint.setup(t)
    url = endpoint.url(t.slug, values)
    every_agent = [f"agent:{agent_id}" for agent_id in AGENT_OF.values()]
    clients = {p: endpoint.client(t, p) for p in (*every_agent, *HUMANS)}
    before = domain_snapshot(t.project)
    answers = {}
    for principal, client in clients.items():
        response = endpoint.call(client, url)
        assert response.status_code == 200, (principal, response.json())
        answers[principal] = response.json()
    assert domain_snapshot(t.project) == before
    # Who reads does not change what the board says (the work answer is per role: ?role=coder;
    # the config's escalation webhook is for project admins only: test_project_config.py).
    if endpoint.name == "api-config":
        for answer in answers.values():
            answer.pop("escalation_webhook", None)
            answer.pop("webhook_secret_set", None)
    if endpoint.name not in ("api-work",):
        assert len({repr(a) for a in answers.values()}) == 1, answers


def test_the_read_answers_are_the_projects_own_rows():
    t = Tenant()
    t.world.unclaimed("t1")
    foreign_world = World(t.foreign, now=http_start())
    foreign_world.unclaimed("secret-task")
    client = agent_client(t.agent("coder-1"))
    keys = [row["key"] for row in client.get(f"{api_base(t.slug)}/tasks").json()]
    assert keys == ["t1"]
    events = client.get(f"{api_base(t.slug)}/events").json()
    assert events and all(e["task"] in (None, "t1") for e in events)
    agents = {a["agent_id"] for a in client.get(f"{api_base(t.slug)}/agents").json()}
    assert agents == set(Agent.objects.filter(project=t.project).values_list("agent_id", flat=True))


# -- CSRF on session writes (SPEC §11 Security) ---------------------------------------------------


def test_a_session_write_without_the_csrf_token_is_refused():
    t = Tenant()
    t.world.draft("t1")
    client = session_client(t.users["admin"], enforce_csrf_checks=True)
    url = f"{api_base(t.slug)}/tasks/t1/finalize"
    before = domain_snapshot(t.project)
    error = assert_envelope(client.post(url, format="json"), 403, "permission_denied")
    assert "CSRF" in error["message"]
    assert domain_snapshot(t.project) == before
    assert t.world.task("t1").status == "DRAFT"


def test_a_session_write_with_the_csrf_token_succeeds():
    t = Tenant()
    t.world.draft("t1")
    client = session_client(t.users["admin"], enforce_csrf_checks=True)
    secret, token = csrf_pair()
    client.cookies["csrftoken"] = secret
    url = f"{api_base(t.slug)}/tasks/t1/finalize"
    response = client.post(url, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200, response.json()
    assert t.world.task("t1").status == "UNCLAIMED"


def test_a_session_write_with_a_wrong_csrf_token_is_refused():
    t = Tenant()
    t.world.draft("t1")
    client = session_client(t.users["admin"], enforce_csrf_checks=True)
    secret, _ = csrf_pair()
    _, other_token = csrf_pair()
    client.cookies["csrftoken"] = secret
    url = f"{api_base(t.slug)}/tasks/t1/finalize"
    assert_envelope(
        client.post(url, format="json", HTTP_X_CSRFTOKEN=other_token), 403, "permission_denied"
    )
    assert t.world.task("t1").status == "DRAFT"


def test_session_reads_need_no_csrf_token_and_bearer_writes_are_not_csrf_checked():
    t = Tenant()
    t.world.unclaimed("t1")
    session = session_client(t.users["viewer"], enforce_csrf_checks=True)
    assert session.get(f"{api_base(t.slug)}/tasks").status_code == 200
    coder = agent_client(t.agent("coder-1"), enforce_csrf_checks=True)
    response = coder.post(
        f"{api_base(t.slug)}/tasks/claim-next", {"base_commit": "base0001"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["task"]["key"] == "t1"


# -- keys ----------------------------------------------------------------------------------------


def test_a_key_stops_working_the_moment_it_is_revoked_over_the_api():
    t = Tenant()
    plain = key_for(t.agent("coder-1"))
    coder = bearer(plain)
    assert coder.get(f"{api_base(t.slug)}/work").status_code == 200
    prefix = plain.split("_")[1]
    admin = session_client(t.users["admin"])
    assert admin.post(f"{api_base(t.slug)}/keys/{prefix}/revoke").status_code == 200
    assert_envelope(coder.get(f"{api_base(t.slug)}/work"), 401, "authentication_failed")


def test_a_key_is_found_by_prefix_but_checked_by_hash():
    t = Tenant()
    plain = key_for(t.agent("coder-1"))
    forged = plain[:-1] + ("A" if plain[-1] != "A" else "B")
    assert_envelope(bearer(forged).get(f"{api_base(t.slug)}/work"), 401, "authentication_failed")


def test_a_disabled_agent_cannot_act():
    t = Tenant()
    t.world.unclaimed("t1")
    client = agent_client(t.agent("coder-1"))
    Agent.objects.filter(project=t.project, agent_id="coder-1").update(enabled=False)
    before = domain_snapshot(t.project)
    response = client.post(
        f"{api_base(t.slug)}/tasks/claim-next", {"base_commit": "base0001"}, format="json"
    )
    assert_envelope(response, 403, "permission_denied")
    assert domain_snapshot(t.project) == before
