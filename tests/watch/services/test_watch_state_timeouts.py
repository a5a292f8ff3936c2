"""Seed 003 per-state timeouts: a budget per task state (project config, empty = none); the
watcher warns at 80 % and at 100 % does the configured action (a critical alert, or a block by
the system with the reason) once, not every sweep. Time in state runs from the task's last
status change."""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards.coordination.models.records import Alert, Event
from boards.coordination.selectors.access import config_of
from boards.coordination.services.projects import config_update
from boards.errors import ProtocolValidationError
from boards.protocol import TaskStatus
from boards.watch.services.watch import watch_sweep

pytestmark = pytest.mark.django_db

BUDGET = 1000


def _budget(world, seconds=BUDGET, **rule):
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.now,
        state_timeouts={TaskStatus.CLAIMED: {"seconds": seconds, **rule}},
    )


def _alerts(world):
    return list(Alert.objects.filter(project=world.project, type=Alert.Type.STATE_TIMEOUT))


def _entered(world, key):
    """The claim: the task's last status change."""
    return Event.objects.get(task=world.task(key), action="claimed").timestamp


def _at(world, key, percent, budget=BUDGET):
    return _entered(world, key) + timedelta(seconds=budget * percent / 100)


def test_no_budget_no_alert(world):
    world.claimed("T-1")
    watch_sweep(project=world.project, now=world.now + timedelta(days=1))
    assert _alerts(world) == []


@pytest.mark.parametrize("action", ["alert", "block"])
def test_79_80_and_100_percent(world, action):
    _budget(world, action=action, reason="claims should not take this long")
    world.claimed("T-1")
    # The budget runs from the status change, not from later heartbeats or edits.
    watch_sweep(project=world.project, now=_at(world, "T-1", 79))
    assert _alerts(world) == []

    watch_sweep(project=world.project, now=_at(world, "T-1", 80))
    [alert] = _alerts(world)
    assert (alert.level, alert.subject) == (Alert.Level.WARNING, "T-1 CLAIMED")
    assert alert.message.startswith("STATE TIMEOUT: T-1 in CLAIMED for 800 s (80 % of 1000 s)")
    assert world.task("T-1").status == TaskStatus.CLAIMED

    at_100 = _at(world, "T-1", 100)
    sweep = watch_sweep(project=world.project, now=at_100)
    if action == "alert":
        [alert] = _alerts(world)
        assert alert.level == Alert.Level.CRITICAL
        assert alert.escalated_at == at_100
        assert world.task("T-1").status == TaskStatus.CLAIMED
        # Once: later sweeps count on the same alert, escalate nothing again.
        again = watch_sweep(project=world.project, now=at_100 + timedelta(seconds=300))
        assert [line for line in again.alerts if "STATE TIMEOUT" in line] == []
        [alert] = _alerts(world)
        assert (alert.count, alert.escalated_at) == (3, at_100)
    else:
        task = world.task("T-1")
        assert task.status == TaskStatus.BLOCKED
        assert task.blocked_reason == (
            "State timeout: CLAIMED for 1000 s (budget 1000 s): claims should not take this long"
        )
        assert sweep.actions == [f"blocked: T-1 ({task.blocked_reason})"]
        [blocked] = Event.objects.filter(task=task, to_status=TaskStatus.BLOCKED)
        assert (blocked.actor_kind, blocked.actor_id) == ("system", "system")
        assert world.coder.lost_task_id == task.pk  # the coder is told: lease_lost, exit 42
        # Once: the task is no longer CLAIMED, nothing more happens.
        again = watch_sweep(project=world.project, now=at_100 + timedelta(seconds=300))
        assert again.actions == []
        assert Event.objects.filter(task=task, to_status=TaskStatus.BLOCKED).count() == 1
        # The CLAIMED budget's alert resolved with the state it was about.
        assert all(a.resolved_at is not None for a in _alerts(world))


def test_leaving_the_state_resolves_the_warning(world):
    _budget(world, seconds=100)  # within the 300 s lease: the coder can still submit
    world.claimed("T-1")
    watch_sweep(project=world.project, now=_at(world, "T-1", 90, 100))
    assert len(_alerts(world)) == 1
    world.now = _at(world, "T-1", 91, 100)
    world.submit("T-1")
    watch_sweep(project=world.project, now=_at(world, "T-1", 200, 100))
    [alert] = _alerts(world)
    assert alert.resolved_at is not None


@pytest.mark.parametrize(
    "value",
    [
        [],
        {"MERGED": {"seconds": 10}},
        {"NOPE": {"seconds": 10}},
        {"CLAIMED": {"seconds": 0}},
        {"CLAIMED": {"seconds": "10"}},
        {"CLAIMED": {"seconds": 10, "action": "explode"}},
        {"CLAIMED": {"seconds": 10, "extra": 1}},
        {"BLOCKED": {"seconds": 10, "action": "block"}},
    ],
    ids=repr,
)
def test_a_bad_table_is_refused_naming_the_field(world, value):
    with pytest.raises(ProtocolValidationError) as refused:
        config_update(project=world.project, actor=world.admin, now=world.now, state_timeouts=value)
    assert "state_timeouts" in refused.value.details["fields"]
    assert config_of(world.project).state_timeouts == {}
