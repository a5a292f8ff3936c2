"""Human oversight over HTTP (SPEC §7): the inbox and every admin intervention.

Thin views over `boards.services.oversight` and the sprint, goal, record and agent services.
Humans authenticate by session (CSRF enforced by DRF's SessionAuthentication); an agent key
reaches these endpoints as any project principal does, and the services refuse it (403) on
every human-only action. Project admins act; members may add notes and defer or reject
discoveries; everyone of the project reads the config.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.serializers import AgentSerializer
from agents.models import Agent
from agents.services import agent_set_enabled
from boards import selectors
from boards.api import serializers as s
from boards.api.views import READ_ERRORS, TASK_OUT, ProjectView, errors
from boards.models import Discovery, Goal, Membership, Sprint
from boards.services import goals, oversight, records, sprints
from boards.services.common import config_of, human_role, require_role

WRITE_ERRORS = errors(400, 401, 403, 404, 409)


def _open_sprint(view: ProjectView) -> Sprint:
    sprint = selectors.sprint_open(project=view.project)
    if sprint is None:
        raise Http404("The project has no open sprint.")
    return sprint


# -- the inbox ---------------------------------------------------------------------------------


class InboxView(ProjectView):
    @extend_schema(
        operation_id="inbox_retrieve",
        description="Admins: what waits for a human — BLOCKED tasks (limit-blocked flagged), "
        "INTEGRATION_FAILED tasks, tasks awaiting human approval, suspended tasks, immediate "
        "discoveries not yet triaged, sprints at CHECKPOINT, a paused project; oldest first.",
        responses={200: s.InboxSerializer, **errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        require_role(self.actor, self.project, agent_roles=())
        return Response(s.InboxSerializer(selectors.inbox(project=self.project, now=self.now)).data)


# -- tasks ---------------------------------------------------------------------------------------


class ReleaseClaimView(ProjectView):
    @extend_schema(
        operation_id="tasks_release_claim",
        request=s.ReasonInput,
        description="Admins: release a stuck claim. CLAIMED returns to UNCLAIMED (override "
        "block + release; the coder gets lease_lost); READY_FOR_REVIEW loses its pending "
        "review claims. Otherwise 409 conflict.",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = oversight.task_release_claim(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


class CancelView(ProjectView):
    @extend_schema(
        operation_id="tasks_cancel",
        request=s.ReasonInput,
        description="Admins: seed 004 cancel = override block + abandon (two events).",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = oversight.task_cancel(task=self.task(key), actor=self.actor, now=self.now, **data)
        return self.task_response(task)


class SuspendView(ProjectView):
    @extend_schema(
        operation_id="tasks_suspend",
        request=s.ReasonInput,
        description="Admins: suspend a non-terminal task (seed 004, an overlay): nobody can "
        "claim it or its review; its holder is released (lease_lost, exit 42).",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = oversight.task_suspend(task=self.task(key), actor=self.actor, now=self.now, **data)
        return self.task_response(task)


class ResumeView(ProjectView):
    @extend_schema(
        operation_id="tasks_resume",
        request=None,
        description="Admins: lift a task's suspension.",
        responses={**TASK_OUT, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        task = oversight.task_resume(task=self.task(key), actor=self.actor, now=self.now)
        return self.task_response(task)


class HumanApproveView(ProjectView):
    @extend_schema(
        operation_id="tasks_human_approve",
        request=s.ApprovalInput,
        description="Admins: the human approval gate (seed 004 APPROVAL_REQUIRED). A task that "
        "needs human approval and whose reviewers approved goes READY_FOR_REVIEW → APPROVED.",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ApprovalInput)
        task = oversight.task_human_approve(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


class HumanRejectView(ProjectView):
    @extend_schema(
        operation_id="tasks_human_reject",
        request=s.ReasonInput,
        description="Admins: reject at the human approval gate: READY_FOR_REVIEW → REJECTED, "
        "one review cycle, limits applied as after a reviewer's rejection.",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.ReasonInput)
        task = oversight.task_human_reject(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


class LimitsView(ProjectView):
    @extend_schema(
        operation_id="tasks_set_limits",
        request=s.LimitsInput,
        description="Admins: per-task overrides (null = the project's setting).",
        responses={**TASK_OUT, **WRITE_ERRORS},
    )
    def patch(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(s.LimitsInput)
        task = oversight.task_set_limits(
            task=self.task(key), actor=self.actor, now=self.now, **data
        )
        return self.task_response(task)


# -- sprint, goal, project -----------------------------------------------------------------------


class SprintCheckpointView(ProjectView):
    @extend_schema(
        operation_id="sprint_checkpoint",
        request=s.ReasonInput,
        description="Admins: IN_PROGRESS → CHECKPOINT; agents stop (exit 42) until a decision.",
        responses={200: s.SprintSerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ReasonInput)
        sprint = sprints.sprint_checkpoint(
            sprint=_open_sprint(self), actor=self.actor, now=self.now, **data
        )
        return Response(s.SprintSerializer(sprint).data)


class SprintContinueView(ProjectView):
    @extend_schema(
        operation_id="sprint_continue",
        request=s.DecisionInput,
        description="Admins: CHECKPOINT → IN_PROGRESS; the decision goes into the retrospective.",
        responses={200: s.SprintSerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.DecisionInput)
        sprint = sprints.sprint_resume(
            sprint=_open_sprint(self), actor=self.actor, now=self.now, **data
        )
        return Response(s.SprintSerializer(sprint).data)


class SprintAbortView(ProjectView):
    @extend_schema(
        operation_id="sprint_abort",
        request=s.ReasonInput,
        description="Admins: the open sprint → ABORTED, the reason recorded.",
        responses={200: s.SprintSerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ReasonInput)
        sprint = sprints.sprint_abort(
            sprint=_open_sprint(self), actor=self.actor, now=self.now, **data
        )
        return Response(s.SprintSerializer(sprint).data)


class SprintDeadlineView(ProjectView):
    @extend_schema(
        operation_id="sprint_set_deadline",
        request=s.DeadlineInput,
        description="Admins: move (or clear) the open sprint's deadline.",
        responses={200: s.SprintSerializer, **WRITE_ERRORS},
    )
    def put(self, request: Request, slug: str) -> Response:
        data = self.valid(s.DeadlineInput)
        sprint = sprints.sprint_set_deadline(
            sprint=_open_sprint(self), actor=self.actor, now=self.now, **data
        )
        return Response(s.SprintSerializer(sprint).data)


class GoalAbortView(ProjectView):
    @extend_schema(
        operation_id="goal_abort",
        request=s.ReasonInput,
        description="Admins: the goal IN_PROGRESS → ABORTED.",
        responses={200: s.GoalSerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ReasonInput)
        goal = Goal.objects.filter(project=self.project, status="IN_PROGRESS").first()
        if goal is None:
            raise Http404("The project has no goal IN_PROGRESS.")
        goal = goals.goal_abort(goal=goal, actor=self.actor, now=self.now, **data)
        return Response(s.GoalSerializer(goal).data)


class ProjectPauseView(ProjectView):
    @extend_schema(
        operation_id="project_pause",
        request=s.ReasonInput,
        description="Admins: claims are refused (`paused`), heartbeats answer stop / exit 42.",
        responses={200: s.ProjectStateSerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ReasonInput)
        project = oversight.project_pause(
            project=self.project, actor=self.actor, now=self.now, **data
        )
        return Response(s.ProjectStateSerializer(project).data)


class ProjectResumeView(ProjectView):
    @extend_schema(
        operation_id="project_resume",
        request=None,
        description="Admins: lift the pause.",
        responses={200: s.ProjectStateSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        project = oversight.project_resume(project=self.project, actor=self.actor, now=self.now)
        return Response(s.ProjectStateSerializer(project).data)


class ConfigView(ProjectView):
    @extend_schema(
        operation_id="config_retrieve", responses={200: s.ConfigSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(self.config_data(config_of(self.project)))

    def config_data(self, config) -> dict:
        # The escalation webhook is for the project's admins only (docs/security.md).
        show = not isinstance(self.actor, Agent) and (
            human_role(self.actor, self.project) == Membership.Role.ADMIN
        )
        return s.ConfigSerializer(config, context={"show_webhook": show}).data

    @extend_schema(
        operation_id="config_update",
        request=s.ConfigInput,
        description="Admins: edit the seed 002 config (400 naming a field the rules refuse).",
        responses={200: s.ConfigSerializer, **errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, slug: str) -> Response:
        data = self.valid(s.ConfigInput)
        config = oversight.config_update(
            project=self.project, actor=self.actor, now=self.now, **data
        )
        return Response(self.config_data(config))


# -- records and agents --------------------------------------------------------------------------


class NoteView(ProjectView):
    @extend_schema(
        operation_id="notes_create",
        request=s.NoteInput,
        description="Members: a human note for a task, or for the project (seed 002 human_notes).",
        responses={201: s.HumanNoteSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.NoteInput)
        note = records.human_note_create(
            project=self.project, actor=self.actor, now=self.now, **data
        )
        return Response(s.HumanNoteSerializer(note).data, status=201)


class DiscoveryTriageView(ProjectView):
    @extend_schema(
        operation_id="discoveries_triage",
        request=s.TriageInput,
        description="Members defer or reject a discovery; admins convert it into a DRAFT task.",
        responses={200: s.DiscoverySerializer, **WRITE_ERRORS},
    )
    def post(self, request: Request, slug: str, disc_id: str) -> Response:
        data = dict(self.valid(s.TriageInput))
        discovery = Discovery.objects.filter(project=self.project, disc_id=disc_id).first()
        if discovery is None:
            raise Http404
        if "task" in data:
            data["task"] = dict(data["task"])
        discovery = oversight.discovery_triage(
            discovery=discovery, actor=self.actor, now=self.now, **data
        )
        return Response(s.DiscoverySerializer(discovery).data)


class _AgentEnabledView(ProjectView):
    enabled: bool

    def post(self, request: Request, slug: str, agent_id: str) -> Response:
        agent = Agent.objects.filter(project=self.project, agent_id=agent_id).first()
        if agent is None:
            raise Http404
        agent = agent_set_enabled(agent=agent, actor=self.actor, enabled=self.enabled, now=self.now)
        return Response(AgentSerializer(agent).data)


class AgentDisableView(_AgentEnabledView):
    enabled = False

    @extend_schema(
        operation_id="agents_disable",
        request=None,
        description="Admins: the agent's requests get 403 and what it held is taken back.",
        responses={200: AgentSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, agent_id: str) -> Response:
        return super().post(request, slug, agent_id)


class AgentEnableView(_AgentEnabledView):
    enabled = True

    @extend_schema(
        operation_id="agents_enable",
        request=None,
        description="Admins: a disabled agent may register and work again.",
        responses={200: AgentSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, agent_id: str) -> Response:
        return super().post(request, slug, agent_id)
