"""Every operation's input over HTTP (boards.operations.inputs, the one validation of every
input): an unknown field, a wrong type, a value past its bound or text that cannot be stored
is a 400 validation_error naming the field, and changes nothing."""

from __future__ import annotations

import pytest

from tests.api.helpers import (
    agent_client,
    api_base,
    assert_field_error,
    domain_snapshot,
    http_goal_world,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


BAD_BODIES = [
    # (who, path, body, field named in the 400)
    ("planner-1", "tasks", {"key": "t9", "description": "d", "depends": ["t1"]}, "depends"),
    ("planner-1", "tasks", {"key": "t9", "description": "d", "priority": "high"}, "priority"),
    ("planner-1", "tasks", {"key": "t9", "description": "d", "priority": 10**30}, "priority"),
    ("planner-1", "tasks", {"key": "t9", "description": "d", "depends_on": "t1"}, "depends_on"),
    ("planner-1", "tasks", {"key": "t 9!", "description": "d"}, "key"),
    ("planner-1", "tasks", {"key": "t9", "description": "x" * 20_000}, "description"),
    ("planner-1", "tasks", {"key": "t9", "description": "nul\x00byte"}, "description"),
    ("planner-1", "tasks", {"key": "t9"}, "description"),
    (
        "planner-1",
        "tasks/t1/rescope",
        {"reason": "r", "new_tasks": [{"key": "t1a", "description": "d", "dependson": []}]},
        "new_tasks",
    ),
    ("planner-1", "tasks/t1/rescope", {"reason": "r", "new_tasks": []}, "new_tasks"),
    ("coder-1", "tasks/claim-next", {"base_commit": "b" * 65}, "base_commit"),
    ("coder-1", "tasks/claim-next", {"base_commit": ["b1"]}, "base_commit"),
    ("coder-1", "tasks/claim-next", {"basecommit": "b1"}, "basecommit"),
    ("coder-1", "tasks/t1/block", {"reason": "r", "questions": "why?"}, "questions"),
    ("coder-1", "tasks/t1/block", {"reason": "r", "questions": ["a", "b", "c", "d"]}, "questions"),
    ("coder-1", "tasks/t1/block", {"reason": "r", "questions": []}, "questions"),
    (
        "coder-1",
        "tasks/t1/request-review",
        {"review_commit": "c1", "tree_clean": "maybe"},
        "tree_clean",
    ),
    (
        "coder-1",
        "tasks/t1/request-review",
        {"review_commit": "c1", "tree_clean": False},
        "tree_clean",
    ),
    ("coder-1", "tasks/t1/request-review", {"review_commit": {"sha": "c1"}}, "review_commit"),
    ("coder-1", "agents/heartbeat", {"context_percent": 101}, "context_percent"),
    ("coder-1", "agents/heartbeat", {"context_percent": "lots"}, "context_percent"),
    ("coder-1", "agents/register", {"agent_id": "coder-2"}, "agent_id"),
    ("coder-1", "agents/register", {"role": "planner"}, "role"),
    (
        "coder-1",
        "anomalies",
        {"type": "retry_loop", "details": {"count": 3}},
        "details.error_pattern",
    ),
    ("coder-1", "anomalies", {"type": "flaky", "details": {}}, "type"),
    ("coder-1", "anomalies", {"type": "spec_gap", "details": [1, 2]}, "details"),
    ("coder-1", "anomalies", {"type": "spec_gap", "details": {"k\x00": "v"}}, "details"),
    ("coder-1", "anomalies", {"type": "spec_gap", "details": {"k": "v" * 20_000}}, "details"),
    ("coder-1", "discoveries", {"description": "d", "severity": "dire"}, "severity"),
    ("coder-1", "log", {"action": "two words", "detail": "d"}, "action"),
    ("coder-1", "log", {"action": "note", "detail": "two\nlines"}, "detail"),
]


@pytest.mark.parametrize(
    ("who", "path", "body", "field"),
    BAD_BODIES,
    ids=[f"{path}-{field}-{i}" for i, (_, path, _, field) in enumerate(BAD_BODIES)],
)
def test_bad_bodies_are_400_naming_the_field_and_change_nothing(world, who, path, body, field):
    world.claimed("t1")
    world.blocked("t2", coder="coder-2")
    if path.startswith("tasks/t1/rescope"):
        path = path.replace("t1", "t2")
    client = agent_client(world.agent(who))
    before = domain_snapshot(world.project)
    response = client.post(f"{api_base(world.project.slug)}/{path}", body, format="json")
    assert_field_error(response, field)
    assert domain_snapshot(world.project) == before
