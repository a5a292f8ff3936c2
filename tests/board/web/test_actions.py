"""The board's POST forms (boards/board/web/actions.py, SPEC §7): every action, per role, and
what it did.

The role matrix runs every action as an anonymous visitor, a viewer, a member and an admin of
the project, an admin of another project, and site staff; it asserts the status and the
database outcome, and a refused request leaves the rows exactly as they were. The happy path of
each action is the admin's (and staff's) row of the matrix; the refusals a person can meet (a
protocol refusal, bad input, a missing CSRF token) follow. The pages' own tests are in
test_pages_*.py and the board's forms in test_board_forms.py; the helpers here are theirs too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from agents.models import Agent, AgentKey, Budget
from agents.services import agent_key_issue
from boards.coordination.models.projects import Membership, Project, Sprint
from boards.coordination.models.records import Alert, CircuitBreaker, Event
from boards.coordination.models.tasks import Discovery, HumanNote, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.services import projects, tasks
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.records import discovery_create
from boards.coordination.services.sprints import sprint_abort, sprint_checkpoint
from boards.watch.models import NotificationPreference
from tests.board.web.helpers import sprint_world
from tests.factories import ProjectFactory, UserFactory, member
from tests.lifecycle import World
from tests.module_rows import shared_rows
from tests.watch.breaker_fixtures import trip

pytestmark = pytest.mark.django_db

ANONYMOUS, VIEWER, MEMBER, ADMIN, OTHER_ADMIN, STAFF = (
    "anonymous",
    "viewer",
    "member",
    "admin",
    "admin of another project",
    "staff",
)
ROLES = (ANONYMOUS, VIEWER, MEMBER, ADMIN, OTHER_ADMIN, STAFF)


def client_for(world: World, who: str) -> Client:
    client = Client()
    if who == ANONYMOUS:
        return client
    if who == ADMIN:
        user = world.admin
    elif who in (VIEWER, MEMBER):
        user = member(world.project, who)
    elif who == OTHER_ADMIN:
        user = member(ProjectFactory(), Membership.Role.ADMIN)
    else:
        user = UserFactory(is_staff=True)  # a member of nothing: staff act as admins everywhere
    client.force_login(user)
    return client


def expected_status(who: str, needs: str, ok: int) -> int:
    """What each role gets from a view that needs `needs` (SPEC §3)."""
    if who == ANONYMOUS:
        return 302  # to the sign-in page
    if who == OTHER_ADMIN:
        return 404  # another tenant's project does not exist
    if who in (ADMIN, STAFF):
        return ok
    rank = {VIEWER: 1, MEMBER: 2, ADMIN: 3}
    return ok if rank[who] >= rank[needs] else 403


# -- the actions: where they post, what they need, what they change ----------------------------


def _awaiting(world: World, key: str) -> Task:
    """READY_FOR_REVIEW with the reviewers' approval in, held by the human gate (seed 004)."""
    world.under_review(key, needs_human_approval=True, sprint_scope="planned")
    task = world.verdict(key, "APPROVED")
    assert task.status == "READY_FOR_REVIEW"
    return task


def _suspended(world: World, key: str) -> Task:
    world.unclaimed(key, sprint_scope="planned")
    return tasks.task_suspend(
        task=world.task(key), actor=world.admin, reason="Waiting on legal", now=world.tick()
    )


def _discovery(world: World) -> Discovery:
    return discovery_create(
        project=world.project,
        actor=world.coder,
        description="The cache key ignores the tenant",
        severity="critical",
        urgency="immediate",
        now=world.tick(),
    )


def _sprint(world: World) -> Sprint:
    return sprint_open(project=world.project) or Sprint.objects.filter(project=world.project).last()


def _key(world: World) -> AgentKey:
    key, _ = agent_key_issue(actor=SYSTEM, agent=world.coder, now=world.tick(), label="ci")
    return key


def _checkpoint(world: World) -> None:
    sprint_checkpoint(
        sprint=_sprint(world), actor=world.admin, reason="Deadline near", now=world.tick()
    )


def _pause(world: World) -> None:
    projects.project_pause(
        project=world.project, actor=world.admin, reason="Release freeze", now=world.tick()
    )


