"""Human oversight (SPEC §7, §12; seed 004): every intervention is a permission-checked,
audited service, and the board stays valid after each one.

The human approval gate, suspend / resume, cancel, releasing a stuck claim, per-task limits,
project pause, config, discovery triage, disabling an agent, the sprint deadline and the inbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services import agent_heartbeat, agent_register, agent_set_enabled
from boards import protocol as p
from boards.board.selectors.inbox import inbox as read_inbox
from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.records import Anomaly, Event
from boards.coordination.models.tasks import Discovery, HumanNote, Review, Task
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import projects, records, reviews, sprints, tasks
from boards.coordination.services import tasks as task_services
from boards.coordination.services.actors import SYSTEM
from boards.errors import (
    Conflict,
    Forbidden,
    InvalidTransition,
    LeaseLost,
    ProtocolValidationError,
    StopWork,
)
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    goal_world,
    row_snapshot,
)
from tests.factories import ProjectFactory, member, register
from tests.lifecycle import World
from tests.module_rows import shared_rows

pytestmark = pytest.mark.django_db


def _actions(world, key: str, since: int = 0) -> list[tuple[str, str, str, str]]:
    """(action, actor kind, from, to) of the task's applied events after event id `since`."""
    return [
        (e.action, e.actor_kind, e.from_status, e.to_status)
        for e in applied_events(world.project, task=world.task(key))
        if e.pk > since
    ]


def _last_event_id(world) -> int:
    return (
        Event.objects.filter(project=world.project).order_by("-pk").values_list("pk", flat=True)[0]
    )


def _claim_next(world, coder: str) -> Task | None:
    return task_services.task_claim_next(
        project=world.project, agent=world.agent(coder), now=world.tick(), base_commit="base0002"
    )


def _heartbeat_refusal(world, agent_id: str) -> LeaseLost:
    with pytest.raises(LeaseLost) as caught:
        agent_heartbeat(agent=world.agent(agent_id), now=world.tick())
    assert caught.value.details["exit"] == 42
    return caught.value


def _awaiting(world, key: str, **fields) -> Task:
    """A task whose reviewers approved and which now waits for a human."""
    fields.setdefault("needs_human_approval", True)
    world.under_review(key, **fields)
    task = world.verdict(key, "APPROVED")
    assert task.status == "READY_FOR_REVIEW"
    assert awaiting_human_approval(task)
    return task


# ---------------------------------------------------------------------------------------------
# who may intervene
# ---------------------------------------------------------------------------------------------


def _interventions(world):
    """Each human-only action on a task that it would otherwise succeed on."""
    return {
        "release_claim": lambda actor: tasks.task_release_claim(
            task=world.task("t-claimed"), actor=actor, reason="Stuck", now=world.tick()
        ),
        "cancel": lambda actor: tasks.task_cancel(
            task=world.task("t-claimed"), actor=actor, reason="Not needed", now=world.tick()
        ),
        "suspend": lambda actor: tasks.task_suspend(
            task=world.task("t-claimed"), actor=actor, reason="Hold", now=world.tick()
        ),
        "approve": lambda actor: reviews.task_human_approve(
            task=world.task("t-gated"), actor=actor, now=world.tick()
        ),
        "reject": lambda actor: reviews.task_human_reject(
            task=world.task("t-gated"), actor=actor, reason="No", now=world.tick()
        ),
        "limits": lambda actor: tasks.task_set_limits(
            task=world.task("t-claimed"), actor=actor, now=world.tick(), priority=1
        ),
        "pause": lambda actor: projects.project_pause(
            project=world.project, actor=actor, reason="Hold", now=world.tick()
        ),
        "config": lambda actor: projects.config_update(
            project=world.project, actor=actor, now=world.tick(), max_review_cycles=3
        ),
        "convert": lambda actor: records.discovery_triage(
            discovery=Discovery.objects.get(project=world.project),
            actor=actor,
            decision="convert",
            task={"key": "t-new"},
            now=world.tick(),
        ),
        "disable": lambda actor: agent_set_enabled(
            agent=world.agent("coder-2"), actor=actor, enabled=False, now=world.tick()
        ),
    }


ACTIONS = (
    "release_claim",
    "cancel",
    "suspend",
    "approve",
    "reject",
    "limits",
    "pause",
    "config",
    "convert",
    "disable",
)


@pytest.fixture(scope="class")
def intervention_world(django_db_setup, django_db_blocker) -> Iterator[World]:
    """A claimed task, a task awaiting a human and a discovery, built once for the 60 refused
    interventions; each refusal, and all it writes, is rolled back after its test
    (tests/module_rows.py). Class-scoped: the rows are gone before the module's
    other tests (the cross-project inbox counts every project's)."""
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            world = goal_world()
            world.claimed("t-claimed")
            _awaiting(world, "t-gated", coder="coder-2")
            _immediate(world)
        yield world


