"""The agent protocol and human oversight over HTTP (SPEC §6, §7): the read endpoints, and the
few writes whose answer is more than one row (registration, heartbeat, a new agent with its
key). Every other write is a declared operation (boards.operations) made an endpoint by
`boards.api.base.operation_view`; boards/api/urls.py binds each to its path in the contract
(agents.client.contract), a path's methods joined in one view.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents import services as agent_services
from agents.api import serializers as agent_s
from agents.models import Agent
from agents.selectors import agent_get, agent_list, run_list
from boards import protocol as p
from boards.api import serializers as s
from boards.api.base import READ_ERRORS, ProjectView, errors, readers
from boards.board.selectors.inbox import inbox
from boards.coordination.models.projects import Membership
from boards.coordination.models.records import Alert, Event
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import session_refusal
from boards.coordination.selectors.breaker import breaker_state
from boards.coordination.selectors.budgets import budget_states
from boards.coordination.selectors.filters import TaskFilter, filter_errors
from boards.coordination.selectors.sprints import goal_current, sprint_current
from boards.coordination.selectors.tasks import task_list
from boards.coordination.selectors.work import work_for_role
from boards.errors import NotFound, ProtocolValidationError
from boards.operations import inputs as i
from boards.protocol import TaskStatus
from boards.watch.selectors.notifications import notification_preferences
from boards.watch.selectors.watch import alert_list

RUN_PAGE = 100  # the newest runs; a task's or an agent's history is filtered first

# ----------------------------------------------------------------------------------------------
# reads
# ----------------------------------------------------------------------------------------------


class TaskListView(ProjectView):
    """GET the task list, POST a new DRAFT task (planner or admin)."""

    @extend_schema(
        operation_id="tasks_list",
        parameters=[
            OpenApiParameter("status", str, enum=list(p.TASK_STATES), many=True),
            OpenApiParameter("assigned_to", str),
            OpenApiParameter("priority", int),
            OpenApiParameter("criticality", str, enum=list(p.CRITICALITIES)),
            OpenApiParameter("goal", str, description="goal id"),
            OpenApiParameter("sprint", str, description="sprint id (planned or stretch)"),
            OpenApiParameter("q", str, description="text search in key and description"),
        ],
        responses={200: s.TaskSerializer(many=True), **READ_ERRORS, 400: errors(400)[400]},
    )
    def get(self, request: Request, slug: str) -> Response:
        filtered = TaskFilter(
            data=request.query_params,
            queryset=task_list(project=self.project).order_by("priority", "created", "id"),
        )
        if not filtered.is_valid():
            name, messages = next(iter(filter_errors(filtered).items()))
            raise ProtocolValidationError(name, " ".join(messages))
        return Response(s.TaskSerializer(filtered.qs, many=True, context={"now": self.now}).data)


class TaskDetailView(ProjectView):
    @extend_schema(
        operation_id="tasks_retrieve", responses={200: s.TaskDetailSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str, key: str) -> Response:
        task = (
            task_list(project=self.project)
            .filter(key=key)
            .prefetch_related("human_notes__author", "anomalies", "reviews")
            .first()
        )
        if task is None:
            raise NotFound()
        return Response(s.TaskDetailSerializer(task, context={"now": self.now}).data)


class EventListView(ProjectView):
    @extend_schema(
        operation_id="events_list",
        parameters=[
            OpenApiParameter("task", str),
            OpenApiParameter("after", int, description="only events with a larger id"),
            OpenApiParameter("limit", int, description="at most this many (default 200, max 1000)"),
        ],
        responses={200: s.EventSerializer(many=True), **READ_ERRORS, 400: errors(400)[400]},
    )
    def get(self, request: Request, slug: str) -> Response:
        query = i.EventQueryInput(data=request.query_params)
        if not query.is_valid():
            name, messages = next(iter(query.errors.items()))
            raise ProtocolValidationError(name, " ".join(str(m) for m in messages))
        params = query.validated_data
        qs = Event.objects.filter(project=self.project).select_related("task").order_by("id")
        if params.get("task"):
            qs = qs.filter(task__key=params["task"])
        limit = min(max(params["limit"], 1), 1000)
        rows = qs.filter(id__gt=params["after"])[:limit]
        context = {"admin": self.shows_webhook()}
        return Response(s.EventSerializer(rows, many=True, context=context).data)


def project_read(
    operation_id: str,
    read: Callable[..., Any],
    serializer: type[serializers.Serializer],
    *,
    many: bool = False,
    **schema: Any,
) -> type[ProjectView]:
    """A GET of what `read(project=…)` returns, through `serializer`: the project's rows
    (`many`), or one row (its current goal, its current sprint), 404 while there is none."""

    @extend_schema(
        operation_id=operation_id,
        responses={200: serializer(many=True) if many else serializer, **READ_ERRORS},
        **schema,
    )
    def get(self: ProjectView, request: Request, slug: str) -> Response:
        found = read(project=self.project)
        if found is None:
            raise NotFound()
        return Response(serializer(found, many=many).data)

    return type(f"{operation_id}_view", (ProjectView,), {"get": get})


GoalView = project_read("goal_retrieve", goal_current, s.GoalSerializer)
SprintView = project_read("sprint_retrieve", sprint_current, s.SprintSerializer)


class WorkView(ProjectView):
    @extend_schema(
        operation_id="work_for_role",
        parameters=[
            OpenApiParameter(
                "role",
                str,
                enum=list(p.AGENT_ROLES),
                description="defaults to the calling agent's role",
            )
        ],
        description="Is there work for the role (the calling agent's by default) now? An "
        "agent's process whose session is over — the agent left (`agents/leave`) and has not "
        "registered since, or its `Liza-Generation` is superseded — is 409 `not_registered` "
        "(exit 8), as its heartbeat is.",
        responses={200: s.WorkSerializer, **READ_ERRORS, **errors(400, 409)},
    )
    def get(self, request: Request, slug: str) -> Response:
        actor = self.actor
        agent = actor if isinstance(actor, Agent) else None
        if agent is not None and (ended := session_refusal(agent, self.generation)):
            raise ended
        role = request.query_params.get("role") or getattr(agent, "role", None)
        if role not in p.AGENT_ROLES:
            raise ProtocolValidationError("role", f"one of {', '.join(p.AGENT_ROLES)}")
        if agent is not None and role != agent.role:
            agent = None  # asking about another role: the role as a whole, not this agent
        work = work_for_role(project=self.project, role=role, agent=agent, now=self.now)
        headers = {"Retry-After": str(work["retry_after"])} if work["retry_after"] else {}
        return Response(s.WorkSerializer(work).data, headers=headers)


DiscoveryView = project_read(
    "discoveries_list",
    lambda project: project.discoveries.order_by("created", "id"),
    s.DiscoverySerializer,
    many=True,
)
AnomalyView = project_read(
    "anomalies_list",
    lambda project: project.anomalies.select_related("task").order_by("timestamp", "id"),
    s.AnomalySerializer,
    many=True,
)


class RunView(ProjectView):
    @extend_schema(
        operation_id="runs_list",
        description="The supervisors' runs, newest first; `task` or `agent` filter them.",
        parameters=[OpenApiParameter("task", str), OpenApiParameter("agent", str)],
        # 400: a filter the database cannot hold (a NUL byte), refused like every query.
        responses={200: agent_s.RunSerializer(many=True), **errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = run_list(
            project=self.project,
            task=request.query_params.get("task"),
            agent_id=request.query_params.get("agent"),
        )[:RUN_PAGE]
        return Response(agent_s.RunSerializer(rows, many=True).data)


BudgetView = project_read(
    "budgets_list",
    budget_states,
    agent_s.BudgetStateSerializer,
    many=True,
    description="Every budget of the project: its limits, what has been spent against it "
    "and its state (ok, warning from 80 %, exhausted at 100 %).",
)


class InboxView(ProjectView):
    @extend_schema(
        operation_id="inbox_retrieve",
        description="Admins: what waits for a human — BLOCKED tasks (limit-blocked flagged), "
        "INTEGRATION_FAILED tasks, tasks awaiting human approval, suspended tasks, immediate "
        "discoveries not yet triaged, sprints at CHECKPOINT, a paused project; oldest first.",
        responses={200: s.InboxSerializer, **errors(401, 403, 404)},
    )
    @readers(Membership.Role.ADMIN)
    def get(self, request: Request, slug: str) -> Response:
        return Response(s.InboxSerializer(inbox(project=self.project, now=self.now)).data)


class ConfigView(ProjectView):
    @extend_schema(
        operation_id="config_retrieve", responses={200: s.ConfigSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str) -> Response:
        config = config_of(self.project)
        return Response(
            s.ConfigSerializer(config, context={"show_webhook": self.shows_webhook()}).data
        )


class NotificationsView(ProjectView):
    @extend_schema(
        operation_id="notifications_retrieve",
        responses={200: s.NotificationsSerializer, **READ_ERRORS},
    )
    @readers(Membership.Role.VIEWER)
    def get(self, request: Request, slug: str) -> Response:
        """The signed-in member's own notification preferences (people only, not agents)."""
        pref = notification_preferences(project=self.project, user=self.actor)
        return Response(s.NotificationsSerializer(pref).data)


