"""What every project endpoint shares: authentication, tenancy, the acting principal, the
documented errors, and the adapter that turns a declared operation into an endpoint.

Every view resolves the project from the URL with the tenancy rule of SPEC §3 — an agent key of
another project, or a human without membership, gets the same 404 as a missing project — and
passes the acting principal (Agent or User) and `now` to a service. Errors are mapped once by
`liza_site.exceptions` to the JSON envelope.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from agents.api import serializers as agent_s
from agents.authentication import AgentKeyAuthentication, AgentPrincipal
from agents.client.contract import Endpoint
from agents.models import Agent, IdempotentRequest
from agents.services import (
    agent_ready,
    idempotent_request_abandon,
    idempotent_request_begin,
    idempotent_request_finish,
)
from boards.api import serializers as s
from boards.api.generation import GENERATION_PARAMETER, claimed_generation
from boards.api.parsers import JSONParser
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import human_role, project_with_role
from boards.coordination.selectors.breaker import breaker_state
from boards.coordination.selectors.budgets import budget_states
from boards.coordination.selectors.tasks import task_get, task_list, task_prefetch_one
from boards.coordination.services.authority import require_reader
from boards.errors import Forbidden, NotFound, ProtocolValidationError, Unavailable, lost_race
from boards.operations import operation, resolve_target
from boards.operations.base import run_again_on_lost_race, runs_left
from boards.protocol import AgentStatus
from liza_site.outages import DATABASE
from liza_site.throttling import count_address_first

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="validation_error naming the field"),
    401: OpenApiResponse(s.ErrorSerializer, description="missing, unknown or revoked key"),
    403: OpenApiResponse(
        s.ErrorSerializer, description="the role may not do this, or the agent is disabled"
    ),
    404: OpenApiResponse(s.ErrorSerializer, description="no such project or object (or foreign)"),
    409: OpenApiResponse(
        s.ErrorSerializer,
        description="invalid_transition, conflict, lease_lost / paused / checkpoint / aborted "
        "(exit 42), collision, not_registered (exit 8)",
    ),
}
# A read is open to every principal of the project, but a disabled agent's key gets 403.
READ_ERRORS = {k: v for k, v in ERRORS.items() if k in (401, 403, 404)}
WRITE_ERRORS = {k: v for k, v in ERRORS.items() if k in (400, 401, 403, 404, 409)}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {c: ERRORS[c] for c in codes}


class ProjectSchema(AutoSchema):
    """Every operation may answer 429 (rate limits); one that takes a body also answers 415 to
    a body that is not JSON."""

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation:
            operation["responses"].setdefault(
                "429",
                {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                    "description": "throttled: over the rate limit of the key or the address; "
                    "Retry-After says when to try again",
                },
            )
        if operation:
            operation.setdefault("parameters", []).append(GENERATION_PARAMETER)
        if operation and "requestBody" in operation:
            operation["responses"].setdefault(
                "415",
                {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                    "description": "unsupported_media_type: the body must be application/json",
                },
            )
        return operation


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
READ_METHODS = frozenset({"GET", "HEAD"})

H = TypeVar("H", bound=Callable[..., Any])
T = TypeVar("T")


def readers(role: str) -> Callable[[H], H]:
    """A read for some people only: `role` and above, and no agent (`require_reader`), checked
    before its handler runs (`ProjectView.initial`). A read without it is every member role's
    and every agent's of the project: whoever the tenancy rule admits (`_resolve_project`)."""

    def mark(handler: H) -> H:
        handler.readers = role  # type: ignore[attr-defined]
        return handler

    return mark


IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_MAX = 255


class _Replay(Exception):
    """Raised from `initial` to answer a retried write with its first answer."""

    def __init__(self, record: IdempotentRequest) -> None:
        super().__init__(record.key)
        self.record = record


def in_request_transaction(request: HttpRequest, call: Callable[[], T]) -> T:
    """`call()` (a request's handling) as every API request runs: a write with an
    Idempotency-Key in one transaction — the key's record and what the write does commit
    together (or not at all), and a concurrent retry waits on the record's unique index until
    it ends — and run again whole when PostgreSQL rolled it back for another's sake
    (`run_again_on_lost_race`). ProjectView.dispatch and the hot path (boards.api.hot)."""

    def once() -> T:
        if request.method in WRITE_METHODS and IDEMPOTENCY_HEADER in request.headers:
            with transaction.atomic():
                return call()
        return call()

    answer = run_again_on_lost_race(once)
    if getattr(answer, "status_code", None) != Unavailable.status_code:
        DATABASE.succeeded()  # ends the outage the API answered 503 for: its recovery logged
    return answer