class TestRefusedInterventions:
    """The refusals share one world (`intervention_world`)."""

    @pytest.mark.parametrize("action", ACTIONS)
    @pytest.mark.parametrize(
        "who", ["viewer", "member", "other_admin", "planner", "coder", "system"]
    )
    def test_only_admins_of_the_project_intervene(self, db, intervention_world, action, who):
        world = intervention_world
        actor = {
            "viewer": lambda: member(world.project, "viewer"),
            "member": lambda: member(world.project, "member"),
            "other_admin": lambda: member(ProjectFactory(), "admin"),
            "planner": lambda: world.planner,
            "coder": lambda: world.coder,
            "system": lambda: SYSTEM,
        }[who]()

        def rows() -> dict:
            return {
                "claimed": row_snapshot(world.task("t-claimed")),
                "gated": row_snapshot(world.task("t-gated")),
                "project": row_snapshot(world.project),
                "config": row_snapshot(world.project.config),
                "discovery": row_snapshot(Discovery.objects.get(project=world.project)),
                "coder-2": row_snapshot(world.agent("coder-2")),
            }

        before = rows()
        events = Event.objects.filter(project=world.project).count()

        with pytest.raises(PermissionDenied):
            _interventions(world)[action](actor)

        assert rows() == before
        # A role refusal is logged like every other refusal (one rejected attempt, nothing else).
        new = Event.objects.filter(project=world.project).order_by("id")[events:]
        assert [(e.outcome, e.data["code"], e.action.endswith("_failed")) for e in new] == [
            (Event.Outcome.REJECTED, "permission_denied", True)
        ]


def test_site_staff_act_as_admins(world):
    world.unclaimed("t1")
    staff = member(ProjectFactory(), "viewer", is_staff=True)
    task = tasks.task_suspend(task=world.task("t1"), actor=staff, reason="Hold", now=world.tick())
    assert task.suspended_by == staff.username


# ---------------------------------------------------------------------------------------------
# the human approval gate (seed 004 APPROVAL_REQUIRED)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("criticality", "given", "expected"),
    [
        ("security-sensitive", None, True),
        ("complex", None, False),
        ("standard", None, False),
        ("standard", True, True),
        ("security-sensitive", False, False),
    ],
)
def test_the_gate_is_on_by_default_for_security_sensitive_work(world, criticality, given, expected):
    fields = {"criticality": criticality}
    if given is not None:
        fields["needs_human_approval"] = given
    assert world.draft("t1", **fields).needs_human_approval is expected


