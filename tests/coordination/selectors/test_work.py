"""`/work` promises exactly what a claim then delivers (STYLE.md: one predicate cannot drift).

Over random boards built through the real services, for every agent of the project at one
instant `now`, `work_for_role` (and `GET /work` with the agent's own key) answers `work: true`
if and only if

* a coder: `task_claim_next` then gives it a task, or it already holds a CLAIMED task that its
  heartbeat keeps (work in hand: a restarted session picks it up, it does not claim it);
* a code reviewer: `review_claim` then succeeds on at least one READY_FOR_REVIEW task whose
  review of this round it did not give back (`review_release`: a claim by name takes that one,
  claim-next and `/work` pass it over; the round read from the task's log by the slot rule's
  reference model), or `review_claim_next` gives it a review (one it holds: work in hand), or
  it must still report the merge of a task it approved (`task_report_merge` then succeeds).

Each claim attempt runs in a savepoint that is rolled back, so every check sees the same board;
each example is built in its own savepoint too, so examples never see each other's rows.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from agents.models import Agent
from agents.services import (
    agent_handoff,
    agent_heartbeat,
    agent_leave,
    agent_register,
    agent_set_availability,
)
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.tasks import retry_at
from boards.coordination.selectors.work import stop_reason, work_for_role
from boards.coordination.services import projects, reviews, tasks
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_checkpoint, sprint_create
from boards.errors import ProtocolError
from boards.protocol import AgentStatus
from boards.watch.services.watch import watch_sweep
from tests.api.helpers import agent_client, api_base, assert_envelope
from tests.coordination.selectors.properties import rolled_back
from tests.coordination.selectors.review_slot_oracle import Mark, released_this_round
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

KEYS = ("t0", "t1", "t2")
CODERS = ("coder-1", "coder-2", "coder-3")
# code-reviewer-3 is the World's security-flagged reviewer.
REVIEWERS = ("code-reviewer-1", "code-reviewer-2", "code-reviewer-3")
AGENTS = CODERS + REVIEWERS
CRITICALITIES = tuple(Task.Criticality.values)


def _undone(operation):
    """Run `operation` in a savepoint that is always rolled back; its result, or the refusal."""
    outcome: list[object] = []
    with rolled_back():
        try:
            outcome.append(operation())
        except (ProtocolError, PermissionDenied) as exc:
            outcome.append(exc)
    return outcome[0]


# -- building a board ---------------------------------------------------------------------------
# Steps are tried through the services; a step the protocol refuses (a coder already holding a
# task, a reviewer already reviewing, ...) leaves the board as it was, which is a board too.

key = st.sampled_from(KEYS)
coder = st.sampled_from(CODERS)
reviewer = st.sampled_from(REVIEWERS)
criticality = st.sampled_from(CRITICALITIES)

# A review round: each reviewer claims the review, then maybe gives its verdict or gives the
# review back.
ROUND = st.lists(
    st.tuples(reviewer, st.sampled_from(("claim", "APPROVED", "REJECTED", "release"))),
    max_size=3,
)
# READY_FOR_REVIEW, where review rounds happen, comes up more often than the others.
STAGES = (
    "draft",
    "unclaimed",
    "claimed",
    "ready",
    "ready",
    "ready",
    "merged",
    "integration_failed",
)

# One task walked to `stage`: claimed by `coder` after `failer` (if any) claimed and blocked it,
# so that the failer is in failed_by; READY_FOR_REVIEW ones then get a review round; a task may
# depend on the one made before it.
TASK = st.tuples(
    criticality,
    st.sampled_from(STAGES),
    coder,
    st.sampled_from((None, *CODERS)),
    ROUND,
    st.booleans(),
)

# What may happen afterwards, in any order.
STEPS = st.one_of(
    st.tuples(st.just("tick"), st.integers(1, 400)),
    st.tuples(st.just("claim"), key, coder),
    st.tuples(st.just("claim_next"), coder),
    st.tuples(st.just("submit"), key),
    st.tuples(st.just("block_release"), key),
    st.tuples(st.just("review"), key, reviewer),
    st.tuples(st.just("verdict"), key, reviewer, st.sampled_from(("APPROVED", "REJECTED"))),
    st.tuples(st.just("release"), key, reviewer),
    st.tuples(st.just("suspend"), key),
    st.tuples(st.just("handoff"), key),
    st.tuples(st.just("heartbeat"), st.sampled_from(AGENTS)),
    # Seed 003: the holder's lease dies and the watcher records it (three of these put a coder
    # in error); the same coder retries once its backoff passed (crashes grow towards the
    # retry_exhausted block); a coder set overloaded, or available again.
    st.tuples(st.just("crash"), key),
    st.tuples(st.just("retry"), key),
    st.tuples(st.just("crash_loop"), key, st.integers(1, 4)),
    st.tuples(st.just("overloaded"), st.sampled_from(AGENTS), st.booleans()),
    # Its session ends (`agent_leave`): it claims nothing until it registers again.
    st.tuples(st.just("leave"), st.sampled_from(AGENTS)),
)

# When the board is looked at, relative to its last step: leases are 300 s and lease_grace
# 60 s, so these land before expiry, inside the grace and beyond it; then around the retry
# backoff's steps (5 s, 30 s, 120 s after the grace).
AT = st.one_of(
    st.sampled_from((0, 299, 301, 330, 359, 361, 364, 365, 366, 389, 390, 391, 480, 481, 400)),
    st.integers(0, 720),
)


def _approve(world: World, key: str) -> str:
    """Approvals until the task is APPROVED (the security reviewer first); the last approver."""
    for name in ("code-reviewer-3", "code-reviewer-1", "code-reviewer-2"):
        world.claim_review(key, name)
        world.verdict(key, "APPROVED", reviewer=name)
        if world.task(key).status == "APPROVED":
            return name
    raise AssertionError(world.task(key).status)


def _task(world: World, key: str, crit, stage, who, failer, round_, depends) -> None:
    previous = world.project.tasks.order_by("-pk").first()
    deps = [previous.key] if depends and previous is not None else []
    if stage == "draft":
        world.draft(key, criticality=crit, depends_on=deps)
        return
    world.unclaimed(key, criticality=crit, depends_on=deps, needs_human_approval=False)
    if stage == "unclaimed":
        return
    if failer is not None and failer != who:
        world.claim(key, failer)
        world.block(key)
        tasks.task_release(
            task=world.task(key), actor=world.planner, reason="Try again", now=world.tick()
        )
    world.claim(key, who)
    if stage == "claimed":
        return
    world.submit(key)
    if stage == "ready":
        for name, action in round_:
            world.claim_review(key, name)
            if action == "release":
                _step(world, ("release", key, name))
            elif action != "claim":
                world.verdict(key, action, reviewer=name)
        return
    approver = _approve(world, key)
    if stage == "merged":
        tasks.task_report_merge(
            task=world.task(key), agent=world.agent(approver), merge_commit="m1", now=world.tick()
        )
    else:
        tasks.task_report_integration_failure(
            task=world.task(key), agent=world.agent(approver), reason="conflict", now=world.tick()
        )


def _step(world: World, step: tuple) -> None:
    kind, *args = step
    if kind == "crash_loop":  # crash and retry, n times (errors, exhausted retries)
        for _ in range(args[1]):
            _step(world, ("crash", args[0]))
            with contextlib.suppress(*REFUSED):
                _step(world, ("retry", args[0]))
        return
    if kind == "claim":
        world.claim(*args)
    elif kind == "claim_next":
        tasks.task_claim_next(
            project=world.project, agent=world.agent(args[0]), now=world.tick(), base_commit="b1"
        )
    elif kind == "submit":
        world.submit(args[0])
    elif kind == "block_release":
        world.block(args[0])
        tasks.task_release(
            task=world.task(args[0]), actor=world.planner, reason="Try again", now=world.tick()
        )
    elif kind == "review":
        world.claim_review(*args)
    elif kind == "verdict":
        k, who, verdict = args
        world.verdict(k, verdict, reviewer=who)
    elif kind == "release":
        k, who = args
        reviews.review_release(task=world.task(k), agent=world.agent(who), now=world.tick())
    elif kind == "suspend":
        tasks.task_suspend(
            task=world.task(args[0]), actor=world.admin, reason="Hold on", now=world.tick()
        )
    elif kind == "handoff":
        task = world.task(args[0])
        agent_handoff(
            agent=world.agent(task.assigned_to or "coder-1"),
            task=task,
            now=world.tick(),
            summary="Context full",
            next_action="Carry on",
        )
    elif kind == "heartbeat":
        agent_heartbeat(agent=world.agent(args[0]), now=world.tick())
    elif kind == "tick":
        world.tick(args[0])
    elif kind == "crash":
        task = world.task(args[0])
        if task.status == "CLAIMED" and task.lease_expires is not None:
            world.now = max(world.now, task.lease_expires) + timedelta(seconds=61)
            watch_sweep(project=world.project, now=world.now)
    elif kind == "retry":
        task = world.task(args[0])
        due = retry_at(task, config_of(world.project)) if task.status == "CLAIMED" else None
        if due is not None:
            world.now = max(world.now, due) + timedelta(seconds=1)
            world.claim(args[0], task.assigned_to)
    elif kind == "leave":
        agent_leave(project=world.project, agent=world.agent(args[0]), now=world.tick())
    elif kind == "overloaded":
        agent_set_availability(
            agent=world.agent(args[0]),
            actor=world.admin,
            state="overloaded" if args[1] else "available",
            now=world.tick(),
        )


REFUSED = (ProtocolError, PermissionDenied, Task.DoesNotExist, Agent.DoesNotExist)


def _build(world: World, recipes: list[tuple], steps: list[tuple], stop: str | None) -> None:
    for key, recipe in zip(KEYS, recipes, strict=False):
        with contextlib.suppress(*REFUSED):
            _task(world, key, *recipe)
    for step in steps:
        with contextlib.suppress(*REFUSED):
            _step(world, step)
    if stop == "paused":
        projects.project_pause(
            project=world.project, actor=world.admin, reason="Freeze", now=world.tick()
        )
    elif stop == "checkpoint":
        goal = goal_create(
            project=world.project, actor=world.planner, description="Ship", now=world.tick()
        )
        sprint = sprint_create(
            project=world.project, actor=world.planner, goal=goal, now=world.tick()
        )
        sprint_checkpoint(sprint=sprint, actor=world.admin, reason="Look", now=world.tick())


# -- what a claim then delivers -------------------------------------------------------------------


def _coder_gets_work(world: World, agent_id: str, now) -> bool:
    claimed = _undone(
        lambda: tasks.task_claim_next(
            project=world.project, agent=world.agent(agent_id), now=now, base_commit="b2"
        )
    )
    if isinstance(claimed, Task):
        return True
    if world.agent(agent_id).status == AgentStatus.HANDOFF:
        # A session that handed off has ended: its id registers again before any work (SPEC
        # §13); its task's lease is held for that next session, not for it.
        return False
    beat = _undone(lambda: agent_heartbeat(agent=world.agent(agent_id), now=now))
    in_hand = not isinstance(beat, Exception) and beat.stop is None and beat.task is not None
    return in_hand and beat.task.status == "CLAIMED"


def _reviewer_gets_work(world: World, agent_id: str, now) -> bool:
    agent = world.agent(agent_id)
    approved = Task.objects.filter(project=world.project, status="APPROVED")
    # A merge report is not refused on a stop, but a stopped agent has no work (exit 42).
    if stop_reason(world.project) is None and any(
        isinstance(
            _undone(
                lambda task=task: tasks.task_report_merge(
                    task=task, agent=agent, merge_commit="m1", now=now
                )
            ),
            Task,
        )
        for task in approved
    ):
        return True
    next_review = _undone(
        lambda: reviews.review_claim_next(project=world.project, agent=agent, now=now)
    )
    if next_review is not None and not isinstance(next_review, Exception):
        return True
    ready = [
        task
        for task in Task.objects.filter(project=world.project, status="READY_FOR_REVIEW")
        if not _gave_back(task, agent_id)
    ]
    return any(
        not isinstance(
            _undone(
                lambda task=task: reviews.review_claim(
                    task=task, agent=world.agent(agent_id), now=now
                )
            ),
            Exception,
        )
        for task in ready
    )


def _gave_back(task: Task, agent_id: str) -> bool:
    """Whether `agent_id` gave back its review of `task`'s current round, as the reference model
    of the slot rule reads the task's log."""
    log = Event.objects.filter(task=task).order_by("id")
    marks = tuple(
        Mark(e.action, e.actor_kind, e.actor_id, e.outcome, e.from_status, e.to_status) for e in log
    )
    return agent_id in released_this_round(marks)


