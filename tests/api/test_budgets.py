"""Issue 24 over HTTP: `POST usage` and `POST budgets` refuse what they cannot hold (negative,
huge, non-finite, malformed) with a 400 naming the field, never a 500, and change nothing; a
spent budget answers a claim 409 `budget_exhausted` with exit 14 and the budget's numbers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Budget, RunUsage
from agents.services import run_start, usage_record
from boards.coordination.services.budgets import budget_set
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    assert_field_error,
    http_start,
    session_client,
)
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    world = World(now=http_start())
    world.claimed("T1")
    run_start(project=world.project, agent=world.coder, now=world.tick(), task="T1")
    return world


def _post_usage(world, raw: str):
    return agent_client(world.coder).post(
        f"{api_base(world.project.slug)}/usage", data=raw, content_type="application/json"
    )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"usage": [{"input_tokens": -1}]}', "usage"),
        ('{"usage": [{"output_tokens": 100000000000000000000}]}', "usage"),
        ('{"usage": [{"cost_usd": -0.01}]}', "usage"),
        ('{"usage": [{"cost_usd": 1000000}]}', "usage"),
        ('{"usage": [{"cost_usd": NaN}]}', "usage"),
        ('{"usage": [{"cost_usd": 1e400}]}', "usage"),
        ('{"usage": [{"cost_usd": 1e300}]}', "usage"),
        ('{"usage": [{"cost_usd": 1e-300}]}', None),
        ('{"usage": [{"cost_usd": "lots"}]}', "usage"),
        ('{"usage": [{"model": "' + "m" * 101 + '"}]}', "usage"),
        ('{"usage": [{"tokens": 5}]}', "usage"),
        ('{"usage": []}', "usage"),
        ('{"usage": {"model": "m"}}', "usage"),
        ('{"usage": [' + ",".join(f'{{"model": "m{n}"}}' for n in range(21)) + "]}", "usage"),
        ('{"usage": [{"model": "m"}, {"model": "m"}]}', "usage"),
        ('{"usage": [{}], "run": -3}', "run"),
        ('{"usage": [{}], "run": 999999999}', "run"),
        ('{"usage": [{}], "surprise": 1}', "surprise"),
    ],
)
def test_bad_usage_is_a_400_naming_the_field_and_records_nothing(world, raw, field):
    response = _post_usage(world, raw)
    if field is None:  # a tiny cost rounds to nothing: recorded, not refused
        assert response.status_code == 200 and RunUsage.objects.get().cost_usd == 0
        return
    assert_field_error(response, field)
    assert not RunUsage.objects.exists()


def test_usage_is_recorded_with_cost_rounded_to_a_millionth(world):
    response = _post_usage(world, '{"usage": [{"model": "opus", "cost_usd": 0.12345678}]}')
    assert response.status_code == 200, response.json()
    assert RunUsage.objects.get().cost_usd == Decimal("0.123457")


def _post_budget(world, body):
    return session_client(world.admin).post(
        f"{api_base(world.project.slug)}/budgets", data=body, format="json"
    )


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"scope": "planet", "limit_usd": 1}, 400, "scope"),
        ({"scope": "project", "limit_usd": -1}, 400, "limit_usd"),
        ({"scope": "project", "limit_usd": 10**9}, 400, "limit_usd"),
        ({"scope": "project", "limit_usd": "NaN"}, 400, "limit_usd"),
        ({"scope": "project", "limit_tokens": 0}, 400, "limit_tokens"),
        ({"scope": "project", "limit_tokens": 10**14}, 400, "limit_tokens"),
        ({"scope": "project", "limit_tokens": 1.5}, 400, "limit_tokens"),
        ({"scope": "task", "limit_usd": 1}, 400, "subject"),
        ({"scope": "project", "subject": "T1", "limit_usd": 1}, 400, "subject"),
        ({"scope": "task", "subject": "T404", "limit_usd": 1}, 404, None),
        ({"scope": "agent", "subject": "coder-99", "limit_usd": 1}, 404, None),
    ],
)
def test_a_bad_budget_is_refused_and_changes_nothing(world, body, status, field):
    response = _post_budget(world, body)
    if field is None:
        assert_envelope(response, status, "not_found")
    else:
        assert_field_error(response, field)
    assert not Budget.objects.exists()


def test_a_spent_budget_refuses_a_claim_with_its_numbers(world):
    world.unclaimed("T2")
    budget_set(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        scope="agent",
        subject="coder-2",
        limit_usd=Decimal(2),
        limit_tokens=1000,
    )
    coder2 = world.agent("coder-2")
    run = run_start(project=world.project, agent=coder2, now=world.tick())
    usage_record(
        project=world.project,
        agent=coder2,
        now=world.tick(),
        run=run.pk,
        usage=[{"model": "m", "input_tokens": 1000, "cost_usd": Decimal("0.5")}],
    )
    response = agent_client(coder2).post(
        f"{api_base(world.project.slug)}/tasks/claim-next",
        data={"base_commit": "c0ffee01"},
        format="json",
    )
    error = assert_envelope(response, 409, "budget_exhausted")
    assert error["details"]["exit"] == 14
    assert error["details"]["budget"] == "agent" and error["details"]["subject"] == "coder-2"
    assert error["details"]["spent_tokens"] == 1000 and error["details"]["limit_usd"] == "2.00"
    assert "1,000 of 1,000 tokens" in error["message"]
    listed = session_client(world.admin).get(f"{api_base(world.project.slug)}/budgets").json()
    assert [(b["scope"], b["state"], b["percent"]) for b in listed] == [("agent", "exhausted", 100)]