def test_a_security_sensitive_task_waits_for_a_human_before_it_can_merge(world):
    world.ready_for_review("t1", criticality="security-sensitive")
    world.claim_review("t1", "code-reviewer-1")
    world.claim_review("t1", "code-reviewer-3")
    world.verdict("t1", "APPROVED", reviewer="code-reviewer-1")
    since = _last_event_id(world)

    task = world.verdict("t1", "APPROVED", reviewer="code-reviewer-3")

    # Enough reviewers approved, but the task is not APPROVED: it waits for a human.
    assert task.status == "READY_FOR_REVIEW"
    assert task.approved_by == []
    assert awaiting_human_approval(task)
    assert _actions(world, "t1", since) == [
        ("approved", "agent", "", ""),
        ("awaiting_human_approval", "system", "", ""),
    ]
    assert world.agent("coder-1").status == "WAITING"  # the coder keeps waiting
    assert_valid(world.project, now=world.now)
    # Merge without the human is impossible: the task is not APPROVED.
    assert_refused_unchanged(
        lambda: task_services.task_report_merge(
            task=world.task("t1"),
            agent=world.agent("code-reviewer-3"),
            merge_commit="merge001",
            now=world.tick(),
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=InvalidTransition,
        code="invalid_transition",
    )
    # Nor can another reviewer take a slot in the round.
    assert_refused_unchanged(
        lambda: world.claim_review("t1", "code-reviewer-2"),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )

    since = _last_event_id(world)
    task = reviews.task_human_approve(
        task=world.task("t1"), actor=world.admin, note="Security review done", now=world.tick()
    )

    assert task.status == "APPROVED"
    assert sorted(task.approved_by) == ["code-reviewer-1", "code-reviewer-3"]
    (event,) = applied_events(world.project, task=task, pk__gt=since)
    assert (event.action, event.actor_kind, event.actor_id) == (
        "human_approved",
        "human",
        world.admin.username,
    )
    assert (event.from_status, event.to_status, event.detail) == (
        "READY_FOR_REVIEW",
        "APPROVED",
        "Security review done",
    )
    assert not awaiting_human_approval(task)
    assert world.agent("coder-1").status == "IDLE"
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert_valid(world.project, now=world.now)
    merged = task_services.task_report_merge(
        task=task, agent=world.agent("code-reviewer-3"), merge_commit="merge001", now=world.tick()
    )
    assert merged.status == "MERGED"
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("criticality", ["standard", "complex"])
def test_without_the_gate_the_reviewers_approve_alone(world, criticality):
    world.ready_for_review("t1", criticality=criticality)
    for reviewer in ("code-reviewer-1", "code-reviewer-2")[: 1 if criticality == "standard" else 2]:
        world.claim_review("t1", reviewer)
        task = world.verdict("t1", "APPROVED", reviewer=reviewer)
    assert task.status == "APPROVED"
    assert not applied_events(world.project, task=task, action="awaiting_human_approval")


def test_a_human_rejection_counts_a_review_cycle(world):
    _awaiting(world, "t1")
    since = _last_event_id(world)

    task = reviews.task_human_reject(
        task=world.task("t1"), actor=world.admin, reason="Leaks the token in logs", now=world.tick()
    )

    assert task.status == "REJECTED"
    assert task.rejection_reason == "Leaks the token in logs"
    assert (task.review_cycles_current, task.review_cycles_total) == (1, 1)
    assert task.assigned_to == "coder-1"
    assert _actions(world, "t1", since) == [
        ("human_rejected", "human", "READY_FOR_REVIEW", "REJECTED")
    ]
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert_valid(world.project, now=world.now)
    # The coder reworks it as after any rejection, and the gate holds the next round too.
    world.claim("t1")
    assert world.task("t1").iteration == 2
    world.submit("t1", commit="c0ffee02")
    world.claim_review("t1", "code-reviewer-2")
    assert world.verdict("t1", "APPROVED", reviewer="code-reviewer-2").status == "READY_FOR_REVIEW"
    assert awaiting_human_approval(world.task("t1"))
    assert_valid(world.project, now=world.now)


def test_a_human_rejection_can_hit_the_review_deadlock(world):
    _awaiting(world, "t1", max_review_cycles=1)

    task = reviews.task_human_reject(
        task=world.task("t1"), actor=world.admin, reason="Wrong approach", now=world.tick()
    )

    assert task.status == "BLOCKED"
    assert "Review deadlock" in task.blocked_reason
    assert task.failed_by == ["coder-1"]
    assert Anomaly.objects.filter(task=task, type="review_deadlock").exists()
    assert [e.action for e in applied_events(world.project, task=task)][-2:] == [
        "human_rejected",
        "blocked",
    ]
    _heartbeat_refusal(world, "coder-1")  # its coder is told: exit 42
    assert_valid(world.project, now=world.now)
    inbox = read_inbox(project=world.project, now=world.now)
    assert [(i.key, i.limit_blocked) for i in inbox["blocked"]] == [("t1", True)]


@pytest.mark.parametrize("call", ["approve", "reject"])
def test_the_gate_answers_only_a_task_awaiting_it(world, call):
    world.ready_for_review("t-reviewing", needs_human_approval=True)
    world.claim_review("t-reviewing", "code-reviewer-1")  # under review, no approval yet
    world.ready_for_review("t-ungated", coder="coder-2")
    world.claim_review("t-ungated", "code-reviewer-2")
    world.verdict("t-ungated", "APPROVED", reviewer="code-reviewer-2")  # APPROVED, no gate
    world.unclaimed("t-unclaimed", needs_human_approval=True)

    def act(key):
        task = world.task(key)
        if call == "approve":
            return reviews.task_human_approve(task=task, actor=world.admin, now=world.tick())
        return reviews.task_human_reject(
            task=task, actor=world.admin, reason="No", now=world.tick()
        )

    for key, exc_type, code in (
        ("t-reviewing", Conflict, "conflict"),
        ("t-ungated", InvalidTransition, "invalid_transition"),
        ("t-unclaimed", InvalidTransition, "invalid_transition"),
    ):
        assert_refused_unchanged(
            lambda key=key: act(key),
            project=world.project,
            obj=world.task(key),
            exc_type=exc_type,
            code=code,
        )


def test_the_gate_cannot_be_lifted_while_a_task_waits_on_it(world):
    _awaiting(world, "t1")
    exc, _ = assert_refused_unchanged(
        lambda: tasks.task_set_limits(
            task=world.task("t1"), actor=world.admin, now=world.tick(), needs_human_approval=False
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    assert exc.details["awaiting_human_approval"] is True


# ---------------------------------------------------------------------------------------------
# suspend / resume (seed 004 SUSPENDED, an overlay)
# ---------------------------------------------------------------------------------------------


def test_a_suspended_task_cannot_be_claimed(world):
    world.unclaimed("t1", priority=1)

    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Legal review", now=world.tick()
    )

    assert (task.status, task.suspended_reason, task.suspended_by) == (
        "UNCLAIMED",
        "Legal review",
        world.admin.username,
    )
    assert task.suspended_at == world.now
    (event,) = applied_events(world.project, task=task, action="suspended")
    assert (event.actor_kind, event.detail) == ("human", "Legal review")
    assert_valid(world.project, now=world.now)
    assert _claim_next(world, "coder-1") is None
    exc, _ = assert_refused_unchanged(
        lambda: world.claim("t1"),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )
    assert exc.details["suspended"] is True
    work = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-1"), now=world.now
    )
    assert work["work"] is False

    task = tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    assert (task.status, task.suspended_at, task.suspended_reason) == ("UNCLAIMED", None, "")
    assert [e.action for e in applied_events(world.project, task=task)][-1] == "resumed"
    assert _claim_next(world, "coder-1").key == "t1"
    assert_valid(world.project, now=world.now)


def test_suspending_a_claimed_task_returns_it_to_the_queue_and_stops_its_coder(world):
    world.claimed("t1")
    world.unclaimed("t2")
    since = _last_event_id(world)

    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Spec under review", now=world.tick()
    )

    # Two legitimate edges, each with its event, then the overlay.
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
        ("suspended", "human", "", ""),
    ]
    assert (task.status, task.assigned_to, task.worktree) == ("UNCLAIMED", "", "")
    assert task.failed_by == []  # a human's decision is not the coder's failure
    assert task.is_suspended
    assert_valid(world.project, now=world.now)
    lost = _heartbeat_refusal(world, "coder-1")
    assert lost.details["reason"] == "suspended: Spec under review"
    # The coder is free: after its restart it takes other work, never the suspended task.
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=world.tick(400))
    assert _claim_next(world, "coder-1").key == "t2"
    assert_valid(world.project, now=world.now)


