"""The oversight overlay survives export → import → export (SPEC §8): the human approval gate,
a suspension and a discovery's triage are written only when set, and read back as they were."""

from __future__ import annotations

import pytest

from boards.coordination.models.tasks import Discovery, Task
from boards.coordination.services import records, tasks
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.interop.exporting import export_log, export_state
from boards.interop.importing import import_project
from boards.interop.validation import validate_state
from boards.interop.yaml_io import LizaImportError, dump_yaml

pytestmark = pytest.mark.django_db


def test_the_oversight_fields_round_trip_byte_for_byte(world):
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship retries", now=world.tick()
    )
    world.unclaimed("t-plain")
    world.unclaimed("t-gated", criticality="security-sensitive")
    world.unclaimed("t-held")
    sprint_create(
        project=world.project, actor=world.planner, goal=goal, now=world.tick(), planned=["t-plain"]
    )
    tasks.task_suspend(
        task=world.task("t-held"), actor=world.admin, reason="Legal review", now=world.tick()
    )
    for decision in ("defer", "reject"):
        discovery = records.discovery_create(
            project=world.project,
            actor=world.coder,
            description=f"Finding to {decision}",
            severity="low",
            now=world.tick(),
        )
        records.discovery_triage(
            discovery=discovery,
            actor=world.admin,
            decision=decision,
            note="Later",
            now=world.tick(),
        )
    records.discovery_create(
        project=world.project,
        actor=world.coder,
        description="Still open",
        severity="low",
        now=world.tick(),
    )
    state, log = export_state(world.project), export_log(world.project)

    by_id = {task["id"]: task for task in state["tasks"]}
    assert "needs_human_approval" not in by_id["t-plain"]
    assert "suspended_at" not in by_id["t-plain"]
    assert by_id["t-gated"]["needs_human_approval"] is True
    assert by_id["t-held"]["suspended_reason"] == "Legal review"
    assert by_id["t-held"]["suspended_by"] == world.admin.username
    assert [(d.get("triage"), d.get("triage_note")) for d in state["discovered"]] == [
        ("deferred", "Later"),
        ("rejected", "Later"),
        (None, None),
    ]

    imported = import_project(
        slug="copy", name="Copy", state=state, log=log, lenient=False, now=world.now
    ).project

    assert dump_yaml(export_state(imported)) == dump_yaml(state)
    assert dump_yaml(export_log(imported)) == dump_yaml(log)
    assert validate_state(export_state(imported)) == validate_state(state) == []
    held = Task.objects.get(project=imported, key="t-held")
    assert (held.suspended_at, held.suspended_reason) == (
        world.task("t-held").suspended_at,
        "Legal review",
    )
    assert Task.objects.get(project=imported, key="t-gated").needs_human_approval is True
    assert list(
        Discovery.objects.filter(project=imported)
        .order_by("disc_id")
        .values_list("triage", flat=True)
    ) == ["deferred", "rejected", "open"]


def test_an_unknown_triage_value_is_refused_on_import(world):
    goal_create(
        project=world.project, actor=world.planner, description="Ship retries", now=world.tick()
    )
    records.discovery_create(
        project=world.project, actor=world.coder, description="x", severity="low", now=world.tick()
    )
    state, log = export_state(world.project), export_log(world.project)
    state["discovered"][0]["triage"] = "maybe"

    with pytest.raises(LizaImportError) as caught:
        import_project(slug="bad", name="Bad", state=state, log=log, lenient=False, now=world.now)
    assert "triage" in str(caught.value)