def _alert(world: World) -> SimpleNamespace:
    alert = Alert.objects.create(
        project=world.project,
        type=Alert.Type.BLOCKED,
        level=Alert.Level.CRITICAL,
        task=world.blocked("T-7", sprint_scope="planned"),
        subject="T-7",
        message="T-7 is BLOCKED",
        created=world.tick(),
    )
    return SimpleNamespace(prefix=alert.pk)


@dataclass(frozen=True)
class Action:
    name: str
    path: str  # formatted with slug=
    data: dict[str, Any]
    setup: Callable[[World], Any]
    applied: Callable[[World], bool]
    needs: str = Membership.Role.ADMIN
    ok: int = 302
    # Key issue and revoke take no actor (agents.services): nothing records who did it.
    audited: bool = True


def status_of(key: str) -> Callable[[World], str]:
    return lambda w: w.task(key).status


ACTIONS = [
    Action(
        "answer a BLOCKED task",
        "/p/{slug}/tasks/T-1/release",
        {"answer": "Return 404 for foreign rows", "next": "inbox"},
        lambda w: w.blocked("T-1"),
        lambda w: w.task("T-1").status == "UNCLAIMED",
    ),
    Action(
        "rescope a BLOCKED task",
        "/p/{slug}/tasks/T-1/rescope",
        {
            "reason": "Too broad",
            "new_key": ["T-1a", "T-1b", ""],
            "new_description": ["Parse", "Render", ""],
            "new_done_when": ["parsed", "rendered", ""],
            "new_priority": ["2", "3", "3"],
            "new_spec_ref": ["", "", ""],
        },
        lambda w: w.blocked("T-1"),
        lambda w: w.task("T-1").status == "SUPERSEDED",
    ),
    Action(
        "abandon a BLOCKED task",
        "/p/{slug}/tasks/T-1/abandon",
        {"reason": "Not needed any more"},
        lambda w: w.blocked("T-1"),
        lambda w: w.task("T-1").status == "ABANDONED",
    ),
    Action(
        "override block",
        "/p/{slug}/tasks/T-1/override-block",
        {"reason": "Wrong approach", "questions": ["Which API?", "", "Which DB?"]},
        lambda w: w.claimed("T-1"),
        lambda w: w.task("T-1").status == "BLOCKED",
    ),
    Action(
        "release a stuck claim",
        "/p/{slug}/tasks/T-1/release-claim",
        {"reason": "coder-1 is gone"},
        lambda w: w.claimed("T-1"),
        lambda w: w.task("T-1").status == "UNCLAIMED",
    ),
    Action(
        "cancel",
        "/p/{slug}/tasks/T-1/cancel",
        {"reason": "Out of scope"},
        lambda w: w.claimed("T-1"),
        lambda w: w.task("T-1").status == "ABANDONED",
    ),
    Action(
        "suspend",
        "/p/{slug}/tasks/T-1/suspend",
        {"reason": "Waiting on legal"},
        lambda w: w.unclaimed("T-1"),
        lambda w: w.task("T-1").is_suspended,
    ),
    Action(
        "resume a suspended task",
        "/p/{slug}/tasks/T-1/resume",
        {},
        lambda w: _suspended(w, "T-1"),
        lambda w: not w.task("T-1").is_suspended,
    ),
    Action(
        "approve for merge",
        "/p/{slug}/tasks/T-1/approve",
        {"note": "Checked the migration"},
        lambda w: _awaiting(w, "T-1"),
        lambda w: w.task("T-1").status == "APPROVED",
    ),
    Action(
        "reject at the human gate",
        "/p/{slug}/tasks/T-1/reject",
        {"reason": "Leaks the token in logs"},
        lambda w: _awaiting(w, "T-1"),
        lambda w: w.task("T-1").status == "REJECTED",
    ),
    Action(
        "set limits",
        "/p/{slug}/tasks/T-1/limits",
        {
            "priority": "1",
            "max_iterations": "3",
            "max_review_cycles": "",
            "needs_human_approval": "1",
        },
        lambda w: w.unclaimed("T-1"),
        lambda w: (w.task("T-1").max_iterations, w.task("T-1").priority) == (3, 1),
    ),
    Action(
        "note on a task",
        "/p/{slug}/tasks/T-1/notes",
        {"message": "Mind the tenant key"},
        lambda w: w.unclaimed("T-1"),
        lambda w: HumanNote.objects.filter(task=w.task("T-1")).exists(),
        needs=Membership.Role.MEMBER,
    ),
    Action(
        "note on the project",
        "/p/{slug}/notes",
        {"message": "Demo on Friday"},
        lambda w: None,
        lambda w: HumanNote.objects.filter(project=w.project, task=None).exists(),
        needs=Membership.Role.MEMBER,
    ),
    Action(
        "request a checkpoint",
        "/p/{slug}/sprints/sprint-1/checkpoint",
        {"reason": "Scope looks wrong"},
        lambda w: None,
        lambda w: _sprint(w).status == "CHECKPOINT",
    ),
    Action(
        "continue after a checkpoint",
        "/p/{slug}/sprints/sprint-1/resume",
        {"decision": "Keep going, drop the stretch"},
        _checkpoint,
        lambda w: _sprint(w).status == "IN_PROGRESS",
    ),
    Action(
        "abort the sprint",
        "/p/{slug}/sprints/sprint-1/abort",
        {"reason": "Goal changed"},
        lambda w: None,
        lambda w: _sprint(w).status == "ABORTED",
    ),
    Action(
        "set the deadline",
        "/p/{slug}/sprints/sprint-1/deadline",
        {"deadline": "2099-03-01T17:30"},
        lambda w: None,
        lambda w: _sprint(w).deadline is not None and _sprint(w).deadline.year == 2099,
    ),
    Action(
        "complete the goal",
        "/p/{slug}/goals/goal-1/complete",
        {"reason": "Shipped"},
        # A goal completes with no open sprint of it (SPEC §13): its sprint is closed first.
        lambda w: sprint_abort(sprint=_sprint(w), actor=w.admin, reason="Wrapped", now=w.tick()),
        lambda w: w.project.goals.get().status == "COMPLETED",
    ),
    Action(
        "abort the goal",
        "/p/{slug}/goals/goal-1/abort",
        {"reason": "Customer left"},
        lambda w: None,
        lambda w: w.project.goals.get().status == "ABORTED",
    ),
    Action(
        "pause the project",
        "/p/{slug}/pause",
        {"reason": "Release freeze"},
        lambda w: None,
        lambda w: Project.objects.get(pk=w.project.pk).is_paused,
    ),
    Action(
        "acknowledge an alert",
        "/p/{slug}/alerts/{prefix}/acknowledge",  # the alert's id, in the `prefix` slot
        {},
        _alert,
        lambda w: Alert.objects.get(project=w.project).acknowledged_at is not None,
    ),
    Action(
        "resume the project",
        "/p/{slug}/resume",
        {},
        _pause,
        lambda w: not Project.objects.get(pk=w.project.pk).is_paused,
    ),
    Action(
        "defer a discovery",
        "/p/{slug}/discoveries/disc-1/triage",
        {"decision": "defer", "note": "After the release"},
        _discovery,
        lambda w: w.project.discoveries.get().triage == "deferred",
        needs=Membership.Role.MEMBER,
    ),
    Action(
        "convert a discovery",
        "/p/{slug}/discoveries/disc-1/triage",
        {"decision": "convert", "new_key": "T-9", "new_done_when": "tenant in the key"},
        _discovery,
        lambda w: w.project.discoveries.get().converted_to_task == "T-9",
    ),
    Action(
        "create an agent",
        "/p/{slug}/agents/new",
        {"role": "coder", "label": "laptop"},
        lambda w: None,
        lambda w: Agent.objects.filter(project=w.project, agent_id="coder-4").exists(),
        ok=201,
    ),
    Action(
        "issue a key",
        "/p/{slug}/agents/coder-2/keys",
        {"label": "second machine"},
        lambda w: None,
        lambda w: AgentKey.objects.filter(agent=w.agent("coder-2")).exists(),
        ok=201,
        audited=False,
    ),
    Action(
        "revoke a key",
        "/p/{slug}/keys/{prefix}/revoke",
        {},
        _key,
        lambda w: AgentKey.objects.get(agent=w.coder).revoked_at is not None,
        audited=False,
    ),
    Action(
        "disable an agent",
        "/p/{slug}/agents/coder-3/enabled",
        {"enabled": "0"},
        lambda w: None,
        lambda w: not w.agent("coder-3").enabled,
    ),
    Action(
        "resolve the circuit breaker",
        "/p/{slug}/breaker/resolve",
        {"reason": "Gateway back", "next": "breaker"},
        trip,
        lambda w: CircuitBreaker.objects.get(project=w.project).status == "OK",
    ),
    Action(
        "set a budget",
        "/p/{slug}/budgets",
        {
            "scope": "agent",
            "subject": "coder-3",
            "limit_usd": "12.50",
            "limit_tokens": "",
            "next": "settings",
        },
        lambda w: None,
        lambda w: Budget.objects.filter(project=w.project, subject="coder-3").exists(),
    ),
    Action(
        "set an agent overloaded",
        "/p/{slug}/agents/coder-3/availability",
        {"state": "overloaded"},
        lambda w: None,
        lambda w: w.agent("coder-3").overloaded,
    ),
    Action(
        "set one's notifications",
        "/p/{slug}/notifications/set",
        {"events": ["blocked", "quota"], "email": "1", "digest_minutes": "30"},
        lambda w: None,
        lambda w: NotificationPreference.objects.filter(
            project=w.project, events=["blocked", "quota"], email=True, digest_minutes=30
        ).exists(),
        needs=Membership.Role.VIEWER,
    ),
    # Last: the settings tests below read its data as ACTIONS[-1].
    Action(
        "edit the settings",
        "/p/{slug}/settings",
        {
            "max_coder_iterations": "10",
            "max_review_cycles": "7",
            "heartbeat_interval": "60",
            "lease_duration": "300",
            "lease_grace": "60",
            "coder_poll_interval": "30",
            "coder_max_wait": "300",
            "integration_branch": "integration",
            "escalation_webhook": "",
            "archive_after_days": "30",
            "watch_interval": "10",
            "review_churn_threshold": "8",
            "stall_timeout": "600",
            "max_stalls": "3",
        },
        lambda w: None,
        lambda w: config_of(Project.objects.get(pk=w.project.pk)).max_review_cycles == 7,
    ),
]


