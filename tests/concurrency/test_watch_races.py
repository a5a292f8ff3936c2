"""Several watchers at once never act twice (SPEC §9 "Safe with several watchers running"):
three real `manage.py liza_watch --once` processes, and three sweeps released together in
threads, on a board with many due actions; every action happens exactly once (events counted).
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services.goals import goal_create
from boards.coordination.services.projects import config_update
from boards.protocol import Action, AgentStatus, SprintStatus, TaskStatus
from boards.watch.services.watch import _take_sweep_lock, watch_sweep
from tests.concurrency.conftest import agent_row_held, run_together
from tests.factories import register
from tests.lifecycle import World
from tests.live_server import watcher_process

pytestmark = pytest.mark.django_db(transaction=True)

CLAIMS = 12  # coders whose task leases are dead
REVIEWS = 2  # reviewers whose review claims are dead


def _board_with_due_actions() -> World:
    """Everything made at T0 (January 2026): by the real clock every lease is long dead and the
    sprint's deadline long passed."""
    world = World()
    goal_create(project=world.project, actor=world.planner, description="Goal", now=world.now)
    for i in range(CLAIMS):
        coder = f"coder-{10 + i}"
        register(world.project, coder, now=world.now)
        world.claimed(f"C-{i}", coder)
    for i in range(REVIEWS):
        world.ready_for_review(f"R-{i}", f"coder-{i + 1}")
        world.claim_review(f"R-{i}", f"code-reviewer-{i + 1}")
    world.unclaimed("P-1")
    sprint_services.sprint_create(
        project=world.project,
        actor=world.planner,
        planned=["P-1"],
        deadline=world.now + timedelta(hours=1),
        now=world.tick(),
    )
    return world


def _system_events(world: World, action: str) -> int:
    return Event.objects.filter(
        project=world.project,
        action=action,
        actor_kind=Event.ActorKind.SYSTEM,
        outcome=Event.Outcome.APPLIED,
    ).count()


def _assert_each_action_done_once(world: World) -> None:
    assert _system_events(world, Action.LEASE_EXPIRED) == CLAIMS
    assert _system_events(world, Action.REVIEW_CLAIM_RELEASED) == REVIEWS
    assert _system_events(world, Action.SPRINT_CHECKPOINT) == 1
    # Nothing refused either: no watcher tripped over another's work.
    assert not Event.objects.filter(
        project=world.project, actor_kind=Event.ActorKind.SYSTEM, outcome=Event.Outcome.REJECTED
    ).exists()
    for i in range(CLAIMS):
        coder = world.agent(f"coder-{10 + i}")
        assert (coder.status, coder.current_task_id) == (AgentStatus.IDLE, None)
        assert coder.lost_task_id == world.task(f"C-{i}").pk
        assert world.task(f"C-{i}").status == TaskStatus.CLAIMED
    assert not Review.objects.filter(project=world.project, closed_at__isnull=True).exists()
    assert Sprint.objects.get(project=world.project).status == SprintStatus.CHECKPOINT


def test_three_watcher_processes_do_each_action_exactly_once():
    world = _board_with_due_actions()
    watchers = [watcher_process(world.project.slug, once=True) for _ in range(3)]
    outputs = [w.communicate(timeout=120) for w in watchers]
    for watcher, (out, err) in zip(watchers, outputs, strict=True):
        assert watcher.returncode == 0, err
        assert "heartbeat:" in out  # every watcher reports it ran, whether it acted or not
    _assert_each_action_done_once(world)
    # One log line per action, across the three processes together.
    lines = [line for out, _ in outputs for line in out.splitlines()]
    slug = world.project.slug
    assert sum(f"{slug}: lease expired: " in line for line in lines) == CLAIMS
    assert sum(f"{slug}: review lease expired: " in line for line in lines) == REVIEWS
    assert sum(f"{slug}: sprint checkpoint: " in line for line in lines) == 1


def test_three_sweeps_released_together_do_each_action_exactly_once():
    world = _board_with_due_actions()
    now = timezone.now()
    outcomes = run_together(*[lambda: watch_sweep(project=world.project, now=now)] * 3)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    _assert_each_action_done_once(world)
    done = [o.value for o in outcomes if not o.value.skipped]
    assert sum(len(sweep.actions) for sweep in done) == CLAIMS + REVIEWS + 1
    assert all(sweep.errors == [] for sweep in done)


