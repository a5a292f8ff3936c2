"""How every alert condition is said (`AlertKind`): its headline, its level, and the cuts that
make any condition fit the Alert row it raises; the stale checkpoint's escalation steps read
back from those headlines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Task
from boards.watch.selectors.conditions.base import (
    STALE_CHECKPOINT_LEVELS,
    STALE_PAUSE_LEVELS,
    AlertKind,
    escalation_step,
    stale_kind,
)
from boards.watch.selectors.conditions.project import BUDGET_AT_80, BUDGET_EXHAUSTED
from boards.watch.selectors.conditions.tasks import APPROACHING_LIMITS, LEASE_EXPIRED

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_kind_is_headed_by_its_type_words_unless_it_names_its_own():
    assert LEASE_EXPIRED.about("t1", "coder-1 on t1").message == "LEASE EXPIRED: coder-1 on t1"
    assert APPROACHING_LIMITS.headline == "APPROACHING LIMIT"


def test_a_task_alert_is_about_the_task_and_carries_its_level_agent_and_age():
    task = Task(key="t7")
    condition = LEASE_EXPIRED.on(task, "coder-1 on t7", agent_id="coder-1", since=NOW)
    assert (condition.type, condition.subject, condition.level) == (
        Alert.Type.LEASE_EXPIRED,
        "t7",
        Alert.Level.WARNING,
    )
    assert (condition.task, condition.agent_id, condition.since) == (task, "coder-1", NOW)
    assert (
        condition.logged(NOW + timedelta(minutes=31)) == "LEASE EXPIRED: coder-1 on t7 (for 31 min)"
    )


def test_a_condition_is_cut_to_the_alert_row_it_raises():
    subject_length = Alert._meta.get_field("subject").max_length
    message_length = Alert._meta.get_field("message").max_length
    condition = BUDGET_EXHAUSTED.about("x" * 300, "y" * 3000)
    assert len(condition.subject) == subject_length
    assert len(condition.message) == message_length
    assert condition.message.startswith("BUDGET EXHAUSTED: yyy")


def test_an_escalating_alert_is_one_type_with_a_kind_per_level():
    assert BUDGET_AT_80.type == BUDGET_EXHAUSTED.type == Alert.Type.BUDGET
    assert (BUDGET_AT_80.level, BUDGET_EXHAUSTED.level) == (
        Alert.Level.WARNING,
        Alert.Level.CRITICAL,
    )


def test_columns_are_the_alert_fields_the_condition_fills():
    task = Task(key="t7")
    columns = LEASE_EXPIRED.on(task, "coder-1 on t7", agent_id="coder-1").columns()
    assert columns == {
        "type": Alert.Type.LEASE_EXPIRED,
        "subject": "t7",
        "level": Alert.Level.WARNING,
        "message": "LEASE EXPIRED: coder-1 on t7",
        "task": task,
        "agent_id": "coder-1",
        "since": None,
    }
    assert columns["task"] is task  # the row itself, not a copy
    assert set(columns) <= {f.name for f in Alert._meta.get_fields()}


@pytest.mark.parametrize(
    ("minutes", "headline", "step"),
    [
        (29, None, 0),
        (31, "CHECKPOINT STALE", 1),
        (121, "CHECKPOINT STUCK", 2),
        (8 * 60 + 1, "CHECKPOINT ABANDONED?", 3),
    ],
)
def test_a_stale_checkpoint_is_headed_by_how_long_it_lasted(minutes, headline, step):
    kind = stale_kind(STALE_CHECKPOINT_LEVELS, NOW - timedelta(minutes=minutes), NOW)
    assert (kind.headline if kind else None) == headline
    if kind is not None:
        message = kind.about("S2", "S2 at CHECKPOINT").message
        assert escalation_step(Alert.Type.STALE_CHECKPOINT, message) == step


def test_a_pause_escalates_but_only_a_checkpoint_counts_steps():
    kind = stale_kind(STALE_PAUSE_LEVELS, NOW - timedelta(hours=3), NOW)
    assert isinstance(kind, AlertKind) and kind.headline == "PAUSE FORGOTTEN?"
    assert kind.level == Alert.Level.CRITICAL
    assert escalation_step(Alert.Type.STALE_PAUSE, kind.about("p", "project paused").message) == 0