def applied_events(world: World) -> int:
    return Event.objects.filter(project=world.project, outcome=Event.Outcome.APPLIED).count()


@pytest.fixture(scope="class")
def prepared(django_db_setup, django_db_blocker) -> Iterator[dict[str, tuple[World, Any]]]:
    """Each action's world, its setup done, built once for the six roles that post it; each
    post, and all it writes, is rolled back after its test (tests/module_rows.py).
    Class-scoped: the rows are gone before the module's other tests (staff's cross-project
    inbox lists every project's)."""
    assert len({action.name for action in ACTIONS}) == len(ACTIONS)
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            built = {}
            for action in ACTIONS:
                world = sprint_world()
                built[action.name] = (world, action.setup(world))
        yield built


class TestActionRoleMatrix:
    """The six roles of each action share its world (`prepared`)."""

    @pytest.mark.parametrize("who", ROLES)
    @pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
    def test_action_role_matrix(self, db, prepared, action, who):
        world, made = prepared[action.name]
        client = client_for(world, who)
        path = action.path.format(slug=world.project.slug, prefix=getattr(made, "prefix", ""))
        before = applied_events(world)
        assert not action.applied(world)

        response = client.post(path, action.data)

        expected = expected_status(who, action.needs, action.ok)
        assert response.status_code == expected, response.content.decode()[:2000]
        if who != ANONYMOUS and expected == action.ok:
            assert action.applied(world), f"{who}: {action.name} did not happen"
            assert applied_events(world) > before or not action.audited
        else:
            assert not action.applied(world), f"{who}: {action.name} happened anyway"
            assert applied_events(world) == before
        if who == ANONYMOUS:
            assert response["Location"].startswith("/login/?next=")


