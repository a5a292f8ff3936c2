"""Schema fuzzing of the agent REST API (SPEC §6 "No 500 on any input"; STYLE.md Tests).

The OpenAPI schema drf-spectacular serves is loaded in-process from the WSGI application, and
schemathesis generates requests for every operation in it: schema-valid ones and invalid ones,
boundary values (coverage phase) and random ones (fuzzing phase). The requests go to a seeded
project with tasks in every state, under the key of an agent whose role fits the operation (or
an admin's session for admin-only operations), and the path parameters are mostly real: the
project's slug, real task keys, agent ids and key prefixes, so the fuzzing reaches the services
rather than stopping at 404s. Every response must not be a 5xx, must have a status code the
schema documents, and must conform to the schema.
"""

from __future__ import annotations

import zlib
from datetime import timedelta

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from agents.services import agent_key_issue, run_start
from boards.coordination.models.projects import Goal
from boards.coordination.services import tasks
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.goals import goal_create
from boards.coordination.services.projects import config_update
from boards.coordination.services.records import anomaly_create, discovery_create
from boards.coordination.services.sprints import sprint_create
from liza_site.wsgi import application
from tests.api.helpers import csrf_pair
from tests.factories import ProjectFactory, register
from tests.lifecycle import World

SLUG = "contract"
# Random cases per operation in the fuzzing phase. The coverage phase before it sends every
# operation its boundary and invalid values anyway (~35 cases an operation, deterministic);
# with no example database each run draws fresh random cases, so the exploration adds up over
# runs. 15 keeps that while halving the fuzzing cost (30 took ~45 % of the module's time).
MAX_EXAMPLES = 15


