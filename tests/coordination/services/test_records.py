"""Seed 002 "Anomaly Types" and "Required Details Fields" through anomaly_create (SPEC §4:
unknown type or a missing required field → 400 naming it)."""

from __future__ import annotations

import pytest

from boards import protocol as p
from boards.coordination.models.records import Anomaly
from boards.coordination.services.records import anomaly_create
from boards.errors import ProtocolValidationError
from tests.coordination.services.helpers import applied_events, assert_valid

pytestmark = pytest.mark.django_db

SAMPLE_VALUES = {
    "count": 3,
    "error_pattern": "serialization failure on nested entity",
    "what": "flatten entity instead of fixing serializer",
    "why": "unblock task within iteration limit",
    "debt_created": True,
    "blocker_service": "payment-gateway-api",
    "assumption": "ids are integers",
    "reality": "ids are UUIDs",
    "protocol_section": "roles.md#agent-identity-protocol",
    "question": "May a reviewer re-claim its own stale review?",
}


def _details(anomaly_type: str) -> dict:
    return {f: SAMPLE_VALUES[f] for f in p.ANOMALY_REQUIRED_FIELDS[anomaly_type]}


def test_the_table_is_seed_002():
    assert len(p.ANOMALY_TYPES) == 13
    assert set(SAMPLE_VALUES) == {f for fs in p.ANOMALY_REQUIRED_FIELDS.values() for f in fs}


@pytest.mark.parametrize("anomaly_type", p.ANOMALY_TYPES)
def test_every_type_with_its_required_fields_is_recorded(world, anomaly_type):
    world.claimed("task-1")
    details = {**_details(anomaly_type), "note": "extra fields are kept"}
    now = world.tick()

    anomaly = anomaly_create(
        project=world.project,
        actor=world.coder,
        anomaly_type=anomaly_type,
        details=details,
        task="task-1",
        now=now,
    )

    anomaly = Anomaly.objects.get(pk=anomaly.pk)
    assert (anomaly.type, anomaly.details, anomaly.reporter) == (anomaly_type, details, "coder-1")
    assert (anomaly.task, anomaly.timestamp) == (world.task("task-1"), now)
    (event,) = applied_events(world.project, action="anomaly")
    assert event.data == {"type": anomaly_type}
    assert_valid(world.project, now=now)


MISSING = [
    (anomaly_type, field, blank)
    for anomaly_type, fields in p.ANOMALY_REQUIRED_FIELDS.items()
    for field in fields
    for blank in ("absent", "empty")
]


@pytest.mark.parametrize(
    ("anomaly_type", "field", "blank"), MISSING, ids=[f"{t}-{f}-{b}" for t, f, b in MISSING]
)
def test_missing_required_field_is_refused_naming_it(world, anomaly_type, field, blank):
    details = _details(anomaly_type)
    if blank == "absent":
        del details[field]
    else:
        details[field] = ""
    with pytest.raises(ProtocolValidationError) as caught:
        anomaly_create(
            project=world.project,
            actor=world.coder,
            anomaly_type=anomaly_type,
            details=details,
            now=world.tick(),
        )
    assert caught.value.field == f"details.{field}"
    assert caught.value.status_code == 400
    assert list(caught.value.details["fields"]) == [f"details.{field}"]
    assert not Anomaly.objects.filter(project=world.project).exists()


@pytest.mark.parametrize("anomaly_type", ["unknown", "", "RETRY_LOOP", None])
def test_unknown_type_is_refused(world, anomaly_type):
    with pytest.raises(ProtocolValidationError) as caught:
        anomaly_create(
            project=world.project,
            actor=world.coder,
            anomaly_type=anomaly_type,
            details={},
            now=world.tick(),
        )
    assert caught.value.field == "type"
    assert not Anomaly.objects.filter(project=world.project).exists()


def test_details_must_be_an_object(world):
    with pytest.raises(ProtocolValidationError) as caught:
        anomaly_create(
            project=world.project,
            actor=world.coder,
            anomaly_type="spec_gap",
            details=["not", "an", "object"],
            now=world.tick(),
        )
    assert caught.value.field == "details"