# The drawer's actions on one task, posted from the board: a decision closes the drawer (the
# board comes back with ?done=, and board.js shows the next card waiting for a person), any
# other action opens it again on the task (issue 25).
DRAWER_DECISIONS = {
    "answer a BLOCKED task": True,
    "override block": True,
    "release a stuck claim": True,
    "cancel": True,
    "approve for merge": True,
    "reject at the human gate": True,
    "suspend": False,
    "resume a suspended task": False,
}


@pytest.mark.parametrize("name", DRAWER_DECISIONS)
def test_a_decision_from_the_drawer_leaves_it_closed(world, name):
    action = next(a for a in ACTIONS if a.name == name)
    action.setup(world)
    response = client_for(world, ADMIN).post(
        action.path.format(slug=world.project.slug), {**action.data, "next": "board"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert action.applied(world)
    shown = "done" if DRAWER_DECISIONS[name] else "task"
    assert response["Location"] == f"/p/{world.project.slug}/?{shown}=T-1"


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.name)
def test_actions_refuse_get(world, action):
    made = action.setup(world)
    path = action.path.format(slug=world.project.slug, prefix=getattr(made, "prefix", ""))
    response = client_for(world, ADMIN).get(path)
    if action.name == "edit the settings":
        assert response.status_code == 200  # the settings page itself
    else:
        assert response.status_code == 405
    assert not action.applied(world)


def test_missing_objects_are_404_not_500(world):
    client = client_for(world, ADMIN)
    slug = world.project.slug
    for path in (
        f"/p/{slug}/tasks/NOPE/release",
        f"/p/{slug}/tasks/NOPE/notes",
        f"/p/{slug}/sprints/sprint-9/checkpoint",
        f"/p/{slug}/goals/goal-9/abort",
        f"/p/{slug}/discoveries/disc-9/triage",
        f"/p/{slug}/agents/coder-9/keys",
        f"/p/{slug}/agents/coder-9/enabled",
        f"/p/{slug}/keys/abcdef/revoke",
        "/p/no-such-project/inbox",
    ):
        assert client.post(path, {"reason": "x", "answer": "x"}).status_code == 404, path


def test_another_projects_task_is_404_for_this_projects_admin(world):
    elsewhere = sprint_world()
    elsewhere.blocked("T-1")
    response = client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/tasks/T-1/release", {"answer": "Try"}
    )
    assert response.status_code == 404
    assert elsewhere.task("T-1").status == "BLOCKED"


