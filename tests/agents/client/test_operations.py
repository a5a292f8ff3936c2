"""The one table of agent operations (agents/client/operations.py) against the command line and
against the server: each operation has its `liza` subcommand taking its parameters, and what a
role is not offered the server refuses that role.
"""

from __future__ import annotations

from datetime import timedelta

import click
import pytest
from django.utils import timezone

from agents.client import Client, LizaError
from agents.client.cli import main
from agents.client.operations import OPERATIONS, ROLES, operations_for
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from tests.api.helpers import key_for
from tests.lifecycle import World

AGENT_OF_ROLE = {"planner": "planner-1", "coder": "coder-1", "code_reviewer": "code-reviewer-1"}

# A well-formed value for each parameter: the server must refuse the role, not the input.
SAMPLES = {
    "key": "T1",
    "base_commit": "c0ffee01",
    "review_commit": "abc1234",
    "merge_commit": "def5678",
    "tree_clean": True,
    "verdict": "APPROVED",
    "severity": "low",
    "type": "spec_ambiguity",
    "details": {"note": "unclear"},
    "questions": ["Which format?"],
    "depends_on": [],
    "new_tasks": [{"key": "T1a", "description": "half", "done_when": "half done"}],
    "action": "note",
    "planned": ["T1"],
}


def command_of(path: tuple[str, ...]) -> click.Command:
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group), path
        command = command.commands[name]
    return command


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_every_operation_is_a_subcommand_with_its_parameters(operation):
    command = command_of(operation.cli)

    # `type_`: a Python name that shadows no builtin stands for the parameter `type`.
    names = {param.name.rstrip("_") for param in command.params}
    assert {param.name for param in operation.params} <= names, (operation.name, names)


def test_every_role_is_offered_something_of_its_own():
    shared = set.intersection(*({op.name for op in operations_for(role)} for role in ROLES))
    for role in ROLES:
        own = {op.name for op in operations_for(role)} - shared
        assert own, role


@pytest.mark.django_db(transaction=True)
def test_the_server_refuses_each_role_what_it_is_not_offered(cli_server):
    world = World(now=timezone.now() - timedelta(minutes=2))
    world.unclaimed("T1")
    goal = goal_create(
        project=world.project, actor=world.planner, description="ship", now=world.tick()
    )
    # A sprint to act on: without one, an operation on it is a 404 before any role is asked.
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    refusals = {}
    for role in ROLES:
        agent = world.agent(AGENT_OF_ROLE[role])
        with Client(cli_server.url, world.project.slug, key_for(agent), retries=0) as client:
            for operation in OPERATIONS:
                if role in operation.roles:
                    continue
                arguments = {
                    p.name: SAMPLES.get(p.name, "x") for p in operation.params if p.required
                }
                with pytest.raises(LizaError) as refused:
                    operation.call(client, arguments)
                refusals[role, operation.name] = (refused.value.code, refused.value.exit)

    assert refusals, "every role is refused something"
    wrong = {k: v for k, v in refusals.items() if v != ("permission_denied", 3)}
    assert not wrong
