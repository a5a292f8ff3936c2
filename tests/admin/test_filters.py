"""Changelist filters: a filtered URL lists exactly the matching rows."""

from __future__ import annotations

import pytest

from agents.models import Agent, AgentKey
from agents.services import agent_key_issue, agent_key_revoke
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Discovery, Review, Task
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.records import discovery_create
from boards.coordination.services.tasks import task_claim
from boards.errors import ProtocolError
from tests.admin.helpers import build_board, changelist_url, result_pks
from tests.lifecycle import World

# (model, query string, which rows must match)
FILTERS = [
    (Task, {"status__exact": "BLOCKED"}, {"status": "BLOCKED"}),
    (Task, {"criticality__exact": "complex"}, {"criticality": "complex"}),
    (Task, {"priority": "1"}, {"priority": 1}),
    (Event, {"actor_kind__exact": "human"}, {"actor_kind": "human"}),
    (Event, {"outcome__exact": "rejected"}, {"outcome": "rejected"}),
    (Review, {"verdict__exact": "APPROVED"}, {"verdict": "APPROVED"}),
    (Review, {"closed_at__isempty": "1"}, {"closed_at__isnull": True}),
    (Agent, {"role__exact": "code_reviewer"}, {"role": "code_reviewer"}),
    (Agent, {"status__exact": "WORKING"}, {"status": "WORKING"}),
    (AgentKey, {"revoked_at__isempty": "0"}, {"revoked_at__isnull": False}),
    (Discovery, {"severity__exact": "high"}, {"severity": "high"}),
    (Alert, {"type__exact": "blocked"}, {"type": "blocked"}),
]


@pytest.fixture
def rows(board):
    """The board plus rows on the other side of each filter."""
    world = board.world
    world.drive_to("UNCLAIMED", "task-7", criticality="complex", priority=1)
    world.drive_to("READY_FOR_REVIEW", "task-8", coder="coder-2")
    world.claim_review("task-8")  # an open review next to the closed ones
    agent_key_revoke(actor=SYSTEM, key=board.key, now=world.tick())
    agent_key_issue(actor=SYSTEM, agent=world.agent("coder-2"), now=world.tick())
    discovery_create(
        project=world.project,
        actor=world.agent("coder-2"),
        description="Typo in the README",
        severity="low",
        now=world.tick(),
    )
    Alert.objects.create(
        project=world.project,
        type=Alert.Type.STALLED,
        message="nothing moved for an hour",
        created=world.tick(),
    )
    # A refused attempt (outcome rejected): coder-3 still holds task-5.
    with pytest.raises(ProtocolError):
        task_claim(task=world.task("task-7"), agent=world.agent("coder-3"), now=world.tick())
    return board


@pytest.mark.parametrize(
    ("model", "query", "match"), FILTERS, ids=lambda v: str(v) if isinstance(v, dict) else None
)
def test_a_filtered_changelist_lists_exactly_the_matching_rows(
    admin_client, rows, model, query, match
):
    expected = set(model.objects.filter(**match).values_list("pk", flat=True))
    others = set(model.objects.exclude(pk__in=expected).values_list("pk", flat=True))
    assert expected and others  # the filter has something to keep and something to drop

    response = admin_client.get(changelist_url(model), query)

    assert response.status_code == 200
    assert result_pks(response) == expected


@pytest.mark.parametrize("model", [Task, Event, Agent], ids=lambda m: m.__name__)
def test_the_project_filter_keeps_one_tenant(admin_client, board, model):
    other = build_board(World()).world.project
    mine = board.world.project
    assert model.objects.filter(project=other).exists()

    response = admin_client.get(changelist_url(model), {"project__id__exact": mine.pk})

    assert result_pks(response) == set(
        model.objects.filter(project=mine).values_list("pk", flat=True)
    )