# -- happy paths: what the person sees afterwards ----------------------------------------------


def test_answering_a_blocked_task_leaves_a_note_for_the_next_coder(world):
    world.blocked("T-1", sprint_scope="planned")
    client = client_for(world, ADMIN)
    response = client.post(
        f"/p/{world.project.slug}/tasks/T-1/release",
        {"answer": "Use 404 for foreign rows", "next": "board"},
    )
    assert response.status_code == 302
    # A decision: back on the board with the drawer closed (issue 25), the task named.
    assert response["Location"] == f"/p/{world.project.slug}/?done=T-1"
    task = world.task("T-1")
    assert (task.status, task.assigned_to, task.worktree, task.blocked_reason) == (
        "UNCLAIMED",
        "",
        "",
        "",
    )
    assert task.failed_by == ["coder-1"]  # kept (seed 000 BLOCKED → UNCLAIMED)
    note = HumanNote.objects.get(task=task)
    assert (note.message, note.author) == ("Use 404 for foreign rows", world.admin)
    event = Event.objects.filter(task=task, action="released").get()
    assert (event.actor_kind, event.actor_id) == ("human", world.admin.get_username())

    board = client.get(response["Location"])
    assert "T-1 answered and back in the queue" in board.content.decode()
    drawer = client.get(f"/p/{world.project.slug}/tasks/T-1/").content.decode()
    assert "Use 404 for foreign rows" in drawer