def test_suspending_a_task_under_review_stops_its_reviewer(world):
    world.under_review("t1")
    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick()
    )

    assert task.status == "READY_FOR_REVIEW"
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert world.reviewer.status == "IDLE"
    _heartbeat_refusal(world, "code-reviewer-1")
    assert_valid(world.project, now=world.now)
    exc, _ = assert_refused_unchanged(
        lambda: world.claim_review("t1", "code-reviewer-2"),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    assert exc.details["suspended"] is True
    assert (
        work_for_role(
            project=world.project,
            role="code_reviewer",
            agent=world.agent("code-reviewer-2"),
            now=world.now,
        )["work"]
        is False
    )

    tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    world.claim_review("t1", "code-reviewer-2")
    assert world.verdict("t1", "APPROVED", reviewer="code-reviewer-2").status == "APPROVED"
    assert_valid(world.project, now=world.now)


def test_a_suspended_task_awaiting_approval_waits_for_its_resume(world):
    _awaiting(world, "t1")
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    exc, _ = assert_refused_unchanged(
        lambda: reviews.task_human_approve(
            task=world.task("t1"), actor=world.admin, now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    assert exc.details["suspended"] is True
    tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())
    task = reviews.task_human_approve(task=world.task("t1"), actor=world.admin, now=world.tick())
    assert task.status == "APPROVED"


def test_resuming_a_task_imported_suspended_while_claimed_returns_it_to_the_queue(world):
    world.claimed("t1")
    # A state.yaml may carry a CLAIMED task with the overlay (the services never leave one).
    Task.objects.filter(pk=world.task("t1").pk).update(
        suspended_at=world.now, suspended_by="someone", suspended_reason="Imported"
    )
    since = _last_event_id(world)

    task = tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    assert (task.status, task.assigned_to, task.is_suspended) == ("UNCLAIMED", "", False)
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
        ("resumed", "human", "", ""),
    ]
    _heartbeat_refusal(world, "coder-1")
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("status", ["MERGED", "ABANDONED", "SUPERSEDED"])
def test_a_terminal_task_cannot_be_suspended(world, status):
    world.drive_to(status, "t1")
    assert_refused_unchanged(
        lambda: tasks.task_suspend(
            task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )


def test_suspending_twice_and_resuming_a_running_task_conflict(world):
    world.unclaimed("t1")
    assert_refused_unchanged(
        lambda: tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick()),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    assert_refused_unchanged(
        lambda: tasks.task_suspend(
            task=world.task("t1"), actor=world.admin, reason="Again", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# cancel = override block + abandon
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", ["DRAFT", "UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED"]
)
def test_cancel_is_override_block_then_abandon(world, status):
    world.drive_to(status, "t1")
    since = _last_event_id(world)

    task = tasks.task_cancel(
        task=world.task("t1"), actor=world.admin, reason="Out of scope", now=world.tick()
    )

    assert task.status == "ABANDONED"
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", status, "BLOCKED"),
        ("abandoned", "human", "BLOCKED", "ABANDONED"),
    ]
    assert all("Out of scope" in e.detail for e in applied_events(world.project, task=task)[-2:])
    assert_valid(world.project, now=world.now)


def test_cancelling_a_claimed_task_stops_its_coder(world):
    world.claimed("t1")
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    lost = _heartbeat_refusal(world, "coder-1")
    assert lost.details["reason"] == f"cancelled by {world.admin.username}: No"


def test_cancelling_a_blocked_task_abandons_it(world):
    world.blocked("t1")
    since = _last_event_id(world)
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    assert _actions(world, "t1", since) == [("abandoned", "human", "BLOCKED", "ABANDONED")]


def test_cancelling_a_suspended_task_lifts_the_overlay(world):
    world.unclaimed("t1")
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    task = tasks.task_cancel(
        task=world.task("t1"), actor=world.admin, reason="No", now=world.tick()
    )
    assert (task.status, task.is_suspended) == ("ABANDONED", False)
    assert_valid(world.project, now=world.now)


def test_cancelling_the_last_planned_task_completes_the_sprint(world):
    world.merged("t0")
    world.unclaimed("t1")
    sprints.sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project),
        planned=["t0", "t1"],
        now=world.tick(),
    )
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    assert world.project.sprints.get().status == "COMPLETED"


