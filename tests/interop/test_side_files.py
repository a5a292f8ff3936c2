"""`.liza/alerts.log` (issue #11): the original watcher's `[ts] LEVEL message` lines, one when an
alert is raised, one when it is escalated and one when it is resolved, oldest first."""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards.coordination.models.records import Alert
from boards.interop.side_files import export_alerts_log
from tests.factories import T0
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


def test_raised_escalated_and_resolved_alerts_in_time_order():
    world = World(now=T0)
    Alert.objects.create(
        project=world.project, type=Alert.Type.STALE_CHECKPOINT, level=Alert.Level.CRITICAL,
        subject="sprint-1", message="CHECKPOINT STUCK: sprint-1 for 2 h", created=T0,
        escalated_at=T0 + timedelta(hours=2),
    )  # fmt: skip
    Alert.objects.create(
        project=world.project, type=Alert.Type.BLOCKED, level=Alert.Level.WARNING,
        subject="task-5", message="BLOCKED: task-5 —\n  spec gap",
        created=T0 + timedelta(minutes=1), resolved_at=T0 + timedelta(minutes=30),
    )  # fmt: skip
    World(now=T0).project.alerts.create(  # another project's: not in this one's file
        type=Alert.Type.BLOCKED, message="elsewhere", created=T0
    )
    assert export_alerts_log(world.project) == (
        "[2026-01-05T09:00:00Z] CRITICAL CHECKPOINT STUCK: sprint-1 for 2 h\n"
        "[2026-01-05T09:01:00Z] WARNING BLOCKED: task-5 — spec gap\n"
        "[2026-01-05T09:30:00Z] RESOLVED BLOCKED: task-5 — spec gap\n"
        "[2026-01-05T11:00:00Z] ESCALATED CRITICAL CHECKPOINT STUCK: sprint-1 for 2 h\n"
    )


def test_no_alert_is_an_empty_file():
    assert export_alerts_log(World(now=T0).project) == ""