def test_rescope_from_the_inbox_creates_the_new_tasks(world):
    world.blocked("T-1", sprint_scope="planned")
    response = client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/tasks/T-1/rescope",
        {
            "next": "inbox",
            "reason": "Two concerns",
            "new_key": ["T-1a", "", "T-1b"],
            "new_description": ["Parse", "", "Render"],
            "new_done_when": ["parsed", "", "rendered"],
            "new_priority": ["1", "3", ""],
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/p/{world.project.slug}/inbox"
    old = world.task("T-1")
    assert (old.status, old.superseded_by) == ("SUPERSEDED", ["T-1a", "T-1b"])
    a, b = world.task("T-1a"), world.task("T-1b")
    assert (a.status, a.priority, a.supersedes, a.done_when) == ("UNCLAIMED", 1, "T-1", "parsed")
    assert (b.priority, b.spec_ref) == (old.priority, old.spec_ref)  # inherited


def test_override_block_takes_at_most_three_questions(world):
    """The form is validated by the API's own input (seed 000: 1–3 questions): a fourth is a
    400 naming the field, not silently dropped; blank lines are ignored."""
    world.claimed("T-1")
    client = client_for(world, ADMIN)
    refused = client.post(
        f"/p/{world.project.slug}/tasks/T-1/override-block",
        {"reason": "Stop", "questions": ["One?", "", "Two?", "Three?", "Four?"]},
    )
    assert refused.status_code == 400
    assert "questions" in refused.content.decode()
    assert world.task("T-1").status == "CLAIMED"
    client.post(
        f"/p/{world.project.slug}/tasks/T-1/override-block",
        {"reason": "Stop", "questions": ["One?", "", "Two?", "Three?"]},
    )
    task = world.task("T-1")
    assert (task.status, task.blocked_questions) == ("BLOCKED", ["One?", "Two?", "Three?"])


def test_limits_blank_means_the_project_setting(world):
    world.unclaimed("T-1", max_iterations=4)
    client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/tasks/T-1/limits",
        {"priority": "2", "max_iterations": "", "lease_duration_override": "900"},
    )
    task = world.task("T-1")
    assert (task.max_iterations, task.lease_duration_override, task.priority) == (None, 900, 2)
    assert task.needs_human_approval is False


def test_discovery_convert_needs_an_admin_but_a_member_may_reject(world):
    _discovery(world)
    member_client = client_for(world, MEMBER)
    slug = world.project.slug
    refused = member_client.post(
        f"/p/{slug}/discoveries/disc-1/triage", {"decision": "convert", "new_key": "T-9"}
    )
    assert refused.status_code == 403
    assert not Task.objects.filter(project=world.project, key="T-9").exists()
    rejected = member_client.post(
        f"/p/{slug}/discoveries/disc-1/triage", {"decision": "reject", "note": "Duplicate"}
    )
    assert rejected.status_code == 302
    disc = world.project.discoveries.get()
    assert (disc.triage, disc.triage_note) == ("rejected", "Duplicate")


# -- refusals: the page again, the error, the right status; never a 500 -------------------------


def test_a_protocol_refusal_renders_the_board_with_the_error(world):
    world.unclaimed("T-1", sprint_scope="planned")
    client = client_for(world, ADMIN)
    before = applied_events(world)
    response = client.post(
        f"/p/{world.project.slug}/tasks/T-1/abandon", {"reason": "Nope", "next": "board"}
    )
    assert response.status_code == 409  # invalid_transition: UNCLAIMED → ABANDONED
    html = response.content.decode()
    assert 'class="message error"' in html and "UNCLAIMED" in html
    assert 'id="board"' in html and 'data-open-task="T-1"' in html
    assert world.task("T-1").status == "UNCLAIMED"
    assert applied_events(world) == before
    # Recorded as a refused attempt (SPEC §4.1).
    assert Event.objects.filter(task=world.task("T-1"), outcome="rejected").exists()


