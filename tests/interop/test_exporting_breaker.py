"""The circuit breaker in state.yaml (seed 002 `circuit_breaker`): a trip and its resolution
are exported in the seed's fields, survive export → import → export, and the original
validator still says VALID."""

from __future__ import annotations

import pytest

from boards.coordination.models.records import CircuitBreaker
from boards.coordination.services.goals import goal_create
from boards.interop.exporting import export_log, export_state, write_liza_dir
from boards.interop.importing import import_project
from boards.interop.validation import validate_state
from boards.interop.yaml_io import dump_yaml
from boards.protocol import format_timestamp
from boards.watch.services.breaker import circuit_breaker_resolve
from tests.factories import member
from tests.watch.breaker_fixtures import trip

pytestmark = pytest.mark.django_db


@pytest.fixture
def tripped(world):
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    trip(world)
    return world


def _breaker(project) -> CircuitBreaker:
    return CircuitBreaker.objects.get(project=project)


def test_a_trip_and_its_resolution_round_trip_and_pass_the_original_validator(
    tripped, original_liza, tmp_path
):
    world = tripped
    triggered = export_state(world.project)["circuit_breaker"]
    assert triggered["status"] == "TRIGGERED"
    assert triggered["current_trigger"]["pattern"] == "external_service_outage"
    assert triggered["current_trigger"]["report_file"] == "circuit_breaker_report.md"
    write_liza_dir(world.project, tmp_path / "triggered")

    now = world.tick()
    circuit_breaker_resolve(
        breaker=_breaker(world.project), actor=world.admin, reason="Gateway back", now=now
    )
    state, log = export_state(world.project), export_log(world.project)
    breaker = state["circuit_breaker"]
    assert (breaker["status"], breaker["current_trigger"]) == ("OK", None)
    [entry] = breaker["history"]
    assert format_timestamp(entry["timestamp"]) == triggered["current_trigger"]["timestamp"]
    assert entry == {
        "timestamp": entry["timestamp"],
        "pattern": "external_service_outage",
        "result": "TRIGGERED",
        "severity": "EXTERNAL_DEPENDENCY",
        "resolution": "Gateway back",
        "resolved_at": entry["resolved_at"],
        "resolved_by": world.admin.username,
    }
    assert entry["resolved_at"] == format_timestamp(now)
    assert any(e["action"] == "circuit_breaker_resolved" for e in log)

    imported = import_project(
        slug="copy", name="Copy", state=state, log=log, lenient=False, now=world.now
    ).project
    assert dump_yaml(export_state(imported)) == dump_yaml(state)
    assert validate_state(state) == []
    write_liza_dir(world.project, tmp_path / "resolved")
    for name in ("triggered", "resolved"):
        run = original_liza.validate(tmp_path / name)
        assert run.returncode == 0 and run.stdout.strip().endswith("VALID"), (
            name,
            run.stdout + run.stderr,
        )


def test_an_imported_trip_is_resolved_in_the_copy(tripped):
    world = tripped
    state, log = export_state(world.project), export_log(world.project)
    imported = import_project(
        slug="copy", name="Copy", state=state, log=log, lenient=False, now=world.now
    ).project
    assert dump_yaml(export_state(imported)) == dump_yaml(state)
    assert _breaker(imported).status == "TRIGGERED"

    circuit_breaker_resolve(
        breaker=_breaker(imported),
        actor=member(imported, "admin"),
        reason="Handled",
        now=world.tick(),
    )
    [entry] = export_state(imported)["circuit_breaker"]["history"]
    assert (entry["result"], entry["resolution"]) == ("TRIGGERED", "Handled")
