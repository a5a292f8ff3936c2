"""The watcher's sweep (SPEC §9): each rule at the instant it becomes due and not before, done
once however many sweeps follow, through the services as the system actor. The clock is the
`now` every service takes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone

from agents.models import Agent
from agents.services import agent_heartbeat
from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Review
from boards.coordination.outbox import board_group
from boards.coordination.selectors.access import config_of
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services import tasks as tasks_services
from boards.coordination.services.goals import goal_create
from boards.errors import Conflict, LeaseLost, ProtocolValidationError
from boards.protocol import Action, AgentStatus, SprintStatus, TaskStatus
from boards.watch.selectors.watch import watcher_seen
from boards.watch.services.watch import watch_sweep
from tests.board.live.helpers import in_memory_layer_settings
from tests.coordination.services.helpers import applied_events, assert_refused_unchanged
from tests.lifecycle import World


def _events(world, action: str) -> list[Event]:
    return applied_events(world.project, action=action)


def test_a_dead_coder_lease_is_taken_from_its_coder_once_and_the_task_keeps_its_status(world):
    task = world.claimed("T-1")
    grace = timedelta(seconds=config_of(world.project).lease_grace)
    dead_from = task.lease_expires + grace

    # Within the grace period the coder may still heartbeat: nothing is due.
    assert watch_sweep(project=world.project, now=dead_from - timedelta(seconds=1)).actions == []
    assert world.coder.status == AgentStatus.WORKING
    assert _events(world, Action.LEASE_EXPIRED) == []

    sweep = watch_sweep(project=world.project, now=dead_from + timedelta(seconds=1))
    assert sweep.actions == ["lease expired: coder-1 on T-1"]
    coder = world.coder
    assert coder.status == AgentStatus.IDLE
    assert coder.current_task is None
    assert coder.lost_task_id == task.pk  # its next request answers lease_lost, exit 42
    task = world.task("T-1")
    assert task.status == TaskStatus.CLAIMED  # a claim takes it over; the watcher does not
    assert task.assigned_to == "coder-1"
    [event] = _events(world, Action.LEASE_EXPIRED)
    assert (event.actor_kind, event.actor_id, event.task_id) == ("system", "system", task.pk)
    assert "coder-1" in event.detail and "T-1" in event.detail

    # The coder learns it at its next request: lease_lost, exit 42 (SPEC §13).
    with pytest.raises(LeaseLost):
        agent_heartbeat(agent=world.coder, now=dead_from + timedelta(seconds=2))

    # Later sweeps find nothing more to do.
    for minutes in (1, 60):
        later = dead_from + timedelta(minutes=minutes)
        assert watch_sweep(project=world.project, now=later).actions == []
    assert len(_events(world, Action.LEASE_EXPIRED)) == 1


def test_a_heartbeat_keeps_the_lease_from_the_watcher(world):
    task = world.claimed("T-1")
    grace = timedelta(seconds=config_of(world.project).lease_grace)
    beat = task.lease_expires - timedelta(seconds=10)
    agent_heartbeat(agent=world.coder, now=beat)
    renewed = world.task("T-1").lease_expires
    assert renewed > task.lease_expires
    assert watch_sweep(project=world.project, now=task.lease_expires + grace * 2).actions == []
    assert world.coder.status == AgentStatus.WORKING
    assert watch_sweep(project=world.project, now=renewed + grace * 2).actions == [
        "lease expired: coder-1 on T-1"
    ]


def test_a_dead_review_claim_is_closed_once_and_the_review_can_be_claimed_again(world):
    world.ready_for_review("T-1")
    world.claim_review("T-1", "code-reviewer-1")
    review = Review.objects.get(task=world.task("T-1"), reviewer="code-reviewer-1")
    grace = timedelta(seconds=config_of(world.project).lease_grace)
    dead_from = review.lease_expires + grace

    assert watch_sweep(project=world.project, now=dead_from - timedelta(seconds=1)).actions == []
    assert Review.objects.get(pk=review.pk).closed_at is None

    now = dead_from + timedelta(seconds=1)
    sweep = watch_sweep(project=world.project, now=now)
    assert sweep.actions == ["review lease expired: code-reviewer-1 on T-1"]
    assert Review.objects.get(pk=review.pk).closed_at == now
    [event] = _events(world, Action.REVIEW_CLAIM_RELEASED)
    assert (event.actor_kind, event.task_id) == ("system", review.task_id)
    assert world.task("T-1").status == TaskStatus.READY_FOR_REVIEW
    assert watch_sweep(project=world.project, now=now + timedelta(minutes=5)).actions == []
    assert len(_events(world, Action.REVIEW_CLAIM_RELEASED)) == 1

    # Another reviewer may now claim it.
    world.now = now + timedelta(minutes=6)
    world.claim_review("T-1", "code-reviewer-2")
    assert Review.objects.filter(task=review.task, closed_at__isnull=True).count() == 1


def _sprint(world, *, deadline, planned=("T-1",)) -> Sprint:
    for key in planned:
        world.unclaimed(key)
    return sprint_services.sprint_create(
        project=world.project,
        actor=world.planner,
        planned=list(planned),
        deadline=deadline,
        now=world.tick(),
    )


def test_a_passed_deadline_checkpoints_the_sprint_once_per_deadline_value(world):
    deadline = world.now + timedelta(hours=1)
    sprint = _sprint(world, deadline=deadline)

    assert watch_sweep(project=world.project, now=deadline - timedelta(seconds=1)).actions == []
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS

    sweep = watch_sweep(project=world.project, now=deadline)
    assert sweep.actions == [
        f"sprint checkpoint: sprint-1 deadline {p.format_timestamp(deadline)} passed"
    ]
    sprint = Sprint.objects.get(pk=sprint.pk)
    assert sprint.status == SprintStatus.CHECKPOINT
    assert sprint.checkpoint_at == deadline
    [event] = _events(world, Action.SPRINT_CHECKPOINT)
    assert event.actor_kind == "system"
    assert "deadline" in event.detail and "passed" in event.detail
    assert watch_sweep(project=world.project, now=deadline + timedelta(hours=3)).actions == []

    # Continuing under the deadline already passed is refused, with what to do instead.
    now = deadline + timedelta(hours=4)
    exc, _ = assert_refused_unchanged(
        lambda: sprint_services.sprint_resume(
            sprint=sprint, actor=world.admin, decision="go on", now=now
        ),
        project=world.project,
        obj=sprint,
        exc_type=Conflict,
    )
    assert "set a new future deadline or clear it" in exc.message

    # A new future deadline: continuing is allowed, and that deadline checkpoints once more.
    new_deadline = now + timedelta(hours=2)
    sprint_services.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=new_deadline, now=now
    )
    sprint_services.sprint_resume(sprint=sprint, actor=world.admin, decision="go on", now=now)
    assert watch_sweep(project=world.project, now=new_deadline - timedelta(seconds=1)).actions == []
    assert watch_sweep(project=world.project, now=new_deadline).actions == [
        f"sprint checkpoint: sprint-1 deadline {p.format_timestamp(new_deadline)} passed"
    ]
    assert len(_events(world, Action.SPRINT_CHECKPOINT)) == 2

    # Clearing the deadline: continuing is allowed and no deadline checkpoints it again.
    later = new_deadline + timedelta(minutes=1)
    sprint_services.sprint_set_deadline(sprint=sprint, actor=world.admin, deadline=None, now=later)
    sprint_services.sprint_resume(sprint=sprint, actor=world.admin, decision="no rush", now=later)
    assert watch_sweep(project=world.project, now=later + timedelta(days=30)).actions == []
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS


def test_a_past_deadline_cannot_be_set(world):
    sprint = _sprint(world, deadline=world.now + timedelta(hours=1))
    with pytest.raises(ProtocolValidationError) as caught:
        sprint_services.sprint_set_deadline(
            sprint=sprint, actor=world.admin, deadline=world.now, now=world.now
        )
    assert caught.value.code == "validation_error"


def test_a_sprint_whose_planned_tasks_all_ended_completes(world):
    # A sprint planned on work already merged (a late plan, or an imported blackboard): no
    # merge will come to complete it, the watcher does.
    world.merged("T-1")
    sprint = sprint_services.sprint_create(
        project=world.project, actor=world.planner, planned=["T-1"], now=world.tick()
    )
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS

    now = world.tick()
    assert watch_sweep(project=world.project, now=now).actions == ["sprint completed: sprint-1"]
    sprint = Sprint.objects.get(pk=sprint.pk)
    assert (sprint.status, sprint.ended) == (SprintStatus.COMPLETED, now)
    [event] = _events(world, Action.SPRINT_COMPLETED)
    assert event.actor_kind == "system"
    assert watch_sweep(project=world.project, now=now + timedelta(minutes=1)).actions == []


def test_a_sprint_with_open_planned_work_is_not_completed(world):
    world.merged("T-1")
    world.unclaimed("T-2")
    sprint = sprint_services.sprint_create(
        project=world.project, actor=world.planner, planned=["T-1", "T-2"], now=world.tick()
    )
    assert watch_sweep(project=world.project, now=world.tick()).actions == []
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS


def test_a_sweep_touches_only_its_own_project(world):
    from tests.lifecycle import World

    task = world.claimed("T-1")
    other = World()
    now = task.lease_expires + timedelta(hours=1)
    assert watch_sweep(project=other.project, now=now).actions == []
    assert world.coder.status == AgentStatus.WORKING
    assert Agent.objects.filter(project=world.project, lost_task__isnull=False).count() == 0


# -- "watcher last seen" (issue #11): each sweep records itself -------------------------------


@pytest.mark.parametrize(
    ("age", "silent"),
    [(None, True), (0, False), (29, False), (30, False), (31, True), (3600, True)],
    ids=["never", "just now", "29 s", "exactly 3 intervals", "31 s", "an hour"],
)
def test_the_watcher_is_reported_silent_after_three_watch_intervals(world, age, silent):
    config = config_of(world.project)
    assert config.watch_interval == 10
    if age is not None:
        watch_sweep(project=world.project, now=world.now - timedelta(seconds=age))
    world.project.refresh_from_db()
    seen = watcher_seen(project=world.project, config=config, now=world.now)
    assert (seen.age_seconds, seen.silent, seen.silent_after) == (age, silent, 30)


@pytest.mark.django_db(transaction=True)
def test_a_watcher_back_after_a_silence_makes_open_boards_redraw_their_header(settings):
    with in_memory_layer_settings(settings):
        world = World()
        layer = get_channel_layer()
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)(board_group(world.project.pk), channel)

        sweeps = []

        async def next_message(timeout: float = 0.5):
            """The next board event; each sweep's own note (`watcher.swept`) is set aside."""
            try:
                while True:
                    message = await asyncio.wait_for(layer.receive(channel), timeout)
                    if message["type"] != "watcher.swept":
                        return message
                    sweeps.append(message)
            except TimeoutError:
                return None

        header = {"kind": "sprint", "id": world.project.pk}
        now = world.now
        watch_sweep(project=world.project, now=now)  # the first sweep ever
        assert header in async_to_sync(next_message)()["changes"]
        watch_sweep(project=world.project, now=now + timedelta(seconds=10))  # on time: quiet
        assert async_to_sync(next_message)() is None
        watch_sweep(project=world.project, now=now + timedelta(seconds=41))  # 31 s of silence
        assert header in async_to_sync(next_message)()["changes"]
        # Every sweep, quiet or not, tells open boards it happened (issue 25): 3 intervals.
        assert async_to_sync(next_message)() is None
        assert len(sweeps) == 3
        assert {m["silent_after"] for m in sweeps} == {3 * world.project.config.watch_interval}
        world.project.refresh_from_db()
        assert world.project.last_swept == now + timedelta(seconds=41)