def test_a_watcher_skips_a_project_another_watcher_is_sweeping():
    """The advisory lock: while one sweep's transaction holds it, another sweep of the same
    project does nothing at all; once it is released, the project is swept."""
    world = _board_with_due_actions()
    other = World()  # another project: its lock is a different one
    holding, release = threading.Event(), threading.Event()

    def hold_the_lock() -> bool:
        with transaction.atomic():
            taken = _take_sweep_lock(world.project)
            holding.set()
            release.wait(30)
        return taken

    holder = threading.Thread(target=lambda: (hold_the_lock(), connection.close()), daemon=True)
    holder.start()
    assert holding.wait(30)
    try:
        now = timezone.now()
        sweep = watch_sweep(project=world.project, now=now)
        assert (sweep.skipped, sweep.actions) == (True, [])
        assert _system_events(world, Action.LEASE_EXPIRED) == 0
        assert watch_sweep(project=other.project, now=now).skipped is False
    finally:
        release.set()
        holder.join(30)
    sweep = watch_sweep(project=world.project, now=timezone.now())
    assert sweep.skipped is False
    _assert_each_action_done_once(world)


def _heartbeats(watcher, count: int) -> list[tuple[float, str]]:
    """The watcher's first `count` heartbeat lines (fewer if a minute passes), each with when it
    was read."""
    found: list[tuple[float, str]] = []
    deadline = time.monotonic() + 60
    while len(found) < count and time.monotonic() < deadline:
        line = watcher.stdout.readline()
        if "heartbeat:" in line:
            found.append((time.monotonic(), line))
    return found


def test_the_watcher_loop_sweeps_every_watch_interval_and_stops_on_sigterm():
    world = _board_with_due_actions()
    config_update(project=world.project, actor=world.admin, now=world.tick(), watch_interval=1)
    watcher = watcher_process(world.project.slug)
    try:
        heartbeats = [at for at, _ in _heartbeats(watcher, 3)]
        assert len(heartbeats) == 3, "the watcher did not sweep three times"
        # One sweep a second (the project's watch_interval), not a busy loop.
        assert heartbeats[2] - heartbeats[0] >= 1.5
        watcher.send_signal(signal.SIGTERM)
        try:
            out, err = watcher.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.send_signal(signal.SIGUSR1)  # liza_watch prints every thread's stack
            time.sleep(2)
            watcher.kill()
            out, err = watcher.communicate()
            raise AssertionError(f"no stop within 30 s of SIGTERM:\n{err[-8000:]}") from None
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 0, err
    assert out.rstrip().endswith("liza_watch stopped")
    _assert_each_action_done_once(world)  # the later sweeps found nothing more to do


def test_projects_due_together_are_swept_together_every_interval():
    """Projects of the same watch_interval are due again one interval after their round began,
    not after each one's own sweep: one wake-up and one heartbeat line per interval for all of
    them, instead of rounds that drift apart by the time each sweep takes."""
    worlds = [_board_with_due_actions(), _board_with_due_actions()]
    for world in worlds:
        config_update(project=world.project, actor=world.admin, now=world.tick(), watch_interval=1)
    watcher = watcher_process([w.project.slug for w in worlds])
    try:
        read = _heartbeats(watcher, 4)
        lines = [line.split("heartbeat: ", 1)[1].split(",")[0] for _, line in read]
    finally:
        watcher.kill()
        watcher.communicate()
    assert lines == ["2 project(s) swept"] * 4


def test_a_sweep_kept_waiting_on_a_busy_row_is_logged_and_the_watcher_goes_on():
    """A sweep that waits for a row past the statement timeout (another transaction holds the
    coder's agent row) is contention, not an outage: nothing of it was written, the watcher
    says so and goes on (`--once`: exits 0); the next sweep does what was due."""
    world = World()
    world.claimed("C-1", "coder-1")  # made at T0: by the real clock its lease is long dead
    coder = world.agent("coder-1")
    with agent_row_held(coder.pk):
        watcher = watcher_process(world.project.slug, once=True, env={"DB_STATEMENT_TIMEOUT": "1"})
        _, err = watcher.communicate(timeout=120)
    assert watcher.returncode == 0, err
    assert f"{world.project.slug}: busy (statement_timeout), swept again" in err
    assert _system_events(world, Action.LEASE_EXPIRED) == 0
    sweep = watch_sweep(project=world.project, now=timezone.now())
    assert sweep.actions == ["lease expired: coder-1 on C-1"]