# ----------------------------------------------------------------------------------------------
# agents: identity, liveness, management
# ----------------------------------------------------------------------------------------------


class RegisterView(ProjectView):
    marks_agent_ready = False  # registering (again) starts the machine at STARTING

    @extend_schema(
        operation_id="agents_register",
        request=i.RegisterInput,
        description="Register the key's agent (seed 000 identity protocol). An id held by a "
        "live lease is a 409 `collision`: the process must exit.",
        responses={200: agent_s.AgentSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(i.RegisterInput)
        agent = self.agent
        if data.get("agent_id") and data["agent_id"] != agent.agent_id:
            raise ProtocolValidationError("agent_id", f"this key is {agent.agent_id}'s")
        if data.get("role") and data["role"] != agent.role:
            raise ProtocolValidationError("role", f"{agent.agent_id} is a {agent.role}")
        agent = agent_services.agent_register(
            project=self.project,
            agent_id=agent.agent_id,
            role=agent.role,
            now=self.now,
            terminal=data.get("terminal", ""),
        )
        return Response(agent_s.AgentSerializer(agent).data)


class HeartbeatView(ProjectView):
    @extend_schema(
        operation_id="agents_heartbeat",
        request=i.HeartbeatInput,
        description="Extend the agent lease and the task and review leases it holds. "
        "`stop` tells a paused, checkpointed or aborted agent to exit 42 (`stalled`: the "
        "reported `progress_at` is older than twice stall_timeout, the task lease is not "
        "extended; `budget_exhausted`: a budget its work counts against is spent); a lost task "
        "lease is 409 `lease_lost`; an agent that left (`agents/leave`) and has not registered "
        "since is 409 `not_registered` (exit 8): its session is over, its lease not extended; so "
        "is a process of a superseded session (its `Liza-Generation` older than the agent's).",
        responses={200: agent_s.HeartbeatSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(i.HeartbeatInput)
        result = agent_services.agent_heartbeat(
            agent=self.agent,
            now=self.now,
            context_percent=data.get("context_percent"),
            progress_at=data.get("progress_at"),
            generation=self.generation,
        )
        task = (
            result.task
            if result.task is not None and result.task.status == TaskStatus.CLAIMED
            else None
        )
        return Response(heartbeat_answer(result.agent, task, result.reviews, result.stop))


# The heartbeat's answer is a few columns of rows the service has in hand: written out here
# rather than through HeartbeatSerializer (a ModelSerializer builds its fields for every
# instance: ~1,800 Python calls a heartbeat). The serializer stays the schema, and
# tests/api/test_views_heartbeat_answer.py holds the two answers equal.
_TIME = serializers.DateTimeField()


def _time(value: datetime | None) -> str | None:
    return None if value is None else _TIME.to_representation(value)


def heartbeat_answer(agent: Agent, task, reviews, stop) -> dict:
    """`HeartbeatSerializer`'s answer: the agent (AgentSerializer's fields), its CLAIMED task
    (`task`, else None) with its lease, its live review leases by task, and the stop."""
    current = agent.current_task.key if agent.current_task_id is not None else None
    return {
        "agent": {
            "agent_id": agent.agent_id,
            "role": agent.role,
            "status": agent.status,
            "current_task": current,
            "lease_expires": _time(agent.lease_expires),
            "heartbeat": _time(agent.heartbeat),
            "terminal": agent.terminal,
            "iterations_total": agent.iterations_total,
            "context_percent": agent.context_percent,
            "enabled": agent.enabled,
            "security_reviewer": agent.security_reviewer,
            "registered_at": _time(agent.registered_at),
            "left_at": _time(agent.left_at),
            "generation": agent.generation,
            "overloaded": agent.overloaded,
            "error_cleared_at": _time(agent.error_cleared_at),
        },
        "task": task.key if task else None,
        "task_lease_expires": _time(task.lease_expires) if task else None,
        "review_leases": {r.task.key: _time(r.lease_expires) for r in reviews if r.lease_expires},
        "stop": stop.code if stop else None,
        "exit": 42 if stop else None,
    }


class AgentListView(ProjectView):
    @extend_schema(
        operation_id="agents_list",
        responses={200: agent_s.AgentSerializer(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(agent_s.AgentSerializer(agent_list(project=self.project), many=True).data)

    @extend_schema(
        operation_id="agents_create",
        request=i.AgentCreateInput,
        description="Admins: create an agent (next free id by role) and its first key, shown once.",
        responses={201: agent_s.AgentCreatedSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = dict(self.valid(i.AgentCreateInput))
        label = data.pop("label", "")
        agent, (key, plain) = agent_services.agent_create_with_key(
            project=self.project, actor=self.actor, now=self.now, label=label, **data
        )
        key.key = plain
        body = {"agent": agent, "key": key}
        return Response(agent_s.AgentCreatedSerializer(body).data, status=201)


class AgentDetailView(ProjectView):
    @extend_schema(
        operation_id="agents_retrieve", responses={200: agent_s.AgentSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str, agent_id: str) -> Response:
        agent = agent_get(project=self.project, agent_id=agent_id)
        return Response(agent_s.AgentSerializer(agent).data)


class AgentKeysView(ProjectView):
    @extend_schema(
        operation_id="agent_keys_list",
        responses={200: agent_s.AgentKeySerializer(many=True), **errors(401, 403, 404)},
    )
    @readers(Membership.Role.ADMIN)
    def get(self, request: Request, slug: str, agent_id: str) -> Response:
        agent = agent_get(project=self.project, agent_id=agent_id)
        return Response(agent_s.AgentKeySerializer(agent.keys.all(), many=True).data)


class AlertView(ProjectView):
    @extend_schema(
        operation_id="alerts_list",
        description="The watcher's alerts, newest first: at most one open per type and subject.",
        parameters=[
            OpenApiParameter("state", str, enum=["open", "resolved"]),
            OpenApiParameter("type", str, enum=list(Alert.Type.values)),
            OpenApiParameter("severity", str, enum=list(Alert.Level.values)),
        ],
        responses={200: s.AlertSerializer(many=True), **errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = alert_list(
            project=self.project,
            state=request.query_params.get("state", ""),
            type=request.query_params.get("type", ""),
            severity=request.query_params.get("severity", ""),
        )
        return Response(s.AlertSerializer(rows, many=True).data)


class CircuitBreakerView(ProjectView):
    @extend_schema(
        operation_id="circuit_breaker_retrieve",
        description="The circuit breaker: status, current trigger, the trip's report (pattern, "
        "severity, evidence, anomalies, checklist) and the history (seed 002).",
        responses={200: s.BreakerSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(s.BreakerSerializer(breaker_state(project=self.project)).data)