def app_in_the_test_transaction(environ, start_response):
    """The WSGI application, minus the end-of-request connection cleanup.

    Django closes a connection that is inside a transaction when a request finishes; the test
    runs inside one (pytest-django rolls it back afterwards), so the signal is held off the way
    Django's own test client does it.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        chunks = application(environ, start_response)
        try:
            return [b"".join(chunks)]
        finally:
            chunks.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", app_in_the_test_transaction)
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])
schema.config.generation.update(
    modes=["positive", "negative"],
    max_examples=MAX_EXAMPLES,
    database="none",
    with_security_parameters=False,
)

# Which principal makes each operation: an agent of the fitting role, or a human admin (by
# session). Every operation of the schema must be here (a guard test checks it).
OPERATIONS_BY_PRINCIPAL: dict[str, set[str]] = {
    # reads, and what coder-1 (holding t-claimed) does: submit, block, handoff, liveness, records
    "coder-1": {
        "agents_list",
        "agents_retrieve",
        "anomalies_list",
        "config_retrieve",
        "discoveries_list",
        "alerts_list",
        "circuit_breaker_retrieve",
        "events_list",
        "goal_retrieve",
        "sprint_retrieve",
        "tasks_list",
        "tasks_retrieve",
        "work_for_role",
        "agents_heartbeat",
        "agents_register",
        "anomalies_create",
        "discoveries_create",
        "log_append",
        "tasks_request_review",
        "tasks_block",
        "tasks_handoff",
        "tasks_handoff_pickup",
        "runs_list",
        "runs_start",
        "runs_finish",
        "runs_output",
        "agents_quota_pause",
        "usage_record",
        "budgets_list",
    },
    "coder-5": {"tasks_claim_next", "tasks_claim", "agents_leave"},  # idle
    "planner-1": {
        "tasks_create",
        "tasks_edit",
        "goal_edit",
        "sprint_complete",
        "tasks_finalize",
        "tasks_set_dependencies",
        "tasks_rescope",
        "tasks_abandon",
        "tasks_release",
        "goal_create",
        "goal_complete",
        "sprint_create",
    },
    "code-reviewer-1": {  # reviewing t-review, approved t-approved
        "reviews_extend",
        "reviews_release",
        "reviews_verdict",
        "tasks_report_merge",
        "tasks_report_integration_failure",
    },
    "code-reviewer-2": {"reviews_claim", "reviews_claim_next"},  # idle
    "admin": {
        "agents_create",
        "agent_keys_list",
        "agent_keys_issue",
        "agent_keys_revoke",
        "agents_disable",
        "agents_enable",
        "agents_availability",
        "inbox_retrieve",
        "config_update",
        "notes_create",
        "discoveries_triage",
        "alerts_acknowledge",
        "circuit_breaker_resolve",
        "goal_abort",
        "project_pause",
        "project_resume",
        "sprint_abort",
        "sprint_checkpoint",
        "sprint_continue",
        "sprint_set_deadline",
        "tasks_override_block",
        "tasks_release_claim",
        "tasks_cancel",
        "tasks_suspend",
        "tasks_resume",
        "tasks_human_approve",
        "tasks_human_reject",
        "tasks_set_limits",
        "budgets_set",
        # a person's own notification preferences (agents are refused: people only)
        "notifications_retrieve",
        "notifications_set",
    },
}
PRINCIPAL = {op: who for who, ops in OPERATIONS_BY_PRINCIPAL.items() for op in ops}


TASK_KEYS = (
    "t-draft",
    "t-unclaimed",
    "t-dep",
    "t-claimed",
    "t-ready",
    "t-review",
    "t-rejected",
    "t-approved",
    "t-merged",
    "t-blocked",
    "t-superseded",
    "t-abandoned",
    "t-integration",
    "t-gate",
    "t-suspended",
)
AGENT_IDS = ("planner-1", "coder-1", "coder-4", "code-reviewer-1", "code-reviewer-2")
DISCOVERY_IDS = ("disc-1",)
REVIEW_COMMIT = "c0ffee01"  # what tests.lifecycle.World submits for review


class Seed:
    """A project with a task in every state, its agents' keys and an admin's session."""

    def __init__(self) -> None:
        world = World(ProjectFactory(slug=SLUG), now=timezone.now() - timedelta(minutes=1))
        self.world = world
        goal_create(
            project=world.project, actor=world.planner, description="Retry", now=world.tick()
        )
        # The module's fuzzing outlasts the default 300 s lease on a loaded machine; the seed's
        # claims must still be alive for the last known-good call.
        config_update(
            project=world.project, actor=world.admin, now=world.tick(), lease_duration=86_400
        )
        for agent_id in ("coder-4", "coder-5", "coder-6"):
            register(world.project, agent_id, now=world.now)
        world.merged("t-merged")
        world.drive_to("APPROVED", "t-approved", coder="coder-2")
        world.drive_to("INTEGRATION_FAILED", "t-integration", coder="coder-2")
        world.drive_to("SUPERSEDED", "t-superseded", coder="coder-3")
        world.drive_to("ABANDONED", "t-abandoned", coder="coder-3")
        world.drive_to("BLOCKED", "t-blocked", coder="coder-3")
        world.drive_to("REJECTED", "t-rejected", coder="coder-4")
        # Reviewed and approved, waiting at the human approval gate (seed 004).
        world.under_review("t-gate", coder="coder-6", needs_human_approval=True)
        world.verdict("t-gate", "APPROVED")
        world.under_review("t-review", coder="coder-3")
        world.drive_to("READY_FOR_REVIEW", "t-ready", coder="coder-2")
        world.drive_to("CLAIMED", "t-claimed", coder="coder-1")
        world.drive_to("UNCLAIMED", "t-unclaimed")
        world.drive_to("UNCLAIMED", "t-dep", depends_on=["t-unclaimed"])
        world.drive_to("DRAFT", "t-draft")
        world.drive_to("UNCLAIMED", "t-suspended")
        tasks.task_suspend(
            task=world.task("t-suspended"), actor=world.admin, reason="Wait", now=world.tick()
        )
        sprint_create(
            project=world.project,
            actor=world.planner,
            goal=Goal.objects.get(project=world.project),
            planned=["t-unclaimed", "t-dep", "t-claimed", "t-ready"],
            stretch=["t-draft"],
            now=world.tick(),
        )
        discovery_create(
            project=world.project,
            actor=world.coder,
            description="No idempotency keys",
            severity="high",
            during="t-claimed",
            now=world.tick(),
        )
        anomaly_create(
            project=world.project,
            actor=world.coder,
            anomaly_type="trade_off",
            details={"what": "flatten", "why": "time", "debt_created": True},
            task="t-claimed",
            now=world.tick(),
        )
        run = run_start(
            project=world.project, agent=world.coder, now=world.tick(), task="t-claimed"
        )
        self.run_ids = [str(run.pk)]
        # How each principal authenticates: call keyword arguments (headers, cookies).
        self.auth: dict[str, dict[str, dict[str, str]]] = {}
        for agent_id in (*AGENT_IDS, "coder-5"):
            _, plain = agent_key_issue(actor=SYSTEM, agent=world.agent(agent_id), now=world.now)
            self.auth[agent_id] = {"headers": {"Authorization": f"Bearer {plain}"}}
        browser = Client()
        browser.force_login(world.admin)
        secret, token = csrf_pair()  # a session write needs the CSRF token, as in a browser
        self.auth["admin"] = {
            "headers": {"X-CSRFToken": token},
            "cookies": {"sessionid": browser.cookies["sessionid"].value, "csrftoken": secret},
        }
        # Revoking a key the fuzzing authenticates with would turn the rest into 401s.
        self.revocable = [
            agent_key_issue(actor=SYSTEM, agent=world.agent("coder-4"), now=world.now)[0].prefix
            for _ in range(2)
        ]


def _pick(value: object, choices: tuple[str, ...] | list[str]) -> object:
    """A real value for most generated ones, chosen deterministically from the generated one
    (so that hypothesis can replay and shrink); every few, the generated value itself."""
    index = zlib.crc32(repr(value).encode()) % (len(choices) + 2)
    return choices[index] if index < len(choices) else value


def aim_at_the_seed(case, seed: Seed) -> None:
    params = case.path_parameters
    if params is None:
        return
    params["slug"] = SLUG
    if "key" in params:
        params["key"] = _pick(params["key"], TASK_KEYS)
    if "agent_id" in params:
        params["agent_id"] = _pick(params["agent_id"], AGENT_IDS)
    if "disc_id" in params:
        params["disc_id"] = _pick(params["disc_id"], DISCOVERY_IDS * 3)
    if "run_id" in params:
        params["run_id"] = _pick(params["run_id"], seed.run_ids * 3)
    if "prefix" in params:
        params["prefix"] = _pick(params["prefix"], seed.revocable)
    body = case.body
    if case.operation.definition.raw.get("operationId") == "reviews_verdict" and isinstance(
        body, dict
    ):
        body["review_commit"] = _pick(body.get("review_commit"), [REVIEW_COMMIT] * 3)


@pytest.fixture(scope="module")
def seed(django_db_setup, django_db_blocker):
    """Built once for the module, inside a transaction that is rolled back at its end; each
    operation's test runs in a savepoint within it, so every one starts from this state."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield Seed()
        transaction.set_rollback(True)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_every_operation_answers_within_its_schema(case, seed):
    aim_at_the_seed(case, seed)
    operation_id = case.operation.definition.raw["operationId"]
    response = case.call_and_validate(
        **seed.auth[PRINCIPAL[operation_id]],
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )
    # The principal is always let in: the fuzzing reaches the views, not just authentication.
    assert response.status_code != 401, response.text


