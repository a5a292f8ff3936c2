"""The agent protocol over HTTP (SPEC §6): thin views that validate input and call services.

Every view resolves the project from the URL with the tenancy rule of SPEC §3 — an agent key of
another project, or a human without membership, gets the same 404 as a missing project — and
passes the acting principal (Agent or User) and `now` to a service. Errors are mapped once by
`liza_site.exceptions` to the JSON envelope.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, Q, QuerySet, prefetch_related_objects
from django.http import Http404
from django.utils import timezone
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.authentication import AgentKeyAuthentication, AgentPrincipal
from agents.models import Agent
from boards import protocol as p
from boards import selectors
from boards.api import serializers as s
from boards.api.parsers import JSONParser
from boards.models import Event, Goal, Project, Review, Task
from boards.services import goals, records, reviews, sprints, tasks
from boards.services.common import human_role
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
        description="invalid_transition, conflict, lease_lost / paused / checkpoint (exit 42), "
        "collision",
    ),
}
# A read is open to every principal of the project, but a disabled agent's key gets 403.
READ_ERRORS = {k: v for k, v in ERRORS.items() if k in (401, 403, 404)}


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

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.now = timezone.now()
        self.project = self._resolve_project(request, kwargs["slug"])
        _refuse_null_characters(request, kwargs)

    @staticmethod
    def _resolve_project(request: Request, slug: str) -> Project:
        project = Project.objects.select_related("config").filter(slug=slug).first()
        if project is None:
            raise Http404
        user = request.user
        if isinstance(user, AgentPrincipal):
            if user.agent.project_id != project.pk:
                raise Http404
            user.agent.project = project
        elif human_role(user, project) is None:
            raise Http404
        return project

    @property
    def actor(self):
        user = self.request.user
        return user.agent if isinstance(user, AgentPrincipal) else user

    @property
    def agent(self) -> Agent:
        """The calling agent; humans get 403 on agent-only operations."""
        user = self.request.user
        if not isinstance(user, AgentPrincipal):
            from rest_framework.exceptions import PermissionDenied

            raise PermissionDenied("this operation is for agents (use an agent key)")
        return user.agent

    def task(self, key: str) -> Task:
        return selectors.task_get(project=self.project, key=key)

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
            prefetch_related_objects([task], *TASK_PREFETCH)
        else:
            task = task_queryset(self.project).get(pk=task.pk)
        return Response(
            {"task": s.TaskSerializer(task, context={"now": self.now}).data}, status=status
        )


def _refuse_null_characters(request: Request, kwargs: dict[str, Any]) -> None:
    """PostgreSQL text cannot hold NUL: no task, agent or key has one in its name (404), and a
    query parameter holding one is a 400 naming it, rather than a database error."""
    if any("\x00" in str(value) for value in kwargs.values()):
        raise Http404
    for name, values in request.query_params.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            raise serializers.ValidationError(
                {name.replace("\x00", ""): ["null characters are not allowed"]}
            )


def task_queryset(project: Project) -> QuerySet[Task]:
    return Task.objects.filter(project=project).prefetch_related(*TASK_PREFETCH)


# What TaskSerializer reads besides the row: dependencies and the open reviews.
TASK_PREFETCH = (
    "depends_on",
    Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True)),
)


TASK_OUT = {200: s.ClaimResultSerializer}

# ----------------------------------------------------------------------------------------------
# reads
# ----------------------------------------------------------------------------------------------


class TaskListView(ProjectView):
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
        responses={200: s.TaskSerializer(many=True), **READ_ERRORS, 400: ERRORS[400]},
    )
    def get(self, request: Request, slug: str) -> Response:
        qs = task_queryset(self.project).order_by("priority", "created", "id")
        params = request.query_params
        statuses = params.getlist("status")
        if statuses:
            unknown = [x for x in statuses if x not in p.TASK_STATES]
            if unknown:
                raise serializers.ValidationError({"status": [f"unknown status {unknown[0]}"]})
            qs = qs.filter(status__in=statuses)
        if params.get("assigned_to"):
            qs = qs.filter(assigned_to=params["assigned_to"])
        if params.get("priority"):
            try:
                qs = qs.filter(priority=int(params["priority"]))
            except ValueError as exc:
                raise serializers.ValidationError({"priority": ["an integer 1-5"]}) from exc
        if params.get("criticality"):
            qs = qs.filter(criticality=params["criticality"])
        if params.get("goal"):
            qs = qs.filter(goal__goal_id=params["goal"])
        if params.get("sprint"):
            qs = qs.filter(
                Q(planned_in__sprint_id=params["sprint"])
                | Q(stretch_in__sprint_id=params["sprint"])
            ).distinct()
        if params.get("q"):
            qs = qs.filter(Q(key__icontains=params["q"]) | Q(description__icontains=params["q"]))
        return Response(s.TaskSerializer(qs, many=True, context={"now": self.now}).data)


class TaskDetailView(ProjectView):
    @extend_schema(
        operation_id="tasks_retrieve", responses={200: s.TaskDetailSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str, key: str) -> Response:
        task = (
            task_queryset(self.project)
            .filter(key=key)
            .prefetch_related("human_notes__author", "anomalies", "reviews")
            .first()
        )
        if task is None:
            raise Http404
        return Response(s.TaskDetailSerializer(task, context={"now": self.now}).data)


class EventListView(ProjectView):
    @extend_schema(
        operation_id="events_list",
        parameters=[
            OpenApiParameter("task", str),
            OpenApiParameter("after", int, description="only events with a larger id"),
            OpenApiParameter("limit", int, description="at most this many (default 200, max 1000)"),
        ],
        responses={200: s.EventSerializer(many=True), **READ_ERRORS, 400: ERRORS[400]},
    )
    def get(self, request: Request, slug: str) -> Response:
        qs = Event.objects.filter(project=self.project).select_related("task").order_by("id")
        params = request.query_params
        try:
            after = int(params.get("after", 0))
            limit = min(max(int(params.get("limit", 200)), 1), 1000)
        except ValueError as exc:
            raise serializers.ValidationError({"after": ["integers expected"]}) from exc
        if params.get("task"):
            qs = qs.filter(task__key=params["task"])
        return Response(s.EventSerializer(qs.filter(id__gt=after)[:limit], many=True).data)


class GoalView(ProjectView):
    @extend_schema(operation_id="goal_retrieve", responses={200: s.GoalSerializer, **READ_ERRORS})
    def get(self, request: Request, slug: str) -> Response:
        goal = (
            Goal.objects.filter(project=self.project, status="IN_PROGRESS").first()
            or Goal.objects.filter(project=self.project).order_by("-created").first()
        )
        if goal is None:
            raise Http404
        return Response(s.GoalSerializer(goal).data)

    @extend_schema(
        operation_id="goal_create",
        request=s.GoalInput,
        responses={201: s.GoalSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.GoalInput)
        goal = goals.goal_create(project=self.project, actor=self.actor, now=self.now, **data)
        return Response(s.GoalSerializer(goal).data, status=201)


class GoalCompleteView(ProjectView):
    @extend_schema(
        operation_id="goal_complete",
        request=s.ReasonInput,
        responses={200: s.GoalSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ReasonInput)
        goal = Goal.objects.filter(project=self.project, status="IN_PROGRESS").first()
        if goal is None:
            raise Http404
        goal = goals.goal_complete(goal=goal, actor=self.actor, now=self.now, **data)
        return Response(s.GoalSerializer(goal).data)


class SprintView(ProjectView):
    @extend_schema(
        operation_id="sprint_retrieve", responses={200: s.SprintSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str) -> Response:
        sprint = selectors.sprint_open(project=self.project) or (
            self.project.sprints.order_by("-started", "-id").first()
        )
        if sprint is None:
            raise Http404
        return Response(s.SprintSerializer(sprint).data)

    @extend_schema(
        operation_id="sprint_create",
        request=s.SprintInput,
        responses={201: s.SprintSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.SprintInput)
        goal = Goal.objects.filter(project=self.project, status="IN_PROGRESS").first()
        if goal is None:
            raise serializers.ValidationError({"goal": ["the project has no goal IN_PROGRESS"]})
        sprint = sprints.sprint_create(
            project=self.project, actor=self.actor, goal=goal, now=self.now, **data
        )
        return Response(s.SprintSerializer(sprint).data, status=201)


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
        responses={200: s.WorkSerializer, **READ_ERRORS, 400: ERRORS[400]},
    )
    def get(self, request: Request, slug: str) -> Response:
        actor = self.actor
        role = request.query_params.get("role") or getattr(actor, "role", None)
        if role not in p.AGENT_ROLES:
            raise serializers.ValidationError({"role": [f"one of {', '.join(p.AGENT_ROLES)}"]})
        agent_id = actor.agent_id if isinstance(actor, Agent) else None
        work = selectors.work_for_role(
            project=self.project, role=role, agent_id=agent_id, now=self.now
        )
        headers = {"Retry-After": str(work["retry_after"])} if work["retry_after"] else {}
        return Response(work, headers=headers)


# ----------------------------------------------------------------------------------------------
# coder operations
# ----------------------------------------------------------------------------------------------


class ClaimNextView(ProjectView):
    @extend_schema(
        operation_id="tasks_claim_next",
        request=s.ClaimInput,
        description="Claim the best claimable task (own REJECTED, INTEGRATION_FAILED, UNCLAIMED "
        "with every dependency MERGED by priority then age, CLAIMED with a lease expired more "
        "than lease_grace ago) under FOR UPDATE SKIP LOCKED. `task` is null when there is none.",
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ClaimInput)
        task = tasks.task_claim_next(project=self.project, agent=self.agent, now=self.now, **data)
        return self.task_response(task, fresh=True)


class ClaimView(ProjectView):
    @extend_schema(
        operation_id="tasks_claim",
        request=s.ClaimInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ClaimInput)
        task = tasks.task_claim(task=self.task(key), agent=self.agent, now=self.now, **data)
        return self.task_response(task, fresh=True)


class SubmitView(ProjectView):
    @extend_schema(
        operation_id="tasks_request_review",
        request=s.SubmitInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.SubmitInput)
        task = tasks.task_submit_for_review(
            task=self.task(key), agent=self.agent, now=self.now, **data
        )
        return self.task_response(task)


class BlockView(ProjectView):
    @extend_schema(
        operation_id="tasks_block",
        request=s.BlockInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.BlockInput)
        task = tasks.task_block(task=self.task(key), agent=self.agent, now=self.now, **data)
        return self.task_response(task)


# ----------------------------------------------------------------------------------------------
# reviewer operations
# ----------------------------------------------------------------------------------------------


class ReviewClaimView(ProjectView):
    @extend_schema(
        operation_id="reviews_claim",
        request=None,
        responses={201: s.ReviewSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        review = reviews.review_claim(task=self.task(key), agent=self.agent, now=self.now)
        return Response(s.ReviewSerializer(review).data, status=201)


class ReviewExtendView(ProjectView):
    @extend_schema(
        operation_id="reviews_extend",
        request=None,
        responses={200: s.ReviewSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        review = reviews.review_extend(task=self.task(key), agent=self.agent, now=self.now)
        return Response(s.ReviewSerializer(review).data)


class VerdictView(ProjectView):
    @extend_schema(
        operation_id="reviews_verdict",
        request=s.VerdictInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.VerdictInput)
        task = reviews.review_verdict(task=self.task(key), agent=self.agent, now=self.now, **data)
        return self.task_response(task)


class MergeView(ProjectView):
    @extend_schema(
        operation_id="tasks_report_merge",
        request=s.MergeInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.MergeInput)
        task = tasks.task_report_merge(task=self.task(key), agent=self.agent, now=self.now, **data)
        return self.task_response(task)


class IntegrationFailureView(ProjectView):
    @extend_schema(
        operation_id="tasks_report_integration_failure",
        request=s.ReasonInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = tasks.task_report_integration_failure(
            task=self.task(key), agent=self.agent, now=self.now, **data
        )
        return self.task_response(task)


# ----------------------------------------------------------------------------------------------
# planner operations (humans with the admin role may do them too)
# ----------------------------------------------------------------------------------------------


class TaskCreateView(TaskListView):
    @extend_schema(
        operation_id="tasks_create",
        request=s.CreateTaskInput,
        responses={201: s.ClaimResultSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = dict(self.valid(s.CreateTaskInput))
        task = tasks.task_create(
            project=self.project,
            actor=self.actor,
            now=self.now,
            depends_on=data.pop("depends_on", ()),
            **data,
        )
        return self.task_response(task, status=201)


class FinalizeView(ProjectView):
    @extend_schema(
        operation_id="tasks_finalize",
        request=None,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        task = tasks.task_finalize(task=self.task(key), actor=self.actor, now=self.now)
        return self.task_response(task)


class DependenciesView(ProjectView):
    @extend_schema(
        operation_id="tasks_set_dependencies",
        request=s.DependenciesInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def put(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.DependenciesInput)
        task = tasks.task_set_dependencies(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


class RescopeView(ProjectView):
    @extend_schema(
        operation_id="tasks_rescope",
        request=s.RescopeInput,
        responses={201: s.TaskSerializer(many=True), **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.RescopeInput)
        created = tasks.task_rescope(
            task=self.task(key),
            actor=self.actor,
            now=self.now,
            reason=data["reason"],
            new_tasks=[dict(t) for t in data["new_tasks"]],
        )
        rows = task_queryset(self.project).filter(pk__in=[t.pk for t in created])
        return Response(
            s.TaskSerializer(rows, many=True, context={"now": self.now}).data, status=201
        )


class AbandonView(ProjectView):
    @extend_schema(
        operation_id="tasks_abandon",
        request=s.ReasonInput,
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = tasks.task_abandon(task=self.task(key), actor=self.actor, now=self.now, **data)
        return self.task_response(task)


class ReleaseView(ProjectView):
    @extend_schema(
        operation_id="tasks_release",
        request=s.ReasonInput,
        description="BLOCKED → UNCLAIMED with the answer (failed_by kept).",
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = tasks.task_release(task=self.task(key), actor=self.actor, now=self.now, **data)
        return self.task_response(task)


class OverrideBlockView(ProjectView):
    @extend_schema(
        operation_id="tasks_override_block",
        request=s.OverrideBlockInput,
        description="Human admins only: block any non-terminal task (SPEC §5.1).",
        responses={**TASK_OUT, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.OverrideBlockInput)
        task = tasks.task_override_block(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


# ----------------------------------------------------------------------------------------------
# records: discoveries, anomalies, log
# ----------------------------------------------------------------------------------------------


class DiscoveryView(ProjectView):
    @extend_schema(
        operation_id="discoveries_list",
        responses={200: s.DiscoverySerializer(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = self.project.discoveries.order_by("created", "id")
        return Response(s.DiscoverySerializer(rows, many=True).data)

    @extend_schema(
        operation_id="discoveries_create",
        request=s.DiscoveryInput,
        responses={201: s.DiscoverySerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.DiscoveryInput)
        discovery = records.discovery_create(
            project=self.project, actor=self.actor, now=self.now, **data
        )
        return Response(s.DiscoverySerializer(discovery).data, status=201)


class AnomalyView(ProjectView):
    @extend_schema(
        operation_id="anomalies_list",
        responses={200: s.AnomalySerializer(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = self.project.anomalies.select_related("task").order_by("timestamp", "id")
        return Response(s.AnomalySerializer(rows, many=True).data)

    @extend_schema(
        operation_id="anomalies_create",
        request=s.AnomalyInput,
        responses={201: s.AnomalySerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = dict(self.valid(s.AnomalyInput))
        anomaly = records.anomaly_create(
            project=self.project,
            actor=self.actor,
            now=self.now,
            anomaly_type=data.pop("type"),
            **data,
        )
        return Response(s.AnomalySerializer(anomaly).data, status=201)


class LogView(ProjectView):
    @extend_schema(
        operation_id="log_append",
        request=s.LogInput,
        responses={201: s.EventSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.LogInput)
        event = records.activity_log(project=self.project, actor=self.agent, now=self.now, **data)
        return Response(s.EventSerializer(event).data, status=201)
