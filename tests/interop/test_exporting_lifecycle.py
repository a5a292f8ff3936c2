"""A board written by the services (every state, reviews, records) survives export → import."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.services import agent_handoff
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Review
from boards.coordination.services import records, reviews, tasks
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.errors import ProtocolError
from boards.interop.exporting import export_log, export_state
from boards.interop.importing import import_project
from boards.interop.validation import validate_state
from boards.interop.yaml_io import dump_yaml

pytestmark = pytest.mark.django_db


def build_board(world) -> None:
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship retries", now=world.tick()
    )
    for status in ("DRAFT", "UNCLAIMED", "MERGED", "BLOCKED", "SUPERSEDED", "ABANDONED"):
        world.drive_to(status, f"t-{status.lower()}")
    world.drive_to("INTEGRATION_FAILED", "t-fix")
    tasks.task_claim(task=world.task("t-fix"), agent=world.agent("coder-2"), now=world.tick())
    world.drive_to("REJECTED", "t-rejected", max_iterations=4, lease_duration_override=900)
    # A complex task halfway through its round: one approval given, a second reviewer busy.
    world.drive_to("READY_FOR_REVIEW", "t-complex", coder="coder-3", criticality="complex")
    world.claim_review("t-complex", "code-reviewer-1")
    world.verdict("t-complex", "APPROVED", "code-reviewer-1")
    world.claim_review("t-complex", "code-reviewer-2")
    with pytest.raises(ProtocolError):  # a refused attempt is an event too (SPEC §4.1)
        world.claim_review("t-complex", "code-reviewer-1")
    sprint_create(
        project=world.project,
        actor=world.planner,
        goal=goal,
        now=world.tick(),
        planned=["t-merged", "t-complex"],
        stretch=["t-draft"],
        deadline=world.now + timedelta(days=2),
    )
    agent_handoff(
        agent=world.agent("coder-2"),
        task=world.task("t-fix"),
        now=world.tick(),
        summary="Half the conflicts resolved",
        next_action="Resolve api.py",
        context_used="88%",
        files_modified=["api.py"],
    )
    records.discovery_create(
        project=world.project,
        actor=world.coder,
        description="No idempotency keys",
        severity="high",
        during="t-rejected",
        now=world.tick(),
    )
    records.anomaly_create(
        project=world.project,
        actor=world.coder,
        anomaly_type="retry_loop",
        details={"count": 3, "error_pattern": "timeout"},
        task="t-rejected",
        now=world.tick(),
    )
    records.human_note_create(
        project=world.project, actor=world.admin, message="Mind the API", now=world.tick()
    )
    records.spec_change_record(
        project=world.project,
        actor=world.planner,
        spec="specs/a.md",
        change="Added retries",
        now=world.tick(),
    )
    assert reviews  # the module drives the verdicts above through World


def test_a_services_board_round_trips_byte_for_byte(world):
    build_board(world)
    state, log = export_state(world.project), export_log(world.project)

    result = import_project(
        slug="copy", name="Copy", state=state, log=log, lenient=True, now=world.now
    )
    imported = result.project

    assert result.warnings == []  # our own export has no gap to fill

    assert dump_yaml(export_state(imported)) == dump_yaml(state)
    assert dump_yaml(export_log(imported)) == dump_yaml(log)
    assert validate_state(export_state(imported)) == validate_state(state)
    copy = Project.objects.get(slug="copy")
    # The open round of the complex task: one approval kept, one live review lease.
    round_ = Review.objects.filter(task__project=copy, task__key="t-complex", closed_at=None)
    assert sorted((r.reviewer, r.verdict) for r in round_) == [
        ("code-reviewer-1", "APPROVED"),
        ("code-reviewer-2", ""),
    ]
    rejected_attempts = copy.events.filter(outcome="rejected")
    assert rejected_attempts.count() == world.project.events.filter(outcome="rejected").count() > 0