@pytest.mark.django_db(transaction=True)
def test_an_alert_raised_or_resolved_redraws_the_header_and_its_card(settings):
    with in_memory_layer_settings(settings):
        world = World(now=timezone.now())
        goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
        task = world.blocked("T-1")
        watch_sweep(project=world.project, now=world.tick())  # first sweep: raises BLOCKED
        layer = get_channel_layer()
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)(board_group(world.project.pk), channel)

        async def next_changes(timeout: float = 0.5):
            try:
                while True:
                    message = await asyncio.wait_for(layer.receive(channel), timeout)
                    if message["type"] != "watcher.swept":  # each sweep's note, not a change
                        return message["changes"]
            except TimeoutError:
                return None

        watch_sweep(project=world.project, now=world.tick(10))  # the same alert: nothing new
        assert async_to_sync(next_changes)() is None
        tasks_services.task_abandon(
            task=world.task("T-1"), actor=world.admin, reason="Not needed", now=world.tick()
        )
        # The abandon ends the alert itself (issue 25): its own message redraws the header and
        # the card, and the next sweep has nothing left to resolve.
        changes = async_to_sync(next_changes)()
        assert {"kind": "sprint", "id": world.project.pk} in changes
        assert {"kind": "task", "id": task.pk} in changes
        assert not Alert.objects.filter(task=task, resolved_at__isnull=True).exists()
        watch_sweep(project=world.project, now=world.tick(10))
        assert async_to_sync(next_changes)() is None