# What the fuzzing stands on: each principal reaches its operations on the seeded project.
# (Deterministic; the fuzzing above is random, so it cannot promise that any one case lands.)
KNOWN_GOOD = [
    # (principal, method, path, path parameters, body, status)
    ("coder-1", "GET", "/tasks/{key}", {"key": "t-claimed"}, None, 200),
    ("coder-1", "POST", "/agents/heartbeat", {}, {}, 200),
    ("planner-1", "POST", "/tasks/{key}/finalize", {"key": "t-draft"}, None, 200),
    ("coder-5", "POST", "/tasks/claim-next", {}, {"base_commit": "b1"}, 200),
    ("code-reviewer-2", "POST", "/tasks/{key}/review/claim", {"key": "t-ready"}, None, 201),
    (
        "code-reviewer-1",
        "POST",
        "/tasks/{key}/verdict",
        {"key": "t-review"},
        {"verdict": "APPROVED", "review_commit": REVIEW_COMMIT},
        200,
    ),
    (
        "code-reviewer-1",
        "POST",
        "/tasks/{key}/merge",
        {"key": "t-approved"},
        {"merge_commit": "m"},
        200,
    ),
    ("admin", "GET", "/agents/{agent_id}/keys", {"agent_id": "coder-4"}, None, 200),
    ("admin", "POST", "/tasks/{key}/approve", {"key": "t-gate"}, {"note": "Checked"}, 200),
    ("admin", "POST", "/tasks/{key}/resume", {"key": "t-suspended"}, None, 200),
    (
        "admin",
        "POST",
        "/discoveries/{disc_id}/triage",
        {"disc_id": "disc-1"},
        {"decision": "defer"},
        200,
    ),
    ("admin", "POST", "/tasks/{key}/override-block", {"key": "t-ready"}, {"reason": "stop"}, 200),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("principal", "method", "path", "params", "body", "status"), KNOWN_GOOD)
