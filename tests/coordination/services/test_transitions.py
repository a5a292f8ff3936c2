"""Every (from, to) pair of seed 000's task machine, from one table built from boards.protocol.

The 13 edges succeed when their guards hold; every other pair — the seed's forbidden transitions
and every exit from a terminal state among them — is refused with `invalid_transition`, leaves
the row exactly as it was and writes one rejected-attempt event (SPEC §5.1, §6). The override
block (SPEC §5.1) is for humans and the system only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from boards import protocol as p
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.services import reviews as review_services
from boards.coordination.services import tasks as task_services
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.transitions import task_transition
from boards.errors import InvalidTransition, ProtocolValidationError
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    goal_world,
    rejected_event_ids,
    row_snapshot,
)
from tests.lifecycle import World
from tests.module_rows import shared_rows

pytestmark = pytest.mark.django_db

ALL_PAIRS = [(frm, to) for frm in p.TASK_STATES for to in p.TASK_STATES]
EDGE_PAIRS = [pair for pair in ALL_PAIRS if pair in p.TASK_EDGES]
REFUSED_PAIRS = [pair for pair in ALL_PAIRS if pair not in p.TASK_EDGES]


def _ids(pairs):
    return [f"{frm}->{to}" for frm, to in pairs]


def test_the_table_is_seed_000():
    assert len(p.TASK_STATES) == 11
    assert len(ALL_PAIRS) == 121
    assert len(EDGE_PAIRS) == 13
    assert len(REFUSED_PAIRS) == 108
    # Seed 000 "Forbidden Transitions" are all among the refused pairs.
    assert set(p.FORBIDDEN_TASK_EDGES) <= set(REFUSED_PAIRS)
    for terminal in p.TERMINAL_TASK_STATES:
        assert p.task_targets(terminal) == []
        assert all((terminal, to) in REFUSED_PAIRS for to in p.TASK_STATES)


# ---------------------------------------------------------------------------------------------
# the 13 edges
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EdgeCase:
    """How to take one edge: who acts, with what, and what the edge must have set."""

    actor: Callable[[Any, Task], Any]
    params: Callable[[Any, Task], dict[str, Any]] = lambda world, task: {}
    prepare: Callable[[Any, str], Any] | None = None
    check: Callable[[Any, Task, dict[str, Any]], None] = lambda world, task, before: None
    action: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _assigned(world, task):
    return world.agent(task.assigned_to)


def _lease(world, task):
    return world.now + timedelta(seconds=world.project.config.lease_duration)


def _check_claim(world, task, before):
    assert task.assigned_to == "coder-1"
    assert task.iteration == 1
    assert task.worktree
    assert task.base_commit == "base0002"
    assert task.lease_expires == _lease(world, task)
    assert world.agent("coder-1").status == "WORKING"
    assert world.agent("coder-1").current_task_id == task.pk


def _check_submit(world, task, before):
    assert task.review_commit == "feedbeef"
    assert task.lease_expires is None
    assert world.agent(task.assigned_to).status == "WAITING"


def _check_block(world, task, before):
    assert task.blocked_reason == "The spec is silent"
    assert task.blocked_questions == ["Which error codes?"]
    assert task.attempted == ["Read the spec"]
    assert task.failed_by == ["coder-1"]
    assert task.lease_expires is None
    coder = world.agent("coder-1")
    assert (coder.status, coder.current_task_id) == ("IDLE", None)


def _check_approve(world, task, before):
    assert task.approved_by == ["code-reviewer-1"]
    assert task.review_cycles_current == before["review_cycles_current"] == 0
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert world.agent("code-reviewer-1").status == "IDLE"


def _check_reject(world, task, before):
    assert task.rejection_reason == "Missing the 5xx case"
    assert (task.review_cycles_current, task.review_cycles_total) == (1, 1)
    assert task.assigned_to == "coder-1"
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()


def _check_reclaim(world, task, before):
    assert task.assigned_to == "coder-1"
    assert task.iteration == before["iteration"] + 1 == 2
    assert task.worktree == before["worktree"]
    assert task.review_cycles_current == before["review_cycles_current"] == 1
    assert task.lease_expires == _lease(world, task)


def _check_merge(world, task, before):
    assert task.merge_commit == "merge0042"
    assert task.worktree == ""
    assert task.lease_expires is None


def _check_fail_integration(world, task, before):
    assert task.worktree == before["worktree"] != ""
    assert task.integration_fix is False


def _check_release(world, task, before):
    assert task.failed_by == before["failed_by"] == ["coder-1"]
    assert (task.worktree, task.assigned_to, task.lease_expires) == ("", "", None)


def _check_supersede(world, task, before):
    assert task.superseded_by == [f"{task.key}-a", f"{task.key}-b"]
    assert task.rescope_reason == "Too broad"
    assert world.task(f"{task.key}-a").supersedes == task.key
    assert world.task(f"{task.key}-a").status == "UNCLAIMED"


def _check_abandon(world, task, before):
    assert task.worktree == ""


def _check_integration_fix(world, task, before):
    assert task.integration_fix is True
    assert task.assigned_to == "coder-2"
    assert task.worktree == before["worktree"] != ""
    assert task.iteration == 1
    assert task.lease_expires == _lease(world, task)


EDGE_CASES: dict[str, EdgeCase] = {
    "finalize": EdgeCase(actor=lambda w, t: w.planner, action="finalized"),
    "claim": EdgeCase(
        actor=lambda w, t: w.agent("coder-1"),
        params=lambda w, t: {"base_commit": "base0002"},
        check=_check_claim,
        action="claimed",
    ),
    "submit_for_review": EdgeCase(
        actor=_assigned,
        params=lambda w, t: {"review_commit": "feedbeef"},
        check=_check_submit,
        action="ready_for_review",
    ),
    "block": EdgeCase(
        actor=_assigned,
        params=lambda w, t: {
            "reason": "The spec is silent",
            "questions": ["Which error codes?"],
            "attempted": ["Read the spec"],
        },
        check=_check_block,
        action="blocked",
    ),
    "approve": EdgeCase(
        actor=lambda w, t: w.agent("code-reviewer-1"),
        params=lambda w, t: {"review_commit": t.review_commit},
        prepare=lambda w, key: w.claim_review(key),
        check=_check_approve,
        action="approved",
    ),
    "reject": EdgeCase(
        actor=lambda w, t: w.agent("code-reviewer-1"),
        params=lambda w, t: {"review_commit": t.review_commit, "reason": "Missing the 5xx case"},
        prepare=lambda w, key: w.claim_review(key),
        check=_check_reject,
        action="rejected",
    ),
    "reclaim": EdgeCase(actor=_assigned, check=_check_reclaim, action="claimed"),
    "merge": EdgeCase(
        actor=lambda w, t: w.agent("code-reviewer-1"),
        params=lambda w, t: {"merge_commit": "merge0042"},
        check=_check_merge,
        action="merged",
    ),
    "fail_integration": EdgeCase(
        actor=lambda w, t: w.agent("code-reviewer-1"),
        params=lambda w, t: {"reason": "conflict in api.py"},
        check=_check_fail_integration,
        action="integration_failed",
    ),
    "release": EdgeCase(
        actor=lambda w, t: w.planner,
        params=lambda w, t: {"reason": "Answered: 4xx only"},
        check=_check_release,
        action="released",
    ),
    "supersede": EdgeCase(
        actor=lambda w, t: w.planner,
        params=lambda w, t: {
            "reason": "Too broad",
            "new_tasks": [
                {"key": f"{t.key}-a", "description": "first half", "done_when": "half"},
                {"key": f"{t.key}-b", "description": "second half", "done_when": "rest"},
            ],
        },
        check=_check_supersede,
        action="rescoped",
    ),
    "abandon": EdgeCase(
        actor=lambda w, t: w.planner,
        params=lambda w, t: {"reason": "No longer needed"},
        check=_check_abandon,
        action="abandoned",
    ),
    # "Any coder may claim" (seed 000): another coder than the one who wrote it.
    "claim_integration_fix": EdgeCase(
        actor=lambda w, t: w.agent("coder-2"), check=_check_integration_fix, action="claimed"
    ),
}


def test_every_edge_has_a_case():
    assert set(EDGE_CASES) == set(p.TASK_EDGES.values())


@pytest.mark.parametrize(("frm", "to"), EDGE_PAIRS, ids=_ids(EDGE_PAIRS))
def test_edge_succeeds(world, frm, to):
    case = EDGE_CASES[p.TASK_EDGES[(frm, to)]]
    task = world.drive_to(frm, "task-e")
    if case.prepare is not None:
        case.prepare(world, "task-e")
        task = world.task("task-e")
    before = row_snapshot(task)
    refused = rejected_event_ids(world.project)
    now = world.tick()

    task_transition(
        task=task, actor=case.actor(world, task), target=to, now=now, **case.params(world, task)
    )

    task = world.task("task-e")
    assert task.status == to
    assert task.updated == now
    case.check(world, task, before)
    (event,) = applied_events(world.project, task=task, from_status=frm, to_status=to)
    assert (event.action, event.timestamp) == (case.action, now)
    assert rejected_event_ids(world.project) == refused
    assert_valid(world.project, now=now)


# ---------------------------------------------------------------------------------------------
# everything else is refused, the row unchanged, the attempt logged
# ---------------------------------------------------------------------------------------------


def _coder_of(world, task):
    """The coder for the task: its assignee, or coder-1 before anyone took it."""
    return world.agent(task.assigned_to or "coder-1")


@pytest.fixture(scope="module")
def refusing_worlds(django_db_setup, django_db_blocker) -> Iterator[dict[str, World]]:
    """A world (as the `world` fixture makes it) per source state with task-r in that state,
    built once for the refused pairs from it; each refusal, and all it writes, is rolled back
    after its test (tests/module_rows.py)."""
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            built = {}
            for frm in sorted({frm for frm, _ in REFUSED_PAIRS}):
                built[frm] = goal_world()
                built[frm].drive_to(frm, "task-r")
        yield built


@pytest.mark.parametrize(("frm", "to"), REFUSED_PAIRS, ids=_ids(REFUSED_PAIRS))
def test_non_edge_is_refused_and_changes_nothing(db, refusing_worlds, frm, to):
    world = refusing_worlds[frm]
    task = world.task("task-r")
    assert task.status == frm  # as built: what earlier tests did was rolled back
    coder = _coder_of(world, task)
    now = world.tick()

    _, event = assert_refused_unchanged(
        lambda: task_transition(task=task, actor=coder, target=to, now=now),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        code="invalid_transition",
        status_code=409,
        details={"from": frm, "to": to, "allowed": p.task_targets(frm)},
    )

    assert (event.task_id, event.from_status, event.to_status) == (task.pk, frm, to)
    assert (event.actor_kind, event.actor_id) == (Event.ActorKind.AGENT, coder.agent_id)
    assert event.timestamp == now
    assert event.data["details"] == {"from": frm, "to": to, "allowed": p.task_targets(frm)}


NAMED_FORBIDDEN = [pair for pair in p.FORBIDDEN_TASK_EDGES if pair[0] not in p.TERMINAL_TASK_STATES]


def _forbidden_call(world, task, frm, to, now):
    """The service that would take the forbidden edge, called by the agent that would try."""
    if to == "CLAIMED":
        return lambda: task_services.task_claim(
            task=task, agent=world.agent("coder-1"), now=now, base_commit="base0003"
        )
    if to == "MERGED":
        return lambda: task_services.task_report_merge(
            task=task, agent=world.agent("code-reviewer-1"), merge_commit="m1", now=now
        )
    assert to == "APPROVED"
    return lambda: review_services.review_verdict(
        task=task,
        agent=world.agent("code-reviewer-1"),
        verdict="APPROVED",
        review_commit=task.review_commit or "c0ffee01",
        now=now,
    )


@pytest.mark.parametrize(("frm", "to"), NAMED_FORBIDDEN, ids=_ids(NAMED_FORBIDDEN))
def test_seed_forbidden_transition_is_refused_by_its_own_service(world, frm, to):
    """DRAFT→CLAIMED, CLAIMED→MERGED, CLAIMED→APPROVED, REJECTED→APPROVED (seed 000)."""
    task = world.drive_to(frm, "task-f")
    now = world.tick()
    exc, event = assert_refused_unchanged(
        _forbidden_call(world, task, frm, to, now),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        code="invalid_transition",
    )
    assert exc.details["from"] == frm
    assert exc.details["allowed"] == p.task_targets(frm)
    assert (event.from_status, event.to_status) == (frm, to)


@pytest.mark.parametrize("frm", sorted(p.TERMINAL_TASK_STATES))
def test_terminal_task_cannot_be_claimed_again(world, frm):
    task = world.drive_to(frm, "task-t")
    now = world.tick()
    _, event = assert_refused_unchanged(
        lambda: task_services.task_claim(
            task=task, agent=world.agent("coder-2"), now=now, base_commit="base0003"
        ),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        details={"from": frm, "to": "CLAIMED", "allowed": []},
    )
    assert (event.from_status, event.to_status) == (frm, "CLAIMED")


# ---------------------------------------------------------------------------------------------
# SPEC §5.1 override block
# ---------------------------------------------------------------------------------------------

OVERRIDERS = {
    "admin": lambda world: world.admin,
    "system": lambda world: SYSTEM,
}


@pytest.mark.parametrize("who", sorted(OVERRIDERS))
@pytest.mark.parametrize("frm", p.OVERRIDE_BLOCK_SOURCES)
def test_override_block_from_every_non_terminal_state(world, frm, who):
    task = world.drive_to(frm, "task-o")
    if frm == "READY_FOR_REVIEW":
        world.claim_review("task-o")
    before = row_snapshot(task)
    holder = task.assigned_to
    actor = OVERRIDERS[who](world)
    now = world.tick()

    task_transition(
        task=task,
        actor=actor,
        target="BLOCKED",
        now=now,
        reason="Replan: the approach is wrong",
        questions=["Split it?", "Drop the cache?"],
    )

    task = world.task("task-o")
    assert task.status == "BLOCKED"
    assert task.blocked_reason == "Replan: the approach is wrong"
    assert task.blocked_questions == ["Split it?", "Drop the cache?"]
    assert task.lease_expires is None
    # A different edge from the coder's own block: nobody failed the task.
    assert task.failed_by == before["failed_by"]
    (event,) = applied_events(world.project, task=task, from_status=frm, to_status="BLOCKED")
    assert event.action == "override_blocked"
    expected_kind = Event.ActorKind.SYSTEM if who == "system" else Event.ActorKind.HUMAN
    assert event.actor_kind == expected_kind
    # Whoever held it no longer does; an open review round is closed.
    if holder:
        coder = world.agent(holder)
        assert coder.current_task_id is None
        assert coder.status == "IDLE"
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert world.agent("code-reviewer-1").status != "REVIEWING"
    assert_valid(world.project, now=now)


AGENT_ROLES = {
    "planner": lambda world, task: world.planner,
    "coder": _coder_of,
    "code_reviewer": lambda world, task: world.agent("code-reviewer-1"),
}


@pytest.mark.parametrize("role", sorted(AGENT_ROLES))
@pytest.mark.parametrize("frm", p.OVERRIDE_BLOCK_SOURCES)
def test_agents_never_override_block(world, frm, role):
    task = world.drive_to(frm, "task-o")
    agent = AGENT_ROLES[role](world, task)
    now = world.tick()
    _, event = assert_refused_unchanged(
        lambda: task_services.task_override_block(
            task=task, actor=agent, reason="I want out", questions=["Why?"], now=now
        ),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        code="invalid_transition",
        details={"from": frm, "to": "BLOCKED", "allowed": p.task_targets(frm)},
    )
    assert (event.from_status, event.to_status, event.actor_id) == (frm, "BLOCKED", agent.agent_id)


@pytest.mark.parametrize("entry", ["transition", "service"])
@pytest.mark.parametrize("who", sorted(OVERRIDERS))
@pytest.mark.parametrize("frm", [*sorted(p.TERMINAL_TASK_STATES), "BLOCKED"])
def test_terminal_and_blocked_tasks_cannot_be_override_blocked(world, frm, who, entry):
    task = world.drive_to(frm, "task-o")
    actor = OVERRIDERS[who](world)
    now = world.tick()
    params = {"reason": "Stop it", "questions": ["Why?"]}
    call = {
        "transition": lambda: task_transition(
            task=task, actor=actor, target="BLOCKED", now=now, **params
        ),
        "service": lambda: task_services.task_override_block(
            task=task, actor=actor, now=now, **params
        ),
    }[entry]
    _, event = assert_refused_unchanged(
        call,
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        details={"from": frm, "to": "BLOCKED", "allowed": p.task_targets(frm)},
    )
    assert (event.from_status, event.to_status) == (frm, "BLOCKED")
    assert event.actor_kind == (
        Event.ActorKind.SYSTEM if who == "system" else Event.ActorKind.HUMAN
    )


@pytest.mark.parametrize("frm", p.TASK_STATES)
def test_refusal_leaves_dependencies_unchanged(world, frm):
    """row_snapshot covers depends_on: a task with a (MERGED) dependency, refused a self-pair."""
    world.drive_to("MERGED", "task-dep")
    task = world.drive_to(frm, "task-r", depends_on=["task-dep"])
    assert row_snapshot(task)["depends_on"] == ["task-dep"]
    now = world.tick()
    assert_refused_unchanged(
        lambda: task_transition(task=task, actor=_coder_of(world, task), target=frm, now=now),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        details={"from": frm, "to": frm, "allowed": p.task_targets(frm)},
    )


def test_dependency_cycle_is_refused_and_changes_nothing(world):
    world.unclaimed("task-a")
    world.unclaimed("task-b", depends_on=["task-a"])
    task_a = world.task("task-a")
    with pytest.raises(ProtocolValidationError) as caught:
        task_services.task_set_dependencies(
            task=task_a, actor=world.planner, depends_on=["task-b"], now=world.tick()
        )
    assert caught.value.field == "depends_on"
    assert row_snapshot(task_a)["depends_on"] == []
    assert row_snapshot(world.task("task-b"))["depends_on"] == ["task-a"]
