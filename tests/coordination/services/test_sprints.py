"""The sprint deadline (services.sprints.sprint_set_deadline; SPEC §7).

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied

from boards import protocol as p
from boards.coordination.services import sprints
from boards.errors import (
    Conflict,
    ProtocolValidationError,
)
from tests.coordination.services.helpers import (
    _sprint,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# the sprint deadline
# ---------------------------------------------------------------------------------------------


def test_the_deadline_moves_with_an_event_old_to_new(world):
    sprint = _sprint(world)
    old, new = sprint.deadline, world.now + timedelta(days=3)

    sprint = sprints.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=new, now=world.tick()
    )

    assert sprint.deadline == new
    (event,) = applied_events(world.project, action="sprint_deadline_set")
    assert event.actor_kind == "human"
    assert event.detail == (
        f"sprint-1 deadline {p.format_timestamp(old)} → {p.format_timestamp(new)}"
    )
    sprint = sprints.sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=None, now=world.tick()
    )
    assert sprint.deadline is None
    assert_valid(world.project, now=world.now)


def test_a_deadline_in_the_past_or_of_a_closed_sprint_is_refused(world):
    sprint = _sprint(world)
    with pytest.raises(ProtocolValidationError) as caught:
        sprints.sprint_set_deadline(
            sprint=sprint, actor=world.admin, deadline=world.now, now=world.now
        )
    assert caught.value.field == "deadline"
    with pytest.raises(PermissionDenied):
        sprints.sprint_set_deadline(
            sprint=sprint,
            actor=world.planner,
            deadline=world.now + timedelta(days=2),
            now=world.tick(),
        )
    sprints.sprint_abort(sprint=sprint, actor=world.admin, reason="Stop", now=world.tick())
    assert_refused_unchanged(
        lambda: sprints.sprint_set_deadline(
            sprint=sprint,
            actor=world.admin,
            deadline=world.now + timedelta(days=2),
            now=world.tick(),
        ),
        project=world.project,
        obj=world.project.sprints.get(),
        exc_type=Conflict,
    )