@pytest.mark.parametrize("status", ["MERGED", "ABANDONED", "SUPERSEDED"])
def test_a_terminal_task_cannot_be_cancelled(world, status):
    world.drive_to(status, "t1")
    assert_refused_unchanged(
        lambda: tasks.task_cancel(
            task=world.task("t1"), actor=world.admin, reason="No", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=InvalidTransition,
        code="invalid_transition",
    )


# ---------------------------------------------------------------------------------------------
# releasing a stuck claim
# ---------------------------------------------------------------------------------------------


def test_a_released_claim_is_taken_over_at_once(world):
    world.claimed("t1")
    since = _last_event_id(world)

    task = tasks.task_release_claim(
        task=world.task("t1"), actor=world.admin, reason="coder-1 is looping", now=world.tick()
    )

    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
    ]
    assert (task.status, task.assigned_to, task.worktree, task.lease_expires) == (
        "UNCLAIMED",
        "",
        "",
        None,
    )
    assert HumanNote.objects.get(task=task).message.endswith("coder-1 is looping")
    assert world.coder.status == "IDLE" and world.coder.current_task is None
    assert_valid(world.project, now=world.now)
    # No lease to wait out: another coder claims it now.
    taken = _claim_next(world, "coder-2")
    assert (taken.key, taken.assigned_to, taken.iteration) == ("t1", "coder-2", 1)
    lost = _heartbeat_refusal(world, "coder-1")
    assert "coder-1 is looping" in lost.details["reason"]
    assert_valid(world.project, now=world.now)


