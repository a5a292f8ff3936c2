"""An operation's people are its service's declaration (boards/operations/base.py): the board's
form gate and the API's role matrix read `Operation.role`, the service enforces the same value."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from boards.coordination.services.authority import PEOPLE
from boards.operations import OPERATIONS
from boards.operations.base import PROJECT, SITE, Operation


@pytest.mark.parametrize("op", list(OPERATIONS.values()), ids=lambda op: op.name)
def test_an_operations_role_is_what_its_service_declares(op: Operation):
    if op.target == SITE:
        assert op.role is None  # site staff, not a project role (the service checks staff)
    else:
        assert op.role == op.service.people == PEOPLE[op.service.__name__]


def test_an_operation_on_a_service_that_declares_no_people_is_refused_at_declaration():
    def task_undeclared(*, project, actor, now) -> None: ...

    with pytest.raises(TypeError, match="task_undeclared"):
        Operation("task_undeclared", task_undeclared, PROJECT, serializers.Serializer)