def test_the_seed_answers_each_principal(seed, principal, method, path, params, body, status):
    operation = schema[f"/api/v1/projects/{{slug}}{path}"][method]
    case = operation.Case(
        path_parameters={"slug": SLUG, **params},
        **({"body": body} if body is not None else {}),
    )
    response = case.call_and_validate(
        **seed.auth[principal],
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )
    assert response.status_code == status, response.text


def test_every_operation_of_the_schema_has_a_principal():
    """A new endpoint must say who fuzzes it, or it would be fuzzed as a refused stranger."""
    operation_ids = {
        operation["operationId"]
        for methods in schema.raw_schema["paths"].values()
        for operation in methods.values()
    }
    assert operation_ids == set(PRINCIPAL), operation_ids ^ set(PRINCIPAL)


# -- hostile values in every JSON field (issue #27) ----------------------------------------------
# The random fuzzing above rarely draws a lone UTF-16 surrogate or a number past a column's
# range, which is where the last review found 500s (an anomaly's details, the config's
# state_timeouts, retry_backoff, archive_after_days). Here every field of every request body —
# nested objects and list items too — gets each hostile value in turn, deterministically.

SURROGATE = "x\ud800"
HUGE = 10**30
HOSTILE_OBJECT = {"\udfff": 1, "k": SURROGATE, "n": HUGE, "list": [HUGE, SURROGATE]}
REAL_PATH_VALUES = {"key": "t-claimed", "agent_id": "coder-1", "disc_id": "disc-1"}


def _resolve(node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = schema.raw_schema["components"]["schemas"][name]
    for combined in ("allOf", "oneOf", "anyOf"):
        if isinstance(node, dict) and node.get(combined):
            node = _resolve(node[combined][0])
    return node


def _hostile_bodies(node: dict, depth: int = 0):
    """(path, body) for each field of the body schema `node`, holding each hostile value."""
    node = _resolve(node)
    if depth > 4:
        return
    properties = node.get("properties") or {}
    for name, child in properties.items():
        child = _resolve(child)
        kind = child.get("type")
        values: list = [SURROGATE, HUGE]
        if kind == "object" or child.get("additionalProperties"):
            values.append(HOSTILE_OBJECT)
        if kind == "array":
            values += [[SURROGATE, HUGE], [HOSTILE_OBJECT]]
        for value in values:
            yield name, {name: value}
        inner = _resolve(child.get("items", {})) if kind == "array" else child
        if inner.get("properties"):
            for path, body in _hostile_bodies(inner, depth + 1):
                yield f"{name}.{path}", {name: [body] if kind == "array" else body}


def _operations_with_a_body():
    for path, methods in schema.raw_schema["paths"].items():
        for method, operation in methods.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                yield path, method.upper(), operation["operationId"], content["application/json"]


HOSTILE_CASES = [
    (operation_id, path, method, field, body)
    for path, method, operation_id, media in _operations_with_a_body()
    for field, body in _hostile_bodies(media.get("schema", {}))
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "operation_id", sorted({case[0] for case in HOSTILE_CASES}), ids=lambda op: op
)
def test_surrogates_and_huge_numbers_in_every_json_field_answer_within_the_schema(
    seed, operation_id
):
    for _, path, method, field, body in (c for c in HOSTILE_CASES if c[0] == operation_id):
        operation = schema[path][method]
        params = {"slug": SLUG}
        for name in operation.path_parameters:
            if name.name != "slug":
                params[name.name] = {
                    **REAL_PATH_VALUES,
                    "run_id": seed.run_ids[0],
                    "prefix": seed.revocable[0],
                }[name.name]
        case = operation.Case(path_parameters=params, body=body)
        with transaction.atomic():  # each body starts from the seed
            response = case.call_and_validate(
                **seed.auth[PRINCIPAL[operation_id]],
                checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
            )
            if response.status_code < 300:
                # Accepted: what reads it next must still answer (a huge retry_backoff once
                # passed here, then every claim-next and /work of the project was a 500).
                work = schema["/api/v1/projects/{slug}/work"]["GET"].Case(
                    path_parameters={"slug": SLUG}
                )
                work.call_and_validate(**seed.auth["coder-5"], checks=[not_a_server_error])
            transaction.set_rollback(True)
        assert response.status_code != 401, (field, response.text)


def test_the_hostile_cases_reach_every_body_and_its_nested_fields():
    fields = {(c[0], c[3]) for c in HOSTILE_CASES}
    assert ("anomalies_create", "details") in fields
    assert ("config_update", "state_timeouts") in fields
    assert ("config_update", "retry_backoff") in fields
    assert ("tasks_rescope", "new_tasks.priority") in fields