def test_releasing_a_review_claim_makes_the_review_claimable(world):
    world.under_review("t1")
    since = _last_event_id(world)

    task = tasks.task_release_claim(
        task=world.task("t1"), actor=world.admin, reason="Reviewer stuck", now=world.tick()
    )

    assert task.status == "READY_FOR_REVIEW"
    assert _actions(world, "t1", since) == [("review_claim_released", "human", "", "")]
    assert world.reviewer.status == "IDLE"
    _heartbeat_refusal(world, "code-reviewer-1")
    assert_valid(world.project, now=world.now)
    world.claim_review("t1", "code-reviewer-2")
    assert world.verdict("t1", "APPROVED", reviewer="code-reviewer-2").status == "APPROVED"
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("status", ["DRAFT", "UNCLAIMED", "READY_FOR_REVIEW", "BLOCKED", "MERGED"])
def test_releasing_when_nothing_is_claimed_conflicts(world, status):
    world.drive_to(status, "t1")  # READY_FOR_REVIEW without a review claim
    exc, _ = assert_refused_unchanged(
        lambda: tasks.task_release_claim(
            task=world.task("t1"), actor=world.admin, reason="Stuck", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )
    assert "nothing is claimed" in exc.message


# ---------------------------------------------------------------------------------------------
# per-task limits
# ---------------------------------------------------------------------------------------------


def test_limits_are_set_with_an_event_listing_the_changes(world):
    world.claimed("t1", max_iterations=4)

    task = tasks.task_set_limits(
        task=world.task("t1"),
        actor=world.admin,
        now=world.tick(),
        priority=1,
        max_iterations=None,
        max_review_cycles=2,
        lease_duration_override=900,
        needs_human_approval=True,
    )

    assert (task.priority, task.max_iterations, task.max_review_cycles) == (1, None, 2)
    assert (task.lease_duration_override, task.needs_human_approval) == (900, True)
    (event,) = applied_events(world.project, task=task, action="limits_set")
    assert event.actor_kind == "human"
    assert "priority 3 → 1" in event.detail
    assert "max_iterations 4 → project default" in event.detail
    assert event.data["changes"]["max_review_cycles"] == {"old": None, "new": 2}
    assert_valid(world.project, now=world.now)
    # Setting what is already set changes nothing and writes nothing.
    tasks.task_set_limits(task=task, actor=world.admin, now=world.tick(), priority=1)
    assert len(applied_events(world.project, task=task, action="limits_set")) == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_iteration": 3}, "max_iteration"),
        ({"priority": 0}, "priority"),
        ({"priority": 6}, "priority"),
        ({"priority": True}, "priority"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_review_cycles": "3"}, "max_review_cycles"),
        ({"lease_duration_override": -5}, "lease_duration_override"),
        ({"needs_human_approval": "yes"}, "needs_human_approval"),
        ({}, "limits"),
    ],
)
def test_bad_limits_are_refused_naming_the_field(world, changes, field):
    world.unclaimed("t1")
    exc, _ = assert_refused_unchanged(
        lambda: tasks.task_set_limits(
            task=world.task("t1"), actor=world.admin, now=world.tick(), **changes
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=ProtocolValidationError,
        logged=False,
    )
    assert exc.field == field


def test_a_terminal_tasks_limits_do_not_change(world):
    world.merged("t1")
    assert_refused_unchanged(
        lambda: tasks.task_set_limits(
            task=world.task("t1"), actor=world.admin, now=world.tick(), priority=1
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# project pause / resume
# ---------------------------------------------------------------------------------------------


def test_pause_stops_claims_and_heartbeats_answer_stop(world):
    world.claimed("t1")
    world.unclaimed("t2")

    project = projects.project_pause(
        project=world.project, actor=world.admin, reason="Budget review", now=world.tick()
    )

    assert (project.paused_at, project.paused_reason) == (world.now, "Budget review")
    (event,) = applied_events(world.project, action="project_paused")
    assert (event.actor_kind, event.detail) == ("human", "Budget review")
    assert_valid(world.project, now=world.now)
    with pytest.raises(StopWork) as caught:
        _claim_next(world, "coder-2")
    assert (caught.value.code, caught.value.details["exit"]) == ("paused", 42)
    beat = agent_heartbeat(agent=world.coder, now=world.tick())
    assert beat.stop.code == "paused"
    assert_refused_unchanged(
        lambda: projects.project_pause(
            project=Project.objects.get(pk=world.project.pk),
            actor=world.admin,
            reason="Again",
            now=world.tick(),
        ),
        project=world.project,
        obj=Project.objects.get(pk=world.project.pk),
        exc_type=Conflict,
    )

    project = projects.project_resume(project=world.project, actor=world.admin, now=world.tick())

    assert (project.paused_at, project.paused_reason) == (None, "")
    assert [e.action for e in applied_events(world.project)][-1] == "project_resumed"
    assert _claim_next(world, "coder-2").key == "t2"
    assert agent_heartbeat(agent=world.coder, now=world.tick()).stop is None
    assert_valid(world.project, now=world.now)


def test_resuming_a_running_project_conflicts(world):
    assert_refused_unchanged(
        lambda: projects.project_resume(project=world.project, actor=world.admin, now=world.tick()),
        project=world.project,
        obj=Project.objects.get(pk=world.project.pk),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


def test_config_is_edited_with_an_event_old_to_new(world):
    config = projects.config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        max_review_cycles=3,
        escalation_webhook="https://hooks.example.test/liza",
        integration_branch="integration",  # unchanged: not in the event
    )

    assert (config.max_review_cycles, config.escalation_webhook) == (
        3,
        "https://hooks.example.test/liza",
    )
    (event,) = applied_events(world.project, action="config_updated")
    assert event.actor_kind == "human"
    # The webhook's URL stays out of the log's text (issue #27): its data has it redacted.
    assert event.detail == "max_review_cycles 5 → 3, escalation_webhook changed"
    assert event.data["changes"]["escalation_webhook"] == {
        "old": "",
        "new": "https://hooks.example.test/…",
    }
    assert world.project.config.max_review_cycles == 3
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize(
    ("fields", "field", "exc_type"),
    [
        ({"lease_duration": 30}, "lease_duration", ProtocolValidationError),  # ≤ heartbeat_interval
        ({"max_review_cycles": 0}, "max_review_cycles", ProtocolValidationError),
        ({"heartbeat_interval": "soon"}, "heartbeat_interval", ProtocolValidationError),
        ({"escalation_webhook": "not a url"}, "escalation_webhook", ProtocolValidationError),
        ({"lease_duraton": 600}, "lease_duraton", ProtocolValidationError),
        ({"lease_grace": True}, "lease_grace", ProtocolValidationError),
        ({}, "config", ProtocolValidationError),
    ],
)
def test_config_rules_refuse_naming_the_field(world, fields, field, exc_type):
    before = row_snapshot(world.project.config)
    with pytest.raises(exc_type) as caught:
        projects.config_update(project=world.project, actor=world.admin, now=world.tick(), **fields)
    # One error type whatever refused it (the model's rules or the service's): 400 naming it.
    assert field in caught.value.details["fields"]
    assert row_snapshot(world.project.config) == before
    assert not applied_events(world.project, action="config_updated")


# ---------------------------------------------------------------------------------------------
# discovery triage
# ---------------------------------------------------------------------------------------------


def _immediate(world) -> Discovery:
    return records.discovery_create(
        project=world.project,
        actor=world.coder,
        description="OrderAPI has no idempotency keys",
        severity="high",
        urgency="immediate",
        now=world.tick(),
    )


@pytest.mark.parametrize(("decision", "triage"), [("defer", "deferred"), ("reject", "rejected")])
def test_members_defer_or_reject_a_discovery(world, decision, triage):
    world.unclaimed("t1")  # work under way: the open goal alone does not wake the planner
    discovery = _immediate(world)
    assert work_for_role(project=world.project, role="planner", agent=None, now=world.now)["work"]
    person = member(world.project, "member")

    discovery = records.discovery_triage(
        discovery=discovery, actor=person, decision=decision, note="Next sprint", now=world.tick()
    )

    assert (discovery.triage, discovery.triage_note, discovery.converted_to_task) == (
        triage,
        "Next sprint",
        "",
    )
    (event,) = applied_events(world.project, action=f"discovery_{triage}")
    assert (event.actor_id, event.detail) == (person.username, f"disc-1 {triage}: Next sprint")
    assert read_inbox(project=world.project, now=world.now)["discoveries"] == []
    # The planner is no longer woken for it.
    assert not work_for_role(project=world.project, role="planner", agent=None, now=world.now)[
        "work"
    ]
    assert_valid(world.project, now=world.now)


def test_an_admin_converts_a_discovery_into_a_draft_task(world):
    discovery = _immediate(world)
    (item,) = read_inbox(project=world.project, now=world.now)["discoveries"]
    assert item.discovery == discovery

    discovery = records.discovery_triage(
        discovery=discovery,
        actor=world.admin,
        decision="convert",
        task={"key": "t-idem", "spec_ref": "specs/idem.md", "priority": 2},
        now=world.tick(),
    )

    task = world.task("t-idem")
    assert (task.status, task.description, task.priority) == (
        "DRAFT",
        "OrderAPI has no idempotency keys",
        2,
    )
    assert (discovery.triage, discovery.converted_to_task) == ("converted", "t-idem")
    assert [(e.action, e.actor_kind) for e in applied_events(world.project, task=task)] == [
        ("created", "human"),
        ("discovery_converted", "human"),
    ]
    assert_valid(world.project, now=world.now)
    # Settled: neither converted again nor deferred.
    for decision, extra in (("convert", {"task": {"key": "t-2"}}), ("defer", {})):
        assert_refused_unchanged(
            lambda decision=decision, extra=extra: records.discovery_triage(
                discovery=discovery,
                actor=world.admin,
                decision=decision,
                now=world.tick(),
                **extra,
            ),
            project=world.project,
            obj=Discovery.objects.get(pk=discovery.pk),
            exc_type=Conflict,
        )


def test_converting_needs_an_admin_and_a_task_key(world):
    discovery = _immediate(world)
    with pytest.raises(PermissionDenied):
        records.discovery_triage(
            discovery=discovery,
            actor=member(world.project, "member"),
            decision="convert",
            task={"key": "t-x"},
            now=world.tick(),
        )
    for task, field in (
        (None, "task"),
        ({}, "task.key"),
        ({"key": "t-x", "colour": "red"}, "task.colour"),
    ):
        with pytest.raises(ProtocolValidationError) as caught:
            records.discovery_triage(
                discovery=discovery,
                actor=world.admin,
                decision="convert",
                task=task,
                now=world.tick(),
            )
        assert caught.value.field == field
    with pytest.raises(ProtocolValidationError) as caught:
        records.discovery_triage(
            discovery=discovery, actor=world.admin, decision="forget", now=world.tick()
        )
    assert caught.value.field == "decision"
    assert Discovery.objects.get(pk=discovery.pk).triage == "open"
    assert not Task.objects.filter(project=world.project, key="t-x").exists()


def test_a_deferred_discovery_may_still_be_converted(world):
    discovery = records.discovery_triage(
        discovery=_immediate(world), actor=world.admin, decision="defer", now=world.tick()
    )
    discovery = records.discovery_triage(
        discovery=discovery,
        actor=world.admin,
        decision="convert",
        task={"key": "t-later"},
        now=world.tick(),
    )
    assert (discovery.triage, discovery.converted_to_task) == ("converted", "t-later")


# ---------------------------------------------------------------------------------------------
# disabling an agent
# ---------------------------------------------------------------------------------------------


def test_disabling_a_coder_takes_its_claim_back(world):
    world.claimed("t1")
    since = _last_event_id(world)

    agent = agent_set_enabled(agent=world.coder, actor=world.admin, enabled=False, now=world.tick())

    assert (agent.enabled, agent.status, agent.current_task) == (False, "IDLE", None)
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
    ]
    (event,) = applied_events(world.project, action="agent_disabled")
    assert (event.actor_kind, event.detail) == ("human", "coder-1 disabled; released t1")
    assert_valid(world.project, now=world.now)
    # Its requests are refused; another coder takes the task at once.
    with pytest.raises(Forbidden):
        agent_heartbeat(agent=world.coder, now=world.tick())
    with pytest.raises(PermissionDenied):
        _claim_next(world, "coder-1")
    assert _claim_next(world, "coder-2").key == "t1"
    assert_refused_unchanged(
        lambda: agent_set_enabled(
            agent=world.coder, actor=world.admin, enabled=False, now=world.tick()
        ),
        project=world.project,
        obj=world.coder,
        exc_type=Conflict,
    )

    agent = agent_set_enabled(agent=world.coder, actor=world.admin, enabled=True, now=world.tick())

    assert agent.enabled
    assert [e.action for e in applied_events(world.project)][-1] == "agent_enabled"
    world.unclaimed("t2")
    assert _claim_next(world, "coder-1").key == "t2"
    assert agent_heartbeat(agent=world.coder, now=world.tick()).task.key == "t2"
    assert_valid(world.project, now=world.now)


def test_disabling_a_reviewer_releases_only_its_own_review(world):
    world.ready_for_review("t1", criticality="complex")
    world.claim_review("t1", "code-reviewer-1")
    world.claim_review("t1", "code-reviewer-2")

    agent_set_enabled(agent=world.reviewer, actor=world.admin, enabled=False, now=world.tick())

    open_reviews = Review.objects.filter(task__key="t1", closed_at__isnull=True)
    assert [r.reviewer for r in open_reviews] == ["code-reviewer-2"]
    assert world.reviewer.status == "IDLE"
    assert world.agent("code-reviewer-2").status == "REVIEWING"
    assert_valid(world.project, now=world.now)


# ---------------------------------------------------------------------------------------------
# the sprint deadline
# ---------------------------------------------------------------------------------------------


def _sprint(world):
    world.unclaimed("t1")
    return sprints.sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project),
        planned=["t1"],
        deadline=world.now + timedelta(days=1),
        now=world.tick(),
    )


