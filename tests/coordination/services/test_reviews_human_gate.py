"""The human approval gate (seed 004 APPROVAL_REQUIRED; services.reviews: task_human_approve,
task_human_reject).

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from boards.board.selectors.inbox import inbox as read_inbox
from boards.coordination.models.records import Anomaly
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.coordination.services import reviews, tasks
from boards.coordination.services import tasks as task_services
from boards.errors import (
    Conflict,
    InvalidTransition,
)
from tests.coordination.services.helpers import (
    _actions,
    _awaiting,
    _heartbeat_refusal,
    _last_event_id,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)

pytestmark = pytest.mark.django_db


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