def _claims_deliver(world: World, agent_id: str, now) -> bool:
    if world.agent(agent_id).role == Agent.Role.CODER:
        return _coder_gets_work(world, agent_id, now)
    return _reviewer_gets_work(world, agent_id, now)


def _board(world: World, now) -> str:
    """The board in one line per task, for a failure message."""
    rows = []
    for t in Task.objects.filter(project=world.project).order_by("key"):
        open_reviews = [
            f"{r.reviewer}:{r.verdict or 'pending'}@{(r.lease_expires - now).total_seconds():+.0f}s"
            if r.lease_expires
            else f"{r.reviewer}:{r.verdict or 'pending'}"
            for r in t.reviews.filter(closed_at__isnull=True)
        ]
        lease = f"{(t.lease_expires - now).total_seconds():+.0f}s" if t.lease_expires else "-"
        rows.append(
            f"{t.key} {t.status} {t.criticality} by={t.assigned_to or '-'} lease={lease} "
            f"failed_by={t.failed_by} crashes={t.crashes} suspended={t.is_suspended} "
            f"reviews={open_reviews} "
            f"deps={[d.key for d in t.depends_on.all()]}"
        )
    agents = [
        f"{a.agent_id}:{a.status}{':overloaded' if a.overloaded else ''}"
        for a in Agent.objects.filter(project=world.project)
    ]
    return "\n".join([*rows, " ".join(agents)])


