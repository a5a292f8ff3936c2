"""`manage.py liza_watch --once` on the demo project: it runs clean, and the board it leaves
still passes our validator and the original Liza's (SPEC §8, §9)."""

from __future__ import annotations

import re

import pytest

from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert, Event
from boards.protocol import format_timestamp
from tests.interop.test_exporting_original_judge import _export

pytestmark = pytest.mark.django_db


def test_one_sweep_of_the_demo_runs_clean_and_keeps_it_valid(
    manage, original_liza, tmp_path, flow_demo_skipped
):
    assert manage("liza_demo").code == 0
    before = Event.objects.count()

    run = manage("liza_watch", once=True, project=["demo"])

    assert (run.code, run.err) == (0, "")
    # The demo's leases are live (its timestamps are moved to now): no action is due, only
    # the alerts of what the example blackboard shows (each raised once).
    *alerts, heartbeat = run.out_lines
    assert heartbeat.endswith("liza_watch heartbeat: 1 project(s) swept, 0 action(s)")
    assert all(": alert " in line for line in alerts), alerts
    assert len(alerts) == Alert.objects.filter(project__slug="demo").count()
    assert Event.objects.count() == before
    assert manage("liza_validate", project="demo").out_lines == ["VALID"]
    judged = original_liza.validate(_export(Project.objects.get(slug="demo"), tmp_path / "demo"))
    assert judged.returncode == 0 and judged.stdout.strip().endswith("VALID"), judged.stdout
    # The alerts go to .liza/alerts.log in the original watcher's `[ts] LEVEL message` lines.
    lines = (tmp_path / "demo" / ".liza" / "alerts.log").read_text().splitlines()
    raised = Alert.objects.filter(project__slug="demo").order_by("created", "id")
    assert lines == [
        f"[{format_timestamp(a.created)}] {a.level.upper()} {a.message}" for a in raised
    ]
    assert all(
        re.fullmatch(r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\] [A-Z]+ .+", line) for line in lines
    )


def test_an_unknown_project_is_refused_by_name(manage):
    run = manage("liza_watch", once=True, project=["no-such"])
    assert run.code == 1
    assert "no such project: no-such" in run.err