class ProjectView(APIView):
    """Base of every project endpoint: authentication, tenancy, the acting principal."""

    authentication_classes = [AgentKeyAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    # The agent protocol speaks JSON (SPEC §6); form encodings only blur what a field holds.
    parser_classes = [JSONParser]
    schema = ProjectSchema()
    project: Project

    def perform_authentication(self, request: Request) -> None:
        # Requests with a wrong or missing key count against their address's rate limit too.
        count_address_first(self, request)
        super().perform_authentication(request)

    def dispatch(self, request, *args: Any, **kwargs: Any):
        self._idempotent: IdempotentRequest | None = None
        self._parsed: Request | None = None
        try:
            # A transaction PostgreSQL rolled back for another's sake (a deadlock's victim) is
            # run again, whole (`in_request_transaction`); `handle_exception` lets it through.
            return in_request_transaction(
                request, lambda: self._dispatch_once(request, *args, **kwargs)
            )
        except ObjectDoesNotExist:
            # No envelope for it (a row the service locks is gone: Agent.DoesNotExist): the
            # agent may have been deleted since authentication. Then the answer is the one its
            # key gets now (401, 403 or 404), as on the hot path (boards.api.hot), else the
            # failure stands. Caught outside the transaction: the Idempotency-Key's record
            # rolled back with it, so a retry is applied anew.
            refused = key_refusal(request, kwargs.get("slug", ""))
            if refused is None:
                raise
            self._idempotent = None
            response = self.handle_exception(refused)
            return self.finalize_response(self.request, response, *args, **kwargs)

    def _dispatch_once(self, request, *args: Any, **kwargs: Any):
        self._idempotent = None
        return super().dispatch(request, *args, **kwargs)

    def initialize_request(self, request, *args: Any, **kwargs: Any) -> Request:
        # A run again (dispatch) reads the body its first run parsed: the stream is read once.
        parsed = getattr(self, "_parsed", None)
        if parsed is None:
            parsed = super().initialize_request(request, *args, **kwargs)
            if hasattr(self, "_parsed"):
                self._parsed = parsed
        return parsed

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.now = timezone.now()
        _refuse_null_characters(request, kwargs)
        self.project = self._resolve_project(request, kwargs["slug"])
        if request.method in READ_METHODS:
            role = getattr(getattr(self, "get", None), "readers", None)
            if role is not None:
                require_reader(self.actor, self.project, human=role)
        self._begin_idempotent(request)

    def _begin_idempotent(self, request: Request) -> None:
        """An agent's write with an Idempotency-Key is applied once; its retries replay the
        first answer (docs/decisions.md). Humans' forms and keyless writes are unaffected."""
        key = request.headers.get(IDEMPOTENCY_HEADER)
        if (
            key is None
            or request.method not in WRITE_METHODS
            or not isinstance(request.user, AgentPrincipal)
        ):
            return
        key = key.strip()
        if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isascii():
            raise ProtocolValidationError(
                IDEMPOTENCY_HEADER, f"must be 1 to {IDEMPOTENCY_KEY_MAX} ASCII characters"
            )
        request_form = json.dumps(
            [request.method, request.path, request.data], sort_keys=True, cls=JSONEncoder
        )
        record, first = idempotent_request_begin(
            agent=request.user.agent,
            key=key,
            method=request.method,
            path=request.path,
            fingerprint=hashlib.sha256(request_form.encode()).hexdigest(),
            now=self.now,
        )
        if not first:
            raise _Replay(record)
        self._idempotent = record

    def handle_exception(self, exc: Exception) -> Response:
        if runs_left() and lost_race(exc):
            raise exc  # to the runner around the transaction, which runs it again
        if isinstance(exc, _Replay):
            return Response(
                exc.record.body,
                status=exc.record.status_code,
                headers={"Idempotent-Replayed": "true"},
            )
        return super().handle_exception(exc)

    # An agent's successful write shows it is up (agents.services.agent_ready); registering is
    # the one write that leaves it STARTING.
    marks_agent_ready = True

    def finalize_response(self, request, response, *args: Any, **kwargs: Any):
        response = super().finalize_response(request, response, *args, **kwargs)
        # Who authenticated, if anyone did: `request.user` would authenticate now, and a request
        # refused before that (throttled by address, a wrong key) must not raise here.
        user = request.__dict__.get("_user")
        if (
            self.marks_agent_ready
            and isinstance(user, AgentPrincipal)
            and request.method in WRITE_METHODS
            and response.status_code < 400
            and user.agent.status == AgentStatus.STARTING
        ):
            agent_ready(agent=user.agent)
        record = getattr(self, "_idempotent", None)
        if record is not None:
            self._idempotent = None
            if transaction.get_connection().needs_rollback:
                pass  # the transaction rolls back, the record with it: a retry applies anew
            elif response.status_code >= 500:
                # A server failure is not an answer to replay: the retry gets another try.
                idempotent_request_abandon(record=record)
            else:
                body = json.loads(json.dumps(response.data, cls=JSONEncoder))
                idempotent_request_finish(
                    record=record, status_code=response.status_code, body=body
                )
        return response

    @staticmethod
    def _resolve_project(request: Request, slug: str) -> Project:
        user = request.user
        if isinstance(user, AgentPrincipal):
            # The key's own project came with the key (agent_key_lookup): no query. A slug
            # naming any other project, existing or not, is the same 404.
            if user.agent.project.slug != slug:
                raise NotFound()
            return user.agent.project
        # The project, its config and the person's role in one statement (as a project page
        # reads them), not two ORM queries compiled anew on every request.
        project, role = project_with_role(slug=slug, user=user)
        if project is None or role is None:
            raise NotFound()
        return project

    @property
    def actor(self):
        user = self.request.user
        return user.agent if isinstance(user, AgentPrincipal) else user

    @property
    def generation(self) -> int | None:
        """The generation the request's process registered as (`boards.api.generation`)."""
        return claimed_generation(self.request.headers)

    @property
    def agent(self) -> Agent:
        """The calling agent; humans get 403 on agent-only operations."""
        user = self.request.user
        if not isinstance(user, AgentPrincipal):
            raise Forbidden("this operation is for agents (use an agent key)")
        return user.agent

    def shows_webhook(self) -> bool:
        """The escalation webhook is for the project's admins only (docs/security.md)."""
        actor = self.actor
        return not isinstance(actor, Agent) and human_role(actor, self.project) == "admin"

    def task(self, key: str) -> Task:
        return task_get(project=self.project, key=key)

    def valid(self, serializer_class: type[serializers.Serializer]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def task_response(
        self, task: Task | None, status: int = 200, *, fresh: bool = False
    ) -> Response:
        """The task as the protocol answers it. `fresh`: `task` is the row the service has just
        locked and saved in this request, so it is serialised as it is instead of read again."""
        if task is None:
            return Response({"task": None}, status=status)
        if fresh:
            task_prefetch_one(task)
        else:
            task = task_list(project=self.project).get(pk=task.pk)
        return Response(
            {"task": s.TaskSerializer(task, context={"now": self.now}).data}, status=status
        )


def key_refusal(request: HttpRequest, slug: str) -> exceptions.APIException | None:
    """What authentication and tenancy refuse the request's agent key with, looked up now in
    the database: a key gone with its agent (401), its agent disabled (403) or of another
    project (404); None when the key still stands for an agent of `slug`, or the request has
    no agent key (a person's: their failures are not this)."""
    authentication = AgentKeyAuthentication()
    try:
        authenticated = authentication.authenticate(request)
    except exceptions.AuthenticationFailed as exc:
        exc.auth_header = authentication.authenticate_header(request)  # as APIView does
        return exc
    except exceptions.APIException as exc:
        return exc
    if authenticated is None:
        return None
    if authenticated[0].agent.project.slug != slug:
        return NotFound()
    return None


def _refuse_null_characters(request: Request, kwargs: dict[str, Any]) -> None:
    """PostgreSQL text cannot hold NUL: no task, agent or key has one in its name (404), and a
    query parameter holding one is a 400 naming it, rather than a database error."""
    if any("\x00" in str(value) for value in kwargs.values()):
        raise NotFound()
    for name, values in request.query_params.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            raise ProtocolValidationError(
                name.replace("\x00", ""), "null characters are not allowed"
            )


# -- declared operations as endpoints -----------------------------------------------------------


# How an operation's result is answered: a serializer class, or a function of (view, result).
Presenter = Callable[[ProjectView, Any], Any]


def _task(view: ProjectView, task: Task | None) -> Any:
    return view.task_response(task).data


def _fresh_task(view: ProjectView, task: Task | None) -> Any:
    return view.task_response(task, fresh=True).data


def _next_review(view: ProjectView, review: Review | None) -> Any:
    if review is None:
        return {"review": None, "task": None}
    task = view.task_response(review.task).data["task"]
    return {"review": s.ReviewSerializer(review).data, "task": task}


def _tasks(view: ProjectView, created: list[Task]) -> Any:
    rows = task_list(project=view.project).filter(pk__in=[t.pk for t in created])
    return s.TaskSerializer(rows, many=True, context={"now": view.now}).data


def _issued_key(view: ProjectView, issued: tuple[Any, str]) -> Any:
    key, plain = issued
    key.key = plain
    return agent_s.IssuedKeySerializer(key).data


PRESENTERS: dict[str, tuple[Presenter, Any]] = {
    "task": (_task, s.ClaimResultSerializer),
    "fresh_task": (_fresh_task, s.ClaimResultSerializer),
    "tasks": (_tasks, s.TaskSerializer(many=True)),
    "review": (lambda v, r: s.ReviewSerializer(r).data, s.ReviewSerializer),
    "next_review": (_next_review, s.ReviewClaimResultSerializer),
    "goal": (lambda v, g: s.GoalSerializer(g).data, s.GoalSerializer),
    "sprint": (lambda v, r: s.SprintSerializer(r).data, s.SprintSerializer),
    "project": (lambda v, r: s.ProjectStateSerializer(r).data, s.ProjectStateSerializer),
    "config": (
        lambda v, r: s.ConfigSerializer(r, context={"show_webhook": v.shows_webhook()}).data,
        s.ConfigSerializer,
    ),
    "notifications": (lambda v, r: s.NotificationsSerializer(r).data, s.NotificationsSerializer),
    "discovery": (lambda v, r: s.DiscoverySerializer(r).data, s.DiscoverySerializer),
    "alert": (lambda v, r: s.AlertSerializer(r).data, s.AlertSerializer),
    "anomaly": (lambda v, r: s.AnomalySerializer(r).data, s.AnomalySerializer),
    "note": (lambda v, r: s.HumanNoteSerializer(r).data, s.HumanNoteSerializer),
    "event": (lambda v, r: s.EventSerializer(r).data, s.EventSerializer),
    "handoff": (lambda v, r: s.HandoffSerializer(r).data, s.HandoffSerializer),
    "agent": (lambda v, r: agent_s.AgentSerializer(r).data, agent_s.AgentSerializer),
    "run": (lambda v, r: agent_s.RunSerializer(r).data, agent_s.RunSerializer),
    "usage": (
        lambda v, r: agent_s.RunUsageSerializer(r, many=True).data,
        agent_s.RunUsageSerializer(many=True),
    ),
    "budgets": (
        lambda v, r: (
            agent_s.BudgetStateSerializer(budget_states(project=v.project), many=True).data
        ),
        agent_s.BudgetStateSerializer(many=True),
    ),
    "key": (lambda v, r: agent_s.AgentKeySerializer(r).data, agent_s.AgentKeySerializer),
    "issued_key": (_issued_key, agent_s.IssuedKeySerializer),
    "breaker": (
        lambda v, r: s.BreakerSerializer(breaker_state(project=r.project)).data,
        s.BreakerSerializer,
    ),
}


# Operations answered with the row the service has just locked and saved (no second read).
FRESH = frozenset({"task_claim", "task_claim_next"})


def operation_view(endpoint: Endpoint) -> type[ProjectView]:
    """An endpoint for the declared operation of `endpoint` (agents.client.contract): its
    input, its service, its answer."""
    op = operation(endpoint.name)
    present = "fresh_task" if endpoint.name in FRESH else endpoint.result
    presenter, schema = PRESENTERS[present]
    status = endpoint.status

    def handler(self: ProjectView, request: Request, slug: str, **kwargs: Any) -> Response:
        data = op.validate(request.data) if op.input is not None else {}
        actor = self.agent if op.principal == "agent" else self.actor
        target = resolve_target(self.project, op.target, kwargs)
        result = op.run(
            target=target, actor=actor, now=self.now, data=data, generation=self.generation
        )
        if result is None and present == "handoff":
            raise NotFound()
        return Response(presenter(self, result), status=status)

    handler = extend_schema(
        operation_id=endpoint.operation_id,
        request=op.input,
        description=endpoint.description or (op.service.__doc__ or "").strip().split("\n\n")[0],
        responses={status: schema, **errors(*endpoint.errors)},
    )(handler)
    return type(f"{endpoint.name}_view", (ProjectView,), {endpoint.method.lower(): handler})