def test_the_deadline_moves_with_an_event_old_to_new(world):
    sprint = _sprint(world)
    old, new = sprint.deadline, world.now + timedelta(days=3)

    sprint = sprints.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=new, now=world.tick()
    )

    assert sprint.deadline == new
    (event,) = applied_events(world.project, action="sprint_deadline_set")
    assert event.actor_kind == "human"
    assert event.detail == (
        f"sprint-1 deadline {p.format_timestamp(old)} → {p.format_timestamp(new)}"
    )
    sprint = sprints.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=None, now=world.tick()
    )
    assert sprint.deadline is None
    assert_valid(world.project, now=world.now)


def test_a_deadline_in_the_past_or_of_a_closed_sprint_is_refused(world):
    sprint = _sprint(world)
    with pytest.raises(ProtocolValidationError) as caught:
        sprints.sprint_set_deadline(
            sprint=sprint, actor=world.admin, deadline=world.now, now=world.now
        )
    assert caught.value.field == "deadline"
    with pytest.raises(PermissionDenied):
        sprints.sprint_set_deadline(
            sprint=sprint,
            actor=world.planner,
            deadline=world.now + timedelta(days=2),
            now=world.tick(),
        )
    sprints.sprint_abort(sprint=sprint, actor=world.admin, reason="Stop", now=world.tick())
    assert_refused_unchanged(
        lambda: sprints.sprint_set_deadline(
            sprint=sprint,
            actor=world.admin,
            deadline=world.now + timedelta(days=2),
            now=world.tick(),
        ),
        project=world.project,
        obj=world.project.sprints.get(),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# the inbox
# ---------------------------------------------------------------------------------------------


def _busy_board(world, n: int) -> None:
    """n of each kind of item that waits for a human."""
    for i in range(n):
        world.blocked(f"b{i}", coder=("coder-1", "coder-2")[i % 2])
        world.integration_failed(f"if{i}")
        register(world.project, f"coder-{10 + i}", now=world.now)  # it waits on its gated task
        _awaiting(world, f"g{i}", coder=f"coder-{10 + i}")
        world.unclaimed(f"s{i}")
        tasks.task_suspend(
            task=world.task(f"s{i}"), actor=world.admin, reason="Hold", now=world.tick()
        )
        _immediate(world)


def test_the_inbox_lists_what_waits_for_a_human(world):
    world.blocked("b0")
    world.tick(600)
    world.integration_failed("if0")
    _awaiting(world, "g0")
    world.unclaimed("s0")
    tasks.task_suspend(task=world.task("s0"), actor=world.admin, reason="Hold", now=world.tick())
    _immediate(world)
    sprint = _sprint(world)
    sprints.sprint_checkpoint(sprint=sprint, actor=world.admin, reason="Review", now=world.tick())
    projects.project_pause(
        project=world.project, actor=world.admin, reason="Hold", now=world.tick()
    )
    world.unclaimed("quiet")
    now = world.tick(30)

    inbox = read_inbox(project=world.project, now=now)

    (blocked,) = inbox["blocked"]
    entered = applied_events(world.project, task=world.task("b0"), action="blocked")[0].timestamp
    assert (blocked.key, blocked.since, blocked.age_seconds) == (
        "b0",
        entered,
        int((now - entered).total_seconds()),
    )
    assert blocked.age_seconds > 600
    assert blocked.limit_blocked is False
    assert blocked.task.blocked_questions == ["What should happen on error?"]
    assert blocked.task.failed_by == ["coder-1"]
    assert [i.key for i in inbox["integration_failed"]] == ["if0"]
    assert [i.key for i in inbox["awaiting_approval"]] == ["g0"]
    assert [i.key for i in inbox["suspended"]] == ["s0"]
    assert [d.discovery.disc_id for d in inbox["discoveries"]] == ["disc-1"]
    (checkpoint,) = inbox["checkpoints"]
    assert checkpoint.sprint == world.project.sprints.get()
    at_checkpoint = now - checkpoint.sprint.checkpoint_at
    assert checkpoint.age_seconds == int(at_checkpoint.total_seconds()) > 30
    (paused,) = inbox["paused"]
    assert paused.age_seconds == int((now - paused.project.paused_at).total_seconds())
    assert inbox["count"] == 7


def test_the_inbox_reads_in_a_constant_number_of_queries(world):
    _busy_board(world, 1)
    with CaptureQueriesContext(connection) as small:
        read_inbox(project=world.project, now=world.now)
    other = World(now=world.now)
    _busy_board(other, 4)
    with CaptureQueriesContext(connection) as large:
        inbox = read_inbox(project=None, now=other.now)
    assert {k: len(v) for k, v in inbox.items() if k != "count"} == {
        "blocked": 5,
        "integration_failed": 5,
        "awaiting_approval": 5,
        "suspended": 5,
        "discoveries": 5,
        "checkpoints": 0,
        "paused": 0,
        "alerts": 0,
    }
    assert {i.project for i in inbox["blocked"]} == {world.project, other.project}
    assert len(large.captured_queries) == len(small.captured_queries)
