"""A project's pause / resume and its config (services.projects: project_pause, project_resume,
config_update; SPEC §7).

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from agents.services import agent_heartbeat
from boards.coordination.models.projects import Project
from boards.coordination.services import projects
from boards.errors import (
    Conflict,
    ProtocolValidationError,
    StopWork,
)
from tests.coordination.services.helpers import (
    _claim_next,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    row_snapshot,
)

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# project pause / resume
# ---------------------------------------------------------------------------------------------


def test_pause_stops_claims_and_heartbeats_answer_stop(world):
    world.claimed("t1")
    world.unclaimed("t2")

    project = projects.project_pause(
        project=world.project, actor=world.admin, reason="Budget review", now=world.tick()
    )

    assert (project.paused_at, project.paused_reason) == (world.now, "Budget review")
    (event,) = applied_events(world.project, action="project_paused")
    assert (event.actor_kind, event.detail) == ("human", "Budget review")
    assert_valid(world.project, now=world.now)
    with pytest.raises(StopWork) as caught:
        _claim_next(world, "coder-2")
    assert (caught.value.code, caught.value.details["exit"]) == ("paused", 42)
    beat = agent_heartbeat(agent=world.coder, now=world.tick())
    assert beat.stop.code == "paused"
    assert_refused_unchanged(
        lambda: projects.project_pause(
            project=Project.objects.get(pk=world.project.pk),
            actor=world.admin,
            reason="Again",
            now=world.tick(),
        ),
        project=world.project,
        obj=Project.objects.get(pk=world.project.pk),
        exc_type=Conflict,
    )

    project = projects.project_resume(project=world.project, actor=world.admin, now=world.tick())

    assert (project.paused_at, project.paused_reason) == (None, "")
    assert [e.action for e in applied_events(world.project)][-1] == "project_resumed"
    assert _claim_next(world, "coder-2").key == "t2"
    assert agent_heartbeat(agent=world.coder, now=world.tick()).stop is None
    assert_valid(world.project, now=world.now)


def test_resuming_a_running_project_conflicts(world):
    assert_refused_unchanged(
        lambda: projects.project_resume(project=world.project, actor=world.admin, now=world.tick()),
        project=world.project,
        obj=Project.objects.get(pk=world.project.pk),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


def test_config_is_edited_with_an_event_old_to_new(world):
    config = projects.config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        max_review_cycles=3,
        escalation_webhook="https://hooks.example.test/liza",
        integration_branch="integration",  # unchanged: not in the event
    )

    assert (config.max_review_cycles, config.escalation_webhook) == (
        3,
        "https://hooks.example.test/liza",
    )
    (event,) = applied_events(world.project, action="config_updated")
    assert event.actor_kind == "human"
    # The webhook's URL stays out of the log's text (issue #27): its data has it redacted.
    assert event.detail == "max_review_cycles 5 → 3, escalation_webhook changed"
    assert event.data["changes"]["escalation_webhook"] == {
        "old": "",
        "new": "https://hooks.example.test/…",
    }
    assert world.project.config.max_review_cycles == 3
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize(
    ("fields", "field", "exc_type"),
    [
        ({"lease_duration": 30}, "lease_duration", ProtocolValidationError),  # ≤ heartbeat_interval
        ({"max_review_cycles": 0}, "max_review_cycles", ProtocolValidationError),
        ({"heartbeat_interval": "soon"}, "heartbeat_interval", ProtocolValidationError),
        ({"escalation_webhook": "not a url"}, "escalation_webhook", ProtocolValidationError),
        ({"lease_duraton": 600}, "lease_duraton", ProtocolValidationError),
        ({"lease_grace": True}, "lease_grace", ProtocolValidationError),
        ({}, "config", ProtocolValidationError),
    ],
)
def test_config_rules_refuse_naming_the_field(world, fields, field, exc_type):
    before = row_snapshot(world.project.config)
    with pytest.raises(exc_type) as caught:
        projects.config_update(project=world.project, actor=world.admin, now=world.tick(), **fields)
    # One error type whatever refused it (the model's rules or the service's): 400 naming it.
    assert field in caught.value.details["fields"]
    assert row_snapshot(world.project.config) == before
    assert not applied_events(world.project, action="config_updated")
