"""Discovery triage (services.records.discovery_triage; SPEC §7): defer, reject, convert into a
draft task.

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from boards.board.selectors.inbox import inbox as read_inbox
from boards.coordination.models.tasks import Discovery, Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import records
from boards.errors import (
    Conflict,
    ProtocolValidationError,
)
from tests.coordination.services.helpers import (
    _immediate,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)
from tests.factories import member

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# discovery triage
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("decision", "triage"), [("defer", "deferred"), ("reject", "rejected")])
def test_members_defer_or_reject_a_discovery(world, decision, triage):
    world.unclaimed("t1")  # work under way: the open goal alone does not wake the planner
    discovery = _immediate(world)
    assert work_for_role(project=world.project, role="planner", agent=None, now=world.now)["work"]
    person = member(world.project, "member")

    discovery = records.discovery_triage(
        discovery=discovery, actor=person, decision=decision, note="Next sprint", now=world.tick()
    )

    assert (discovery.triage, discovery.triage_note, discovery.converted_to_task) == (
        triage,
        "Next sprint",
        "",
    )
    (event,) = applied_events(world.project, action=f"discovery_{triage}")
    assert (event.actor_id, event.detail) == (person.username, f"disc-1 {triage}: Next sprint")
    assert read_inbox(project=world.project, now=world.now)["discoveries"] == []
    # The planner is no longer woken for it.
    assert not work_for_role(project=world.project, role="planner", agent=None, now=world.now)[
        "work"
    ]
    assert_valid(world.project, now=world.now)


def test_an_admin_converts_a_discovery_into_a_draft_task(world):
    discovery = _immediate(world)
    (item,) = read_inbox(project=world.project, now=world.now)["discoveries"]
    assert item.discovery == discovery

    discovery = records.discovery_triage(
        discovery=discovery,
        actor=world.admin,
        decision="convert",
        task={"key": "t-idem", "spec_ref": "specs/idem.md", "priority": 2},
        now=world.tick(),
    )

    task = world.task("t-idem")
    assert (task.status, task.description, task.priority) == (
        "DRAFT",
        "OrderAPI has no idempotency keys",
        2,
    )
    assert (discovery.triage, discovery.converted_to_task) == ("converted", "t-idem")
    assert [(e.action, e.actor_kind) for e in applied_events(world.project, task=task)] == [
        ("created", "human"),
        ("discovery_converted", "human"),
    ]
    assert_valid(world.project, now=world.now)
    # Settled: neither converted again nor deferred.
    for decision, extra in (("convert", {"task": {"key": "t-2"}}), ("defer", {})):
        assert_refused_unchanged(
            lambda decision=decision, extra=extra: records.discovery_triage(
                discovery=discovery,
                actor=world.admin,
                decision=decision,
                now=world.tick(),
                **extra,
            ),
            project=world.project,
            obj=Discovery.objects.get(pk=discovery.pk),
            exc_type=Conflict,
        )


def test_converting_needs_an_admin_and_a_task_key(world):
    discovery = _immediate(world)
    with pytest.raises(PermissionDenied):
        records.discovery_triage(
            discovery=discovery,
            actor=member(world.project, "member"),
            decision="convert",
            task={"key": "t-x"},
            now=world.tick(),
        )
    for task, field in (
        (None, "task"),
        ({}, "task.key"),
        ({"key": "t-x", "colour": "red"}, "task.colour"),
    ):
        with pytest.raises(ProtocolValidationError) as caught:
            records.discovery_triage(
                discovery=discovery,
                actor=world.admin,
                decision="convert",
                task=task,
                now=world.tick(),
            )
        assert caught.value.field == field
    with pytest.raises(ProtocolValidationError) as caught:
        records.discovery_triage(
            discovery=discovery, actor=world.admin, decision="forget", now=world.tick()
        )
    assert caught.value.field == "decision"
    assert Discovery.objects.get(pk=discovery.pk).triage == "open"
    assert not Task.objects.filter(project=world.project, key="t-x").exists()


def test_a_deferred_discovery_may_still_be_converted(world):
    discovery = records.discovery_triage(
        discovery=_immediate(world), actor=world.admin, decision="defer", now=world.tick()
    )
    discovery = records.discovery_triage(
        discovery=discovery,
        actor=world.admin,
        decision="convert",
        task={"key": "t-later"},
        now=world.tick(),
    )
    assert (discovery.triage, discovery.converted_to_task) == ("converted", "t-later")
