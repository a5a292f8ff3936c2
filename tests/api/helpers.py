"""What the HTTP tests share: clients for each kind of principal, snapshots, envelope checks.

The HTTP layer reads the real clock (`timezone.now()`), so worlds driven over HTTP start a
couple of minutes in the past: leases taken through the services are then still alive when the
HTTP requests arrive, and events written over HTTP sort after the ones written before.
"""

from __future__ import annotations

import contextlib
import functools
import io
from datetime import datetime, timedelta
from typing import Any

from django.core.management import call_command
from django.db import connection
from django.middleware.csrf import get_token
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from agents.models import Agent, AgentKey
from agents.services import agent_key_issue
from boards.coordination.models.projects import Goal, Project, ProjectConfig, Sprint
from boards.coordination.models.records import Anomaly, CircuitBreaker, CircuitBreakerCheck, Event
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.goals import goal_create
from tests.lifecycle import World


def api_base(slug: str) -> str:
    return f"/api/v1/projects/{slug}"


def http_start() -> datetime:
    """A World clock a little behind the real one (see the module docstring)."""
    return timezone.now() - timedelta(minutes=2)


def http_goal_world() -> World:
    """A World on the HTTP clock whose project has a goal IN_PROGRESS: seed 002 requires one in
    a valid state, and these tests ask `liza_validate` between their requests."""
    world = World(now=http_start())
    goal_create(
        project=world.project,
        actor=world.planner,
        description="Retry logic for every API call",
        now=world.tick(),
    )
    return world


def blank_times(value: Any) -> Any:
    """`value` (a JSON answer) with every timestamp replaced by "<time>": two answers given a
    moment apart (a heartbeat moves the lease) compare equal on everything else."""
    if isinstance(value, dict):
        return {k: blank_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [blank_times(v) for v in value]
    if isinstance(value, str) and len(value) >= 20 and value[4:5] == "-" and value[10:11] == "T":
        return "<time>"
    return value


def key_for(agent: Agent) -> str:
    _, plain = agent_key_issue(actor=SYSTEM, agent=agent, now=timezone.now(), label="test")
    return plain


def bearer(plain: str | None, **client_kwargs: Any) -> APIClient:
    client = APIClient(**client_kwargs)
    if plain is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {plain}")
    return client


def agent_client(agent: Agent, **client_kwargs: Any) -> APIClient:
    return bearer(key_for(agent), **client_kwargs)


def session_client(user, **client_kwargs: Any) -> APIClient:
    client = APIClient(**client_kwargs)
    client.force_login(user)
    return client


def csrf_pair() -> tuple[str, str]:
    """(cookie secret, masked form token) exactly as Django hands them to a browser."""
    request = RequestFactory().get("/")
    token = get_token(request)
    return request.META["CSRF_COOKIE"], token


def assert_envelope(response, status: int, code: str) -> dict[str, Any]:
    """The response is SPEC §6's error envelope with this status and code."""
    assert response.status_code == status, (response.status_code, _body(response))
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    assert isinstance(body["error"]["details"], dict), body
    return body["error"]


def assert_field_error(response, field: str) -> dict[str, Any]:
    """A 400 validation_error naming `field` (SPEC §6: "Validation → 400 naming the field")."""
    error = assert_envelope(response, 400, "validation_error")
    assert field in error["details"]["fields"], error
    assert field in error["message"], error
    return error


def _body(response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.content[:500]


# -- snapshots ---------------------------------------------------------------------------------


def _rows(queryset, *, skip: tuple[str, ...] = ()) -> tuple[str, list[Any]]:
    """A subquery for the snapshot's one SELECT: the queryset's rows (every concrete field but
    `skip`) as a JSON array, in primary-key order."""
    model = queryset.model
    fields = [f.attname for f in model._meta.concrete_fields if f.attname not in skip]
    sql, params = queryset.values(*fields).order_by().query.sql_with_params()
    pk = connection.ops.quote_name(model._meta.pk.column)
    rows = f"coalesce(json_agg(row_to_json(r) ORDER BY r.{pk}), '[]')"
    return f"(SELECT {rows} FROM ({sql}) r)", list(params)


def domain_snapshot(project: Project) -> dict[str, Any]:
    """Every row of `project` an API write could change (a key's last_used_at aside: setting it
    is what authenticating does). Read in one query: refusal matrices take it after each call."""
    names, sql, params = _snapshot_query(project.pk)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return dict(zip(names, row, strict=True))


# The query is a function of the project's id alone, and compiling its 18 querysets cost ~80 %
# of a snapshot (the role matrix takes ~1,000): each project's is compiled once.
@functools.lru_cache(maxsize=64)
def _snapshot_query(project_id: int) -> tuple[tuple[str, ...], str, tuple[Any, ...]]:
    tasks = Task.objects.filter(project_id=project_id)
    sprints = Sprint.objects.filter(project_id=project_id)
    parts = {
        # The project row itself (its pause) and its config: the oversight writes change them.
        "project": _rows(Project.objects.filter(pk=project_id)),
        "config": _rows(ProjectConfig.objects.filter(project_id=project_id)),
        "tasks": _rows(tasks),
        "depends_on": _rows(Task.depends_on.through.objects.filter(from_task__in=tasks)),
        "goals": _rows(Goal.objects.filter(project_id=project_id)),
        "sprints": _rows(sprints),
        "planned": _rows(Sprint.planned.through.objects.filter(sprint__in=sprints)),
        "stretch": _rows(Sprint.stretch.through.objects.filter(sprint__in=sprints)),
        "agents": _rows(Agent.objects.filter(project_id=project_id)),
        "keys": _rows(AgentKey.objects.filter(project_id=project_id), skip=("last_used_at",)),
        "reviews": _rows(Review.objects.filter(project_id=project_id)),
        "handoffs": _rows(Handoff.objects.filter(project_id=project_id)),
        "discoveries": _rows(Discovery.objects.filter(project_id=project_id)),
        "anomalies": _rows(Anomaly.objects.filter(project_id=project_id)),
        "notes": _rows(HumanNote.objects.filter(project_id=project_id)),
        "circuit_breaker": _rows(CircuitBreaker.objects.filter(project_id=project_id)),
        "breaker_history": _rows(CircuitBreakerCheck.objects.filter(project_id=project_id)),
    }
    applied_sql, applied_params = (
        Event.objects.filter(project_id=project_id, outcome=Event.Outcome.APPLIED)
        .values("pk")
        .query.sql_with_params()
    )
    parts["applied_events"] = (f"(SELECT count(*) FROM ({applied_sql}) e)", list(applied_params))
    return (
        tuple(parts),
        "SELECT " + ", ".join(sql for sql, _ in parts.values()),
        tuple(param for _, params in parts.values() for param in params),
    )


# -- the validator -----------------------------------------------------------------------------


def validate(slug: str) -> str:
    """`manage.py liza_validate --project slug`'s output (it exits 1 when INVALID)."""
    out = io.StringIO()
    with contextlib.suppress(SystemExit):
        call_command("liza_validate", "--project", slug, stdout=out)
    return out.getvalue().strip()


def assert_valid(slug: str, step: str = "") -> None:
    output = validate(slug)
    assert output == "VALID", f"after {step or 'this step'}:\n{output}"