# A board random ones reach only now and then: one task under review, whose only reviewer so far
# gave it back (claimable by that reviewer's name, not offered by its claim-next or `/work`).
GIVEN_BACK = ("standard", "ready", "coder-1", None, [("code-reviewer-1", "release")], False)
# One task under review, no review claimed yet (with a reviewer that left: none for it).
READY = ("standard", "ready", "coder-1", None, [], False)


# Each example builds a board through the services (~0.4 s): 50 and 15 examples are a minute of
# the suite's time on two cores. There is no example database in CI, so every run draws fresh
# boards and the exploration adds up over runs (as tests/contract's MAX_EXAMPLES). Every board
# is asked of coders and reviewers alike: building it, not asking it, is the cost, so one board
# per example serves both roles (each role still sees 50 boards, as when a parameter split them).
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # no slow "explain"
)
@example(recipes=[GIVEN_BACK], steps=[], stop=None, at=0)
@example(recipes=[READY], steps=[("leave", "code-reviewer-1")], stop=None, at=0)
@given(
    recipes=st.lists(TASK, min_size=1, max_size=3),
    steps=st.lists(STEPS, max_size=4),
    stop=st.sampled_from((None, None, None, "paused", "checkpoint")),
    at=AT,
)
def test_work_says_yes_exactly_when_a_claim_then_succeeds(db, recipes, steps, stop, at):
    with rolled_back():  # every example's rows go with its savepoint
        world = World()
        assert config_of(world.project).lease_grace == 60  # what AT's offsets assume
        _build(world, recipes, steps, stop)
        now = world.now + timedelta(seconds=at)
        for agent_id in AGENTS:
            agent = world.agent(agent_id)
            expected = _claims_deliver(world, agent_id, now)
            answer = work_for_role(project=world.project, role=agent.role, agent=agent, now=now)
            assert answer["work"] is expected, (
                f"{agent_id} at +{at}s: /work says {answer['work']}, a claim "
                f"{'succeeds' if expected else 'is refused'}\n{_board(world, now)}\n"
                f"built from {recipes} then {steps}, stop={stop}"
            )


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],  # no slow "explain"
)
@example(recipes=[GIVEN_BACK], steps=[], at=0)
@example(recipes=[READY], steps=[("leave", "code-reviewer-1")], at=0)
@given(recipes=st.lists(TASK, min_size=1, max_size=3), steps=st.lists(STEPS, max_size=4), at=AT)
def test_the_work_endpoint_answers_what_the_claims_deliver(db, recipes, steps, at):
    """The same property through `GET /work` with each agent's own key, the clock held at
    `now` (the HTTP layer reads the real clock)."""
    with rolled_back():  # every example's rows go with its savepoint
        world = World()
        _build(world, recipes, steps, None)
        now = world.now + timedelta(seconds=at)
        for agent_id in AGENTS:
            expected = _claims_deliver(world, agent_id, now)
            client = agent_client(world.agent(agent_id))
            with time_machine.travel(now, tick=False):
                response = client.get(f"{api_base(world.project.slug)}/work")
            if world.agent(agent_id).left_at is not None:
                # Its session is over: told so (exit 8), as its heartbeat is — and no claim.
                assert not expected
                assert assert_envelope(response, 409, "not_registered")["details"]["exit"] == 8
                continue
            assert response.status_code == 200, response.content
            assert response.json()["work"] is expected, (
                f"{agent_id} at +{at}s: GET /work says {response.json()}, a claim "
                f"{'succeeds' if expected else 'is refused'}\n{_board(world, now)}"
            )


def test_a_reviewer_that_left_is_offered_no_review_until_it_registers_again(db):
    """Its review claims are refused (`departed_refusal`, as a departed coder's claims are):
    `/work` offers none it would then refuse."""
    world = World()
    world.ready_for_review("t0")

    def work() -> bool:
        agent = world.agent("code-reviewer-1")
        return work_for_role(project=world.project, role=agent.role, agent=agent, now=world.now)[
            "work"
        ]

    assert work() is True
    agent_leave(project=world.project, agent=world.agent("code-reviewer-1"), now=world.tick())
    assert work() is False

    agent_register(
        project=world.project, agent_id="code-reviewer-1", role="code_reviewer", now=world.tick()
    )
    assert work() is True
