"""The operations' inputs are generated from the contract (boards.operations.inputs.contract):
these tests hold the contract's literals to the protocol's tables, which the contract (Django-
free, installed alone on agent machines) cannot import, and prove the generated input refuses
what the hand-written ones refused."""

from __future__ import annotations

import pytest

from agents.client.contract import CONTRACT
from boards import protocol as p
from boards.coordination.models.tasks import Task
from boards.operations import OPERATIONS
from boards.operations.inputs.base import InputSerializer
from boards.operations.inputs.contract import contract_body_input, contract_input

BODY_PARAMS = [(e, prm) for e in CONTRACT for prm in e.params if prm.where == "body"]


def _bounds_by_name(name: str) -> tuple[int, int] | None:
    if name == "priority":
        return p.PRIORITY_RANGE
    return p.TASK_LIMIT_BOUNDS.get(name)


@pytest.mark.parametrize(("endpoint", "param"), BODY_PARAMS, ids=lambda x: getattr(x, "name", ""))
def test_the_contracts_bounds_and_choices_are_the_protocols(endpoint, param):
    bounds = _bounds_by_name(param.name)
    if bounds is not None and param.type == "integer":
        assert (param.minimum, param.maximum) == bounds
    enums = {
        "criticality": tuple(Task.Criticality.values),
        "severity": tuple(p.DISCOVERY_SEVERITIES),
        "urgency": tuple(p.DISCOVERY_URGENCIES),
    }
    if param.name in enums:
        assert tuple(param.enum) == enums[param.name]
    if endpoint.name == "anomaly_create" and param.name == "type":
        assert tuple(param.enum) == tuple(p.ANOMALY_TYPES)
    if param.name == "questions":
        assert param.max_items == p.MAX_BLOCKED_QUESTIONS
    if param.name == "pr_url":
        assert param.max_length == p.PR_URL_MAX_LENGTH


def test_every_operation_in_the_contract_validates_its_contract_body():
    """An operation's input has exactly its contract entry's body parameters, generated or
    hand-written (a hand-written one subclasses the generated one or restates it)."""
    by_name = {e.name: e for e in CONTRACT}
    for name, operation in OPERATIONS.items():
        endpoint = by_name.get(name)
        if endpoint is None:
            continue
        body = {prm.name for prm in endpoint.params if prm.where == "body"}
        fields = set(operation.input().fields) if operation.input else set()
        assert fields == body, name
        if contract_body_input(name) is None:
            assert operation.input is None, name


@pytest.mark.parametrize(
    ("name", "data", "field"),
    [
        ("task_block", {"reason": "r", "questions": []}, "questions"),  # min_items=1
        ("task_block", {"reason": "r", "questions": ["q" * 1001]}, "questions"),
        ("task_block", {"reason": "", "questions": ["q"]}, "reason"),  # required: not blank
        ("goal_edit", {"description": ""}, "description"),  # min_length=1
        ("sprint_set_deadline", {"deadline": "tomorrow"}, "deadline"),  # date-time
        ("task_claim", {"base_commit": "x" * 65}, "base_commit"),
        ("task_claim", {"surprise": 1}, "surprise"),  # unknown field
        ("run_finish", {"exit_code": 256}, "exit_code"),
    ],
)
def test_a_generated_input_refuses_naming_the_field(name, data, field):
    serializer = OPERATIONS[name].input(data=data)
    assert not serializer.is_valid()
    assert field in serializer.errors


def test_a_generated_input_fills_the_contracts_defaults_and_admits_blank_optionals():
    created = contract_input("task_create")(data={"key": "t-1", "description": "d"})
    assert created.is_valid(), created.errors
    assert created.validated_data["priority"] == 3
    assert created.validated_data["criticality"] == "standard"
    claim = OPERATIONS["task_claim"].input(data={"base_commit": "", "worktree": ""})
    assert claim.is_valid(), claim.errors
    assert issubclass(OPERATIONS["task_claim"].input, InputSerializer)