def test_a_refusal_from_the_inbox_renders_the_inbox(world):
    world.blocked("T-1")
    world.blocked("T-2", coder="coder-2")
    client = client_for(world, ADMIN)
    client.post(f"/p/{world.project.slug}/tasks/T-1/abandon", {"reason": "Gone"})
    response = client.post(
        f"/p/{world.project.slug}/tasks/T-1/release", {"answer": "Try", "next": "inbox"}
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "Inbox of" in html and 'class="message error"' in html
    assert f'data-canonical-url="/p/{world.project.slug}/inbox"' in html  # reload reads
    assert 'data-task="T-2"' in html


@pytest.mark.parametrize(
    ("path", "data", "setup"),
    [
        ("tasks/T-1/release", {"answer": "   "}, "blocked"),
        ("tasks/T-1/abandon", {}, "blocked"),
        ("tasks/T-1/rescope", {"reason": "Split", "new_key": ["", ""]}, "blocked"),
        (
            "tasks/T-1/rescope",
            {"reason": "Split", "new_key": "x", "new_priority": "high"},
            "blocked",
        ),
        ("tasks/T-1/rescope", {"reason": "Split", "new_key": "bad key!"}, "blocked"),
        ("tasks/T-1/limits", {"priority": "9"}, "unclaimed"),
        ("tasks/T-1/limits", {"priority": "1", "max_iterations": "lots"}, "unclaimed"),
        ("tasks/T-1/limits", {"priority": "1", "max_iterations": "0"}, "unclaimed"),
        ("tasks/T-1/override-block", {"reason": ""}, "unclaimed"),
        ("tasks/T-1/notes", {"message": ""}, "unclaimed"),
        ("sprints/sprint-1/deadline", {"deadline": "next tuesday"}, None),
        ("sprints/sprint-1/deadline", {"deadline": "2001-01-01T00:00"}, None),
        ("sprints/sprint-1/checkpoint", {"reason": ""}, None),
        ("sprints/sprint-1/resume", {"decision": "Go"}, None),  # not at CHECKPOINT: 409
        ("discoveries/disc-1/triage", {"decision": "maybe"}, "discovery"),
        ("discoveries/disc-1/triage", {"decision": "convert", "new_key": ""}, "discovery"),
        ("agents/new", {"role": "wizard"}, None),
        ("agents/coder-1/enabled", {"enabled": "1"}, None),  # already enabled: 409
        ("resume", {}, None),  # not paused: 409
    ],
)
def test_bad_input_is_a_4xx_and_changes_nothing(world, path, data, setup):
    if setup == "blocked":
        world.blocked("T-1")
    elif setup == "unclaimed":
        world.unclaimed("T-1")
    elif setup == "discovery":
        _discovery(world)
    before = applied_events(world)
    tasks_before = list(Task.objects.filter(project=world.project).values())
    response = client_for(world, ADMIN).post(f"/p/{world.project.slug}/{path}", data)
    assert 400 <= response.status_code < 500, response.status_code
    assert 'class="message error"' in response.content.decode()
    assert applied_events(world) == before
    assert list(Task.objects.filter(project=world.project).values()) == tasks_before


def test_actions_need_the_csrf_token(world):
    world.blocked("T-1")
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.admin)
    path = f"/p/{world.project.slug}/tasks/T-1/release"
    assert client.post(path, {"answer": "Go"}).status_code == 403
    assert world.task("T-1").status == "BLOCKED"
    page = client.get(f"/p/{world.project.slug}/inbox")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = client.post(path, {"answer": "Go", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert world.task("T-1").status == "UNCLAIMED"


def test_next_cannot_redirect_elsewhere(world):
    world.unclaimed("T-1")
    response = client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/tasks/T-1/notes",
        {"message": "Hi", "next": "https://evil.example/"},
    )
    assert response["Location"] == f"/p/{world.project.slug}/?task=T-1"


def test_a_new_task_for_the_next_claim_after_release(world):
    """The answered task is what the next claim gets, and the note travels with it."""
    world.blocked("T-1", sprint_scope="planned")
    client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/tasks/T-1/release", {"answer": "Use the v2 endpoint"}
    )
    from boards.coordination.services.tasks import task_claim_next

    task = task_claim_next(
        project=world.project,
        agent=world.agent("coder-2"),
        now=timezone.now() + timedelta(seconds=1),
        base_commit="base0002",
    )
    assert task.key == "T-1"
    assert [n.message for n in task.human_notes.all()] == ["Use the v2 endpoint"]
