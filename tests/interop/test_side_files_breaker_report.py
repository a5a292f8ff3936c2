"""`.liza/circuit_breaker_report.md` (original-liza.md §2.7): written by the export from the
report the current trip stored, never read back by the import (docs/decisions.md "Circuit
breaker report file"), and `review_churn_threshold` kept out of state.yaml like watch_interval."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import CircuitBreaker, CircuitBreakerCheck
from boards.coordination.services.goals import goal_create
from boards.coordination.services.projects import config_update
from boards.coordination.services.sprints import sprint_create
from boards.interop.exporting import export_log, export_state, write_liza_dir
from boards.interop.side_files import export_breaker_report
from boards.interop.yaml_io import dump_yaml
from boards.watch.services.breaker import circuit_breaker_resolve
from boards.watch.services.watch import watch_sweep
from tests.interop.test_reading_hostile import NOT_REGULAR, _timed
from tests.watch.breaker_fixtures import blocker, log, trip

pytestmark = pytest.mark.django_db

REPORT = "circuit_breaker_report.md"


@pytest.fixture
def tripped(world):
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    trip(world)
    return world


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((directory / ".liza").iterdir())}


def _fenced_yaml(text: str) -> object:
    match = re.search(r"^(`{3,})yaml\n(.*?)^\1$", text, re.M | re.S)
    assert match, text
    return yaml.safe_load(match.group(2))


def test_the_trip_report_is_written_from_the_stored_report_and_stays_valid(
    tripped, original_liza, tmp_path
):
    world = tripped
    stored = CircuitBreakerCheck.objects.get(project=world.project, result="TRIGGERED").report

    paths = write_liza_dir(world.project, tmp_path)

    report = tmp_path / ".liza" / REPORT
    assert report in paths and report.is_file()
    text = report.read_text(encoding="utf-8")
    head = text.split("## Evidence")[0]
    assert head == (
        "# Circuit Breaker Report\n\n"
        f"**Triggered:** {stored['triggered']}\n"
        "**Pattern:** external_service_outage\n"
        "**Severity:** EXTERNAL_DEPENDENCY\n"
        f"**Sprint:** {stored['sprint']}\n\n"
    )
    assert "| payment-gateway-api | 2 | — | #1, #2 |\n" in text
    # The raw anomalies are state.yaml's own entries, in the seed's key order.
    state = export_state(world.project)
    assert _fenced_yaml(text) == yaml.safe_load(dump_yaml(state["anomalies"]))
    assert text.endswith("".join(f"- [ ] {item}\n" for item in stored["checklist"]))
    assert state["circuit_breaker"]["current_trigger"]["report_file"] == REPORT
    run = original_liza.validate(tmp_path)
    assert run.returncode == 0 and run.stdout.strip().endswith("VALID"), run.stdout + run.stderr


def test_no_current_trigger_no_report(world, tmp_path):
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    sprint_create(project=world.project, actor=world.planner, now=world.tick())
    assert export_breaker_report(world.project) is None
    write_liza_dir(world.project, tmp_path / "never")
    assert not (tmp_path / "never" / ".liza" / REPORT).exists()

    trip(world)
    assert export_breaker_report(world.project) is not None
    circuit_breaker_resolve(
        breaker=CircuitBreaker.objects.get(project=world.project),
        actor=world.admin,
        reason="Gateway back",
        now=world.tick(),
    )
    assert export_breaker_report(world.project) is None  # resolved: current_trigger is null
    assert REPORT not in {p.name for p in write_liza_dir(world.project, tmp_path / "resolved")}


def test_what_agents_wrote_cannot_break_the_table_or_the_yaml_block(world):
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    sprint_create(project=world.project, actor=world.planner, now=world.tick())
    hostile = "gw | api\n````\n## not a heading"
    log(world, [blocker(hostile), blocker(hostile)])
    watch_sweep(project=world.project, now=world.tick())

    text = export_breaker_report(world.project)
    assert text is not None
    rows = [line for line in text.splitlines() if line.startswith("| gw")]
    assert rows == ["| gw \\| api ```` ## not a heading | 2 | — | #1, #2 |"]
    assert "\n## not a heading" not in text
    details = [a["details"]["blocker_service"] for a in _fenced_yaml(text)]
    assert details == [hostile, hostile]


def test_an_import_ignores_the_report_file_and_round_trips_byte_identical(
    tripped, manage, tmp_path
):
    world = tripped
    run = manage("liza_export", str(tmp_path / "first"), project=world.project.slug)
    assert run.code == 0, run.err
    liza = tmp_path / "first" / ".liza"
    names = ("state.yaml", "log.yaml", "alerts.log", REPORT)
    assert run.out_lines == [str(liza / name) for name in names]

    run = manage("liza_import", str(tmp_path / "first"), project="copy")
    assert run.code == 0, run.err
    copy = Project.objects.get(slug="copy")
    assert dump_yaml(export_state(copy)) == dump_yaml(export_state(world.project))
    assert dump_yaml(export_log(copy)) == dump_yaml(export_log(world.project))
    # The report is not mapped back (its anomaly numbers and evidence keys are the source's
    # rows): the copy's trip keeps none, so its export writes no report file.
    assert not CircuitBreakerCheck.objects.filter(project=copy, report__isnull=False).exists()
    write_liza_dir(copy, tmp_path / "second")
    first, second = _files(tmp_path / "first"), _files(tmp_path / "second")
    assert first.pop(REPORT)
    assert REPORT not in second
    for name in ("state.yaml", "log.yaml"):
        assert first[name] == second[name], name


HOSTILE_REPORTS = {
    **{case: make for case, (make, _) in NOT_REGULAR.items()},
    "not UTF-8": lambda path: path.write_bytes(b"\xff\xfe# \x00\x01 report"),
    "not what we write": lambda path: path.write_text("# Circuit Breaker Report\n| a |\n"),
}


@pytest.mark.parametrize("case", list(HOSTILE_REPORTS))
def test_a_hostile_report_file_is_never_read(tripped, manage, tmp_path, case):
    world = tripped
    write_liza_dir(world.project, tmp_path)
    path = tmp_path / ".liza" / REPORT
    path.unlink()
    HOSTILE_REPORTS[case](path)

    run = _timed(manage, "liza_import", str(tmp_path), project="copy")

    assert run.code == 0, run.err
    assert "Traceback" not in run.err and REPORT not in run.out + run.err
    copy = Project.objects.get(slug="copy")
    assert dump_yaml(export_state(copy)) == dump_yaml(export_state(world.project))


def test_review_churn_threshold_stays_out_of_state_yaml_like_watch_interval(
    tripped, original_liza, manage, tmp_path
):
    """The policy for non-seed keys (exporting._config, schema.EXTRA_CONFIG_KEYS): only SPEC
    §4's lease_grace and archive_after_days are written, and only when not the default."""
    world = tripped
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        review_churn_threshold=3,
        watch_interval=4,
        archive_after_days=7,
    )
    config = export_state(world.project)["config"]
    assert "review_churn_threshold" not in config and "watch_interval" not in config
    assert config["archive_after_days"] == 7
    write_liza_dir(world.project, tmp_path)
    run = original_liza.validate(tmp_path)
    assert run.returncode == 0 and run.stdout.strip().endswith("VALID"), run.stdout + run.stderr

    # A state.yaml carrying it (another tool's) is warned about and left out, as watch_interval.
    state = export_state(world.project)
    state["config"] |= {"review_churn_threshold": 3, "watch_interval": 4}
    (tmp_path / ".liza" / "state.yaml").write_text(dump_yaml(state), encoding="utf-8")
    run = manage("liza_import", str(tmp_path), project="copy")
    assert run.code == 0, run.err
    for key in ("review_churn_threshold", "watch_interval"):
        assert f"config: {key}: not a key Liza Board keeps; left out" in run.out, run.out
    copy = ProjectConfig.objects.get(project__slug="copy")
    assert (copy.review_churn_threshold, copy.watch_interval) == (8, 10)