def test_a_passed_deadline_raises_one_sprint_deadline_alert_until_a_new_deadline(world):
    """Besides the checkpoint: a SPRINT DEADLINE alert, raised by the sweep that checkpoints,
    counted (not repeated) by the next ones, resolved by a new future deadline."""
    from boards.coordination.models.records import Alert

    deadline = world.now + timedelta(hours=1)
    sprint = _sprint(world, deadline=deadline)
    alerts = Alert.objects.filter(project=world.project, type=Alert.Type.SPRINT_DEADLINE)
    watch_sweep(project=world.project, now=deadline - timedelta(seconds=1))
    assert not alerts.exists()

    sweep = watch_sweep(project=world.project, now=deadline)
    [alert] = alerts.all()
    assert (alert.subject, alert.level, alert.resolved_at) == ("sprint-1", "warning", None)
    assert "SPRINT DEADLINE REACHED" in alert.message
    assert p.format_timestamp(deadline) in alert.message
    assert any("SPRINT DEADLINE REACHED" in line for line in sweep.alerts)
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.CHECKPOINT

    watch_sweep(project=world.project, now=deadline + timedelta(minutes=5))
    assert alerts.count() == 1  # the same open alert, seen again

    now = deadline + timedelta(minutes=10)
    sprint = Sprint.objects.get(pk=sprint.pk)
    sprint_services.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=now + timedelta(hours=1), now=now
    )
    sprint_services.sprint_resume(sprint=sprint, actor=world.admin, decision="go on", now=now)
    watch_sweep(project=world.project, now=now)
    [alert] = alerts.all()
    assert alert.resolved_at == now
