"""Agent endpoints: registration, heartbeats, handoffs, and agent/key management for admins."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents import services
from agents.api import serializers as s
from agents.models import Agent, AgentKey
from boards.api.serializers import HandoffInput, HandoffSerializer
from boards.api.views import READ_ERRORS, ProjectView, errors
from boards.services.common import require_role


class RegisterView(ProjectView):
    @extend_schema(
        operation_id="agents_register",
        request=s.RegisterInput,
        description="Register the key's agent (seed 000 identity protocol). An id held by a "
        "live lease is a 409 `collision`: the process must exit.",
        responses={200: s.AgentSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.RegisterInput)
        agent = self.agent
        if data.get("agent_id") and data["agent_id"] != agent.agent_id:
            raise serializers.ValidationError({"agent_id": [f"this key is {agent.agent_id}'s"]})
        if data.get("role") and data["role"] != agent.role:
            raise serializers.ValidationError({"role": [f"{agent.agent_id} is a {agent.role}"]})
        agent = services.agent_register(
            project=self.project,
            agent_id=agent.agent_id,
            role=agent.role,
            now=self.now,
            terminal=data.get("terminal", ""),
        )
        return Response(s.AgentSerializer(agent).data)


class HeartbeatView(ProjectView):
    @extend_schema(
        operation_id="agents_heartbeat",
        request=s.HeartbeatInput,
        description="Extend the agent lease and the task and review leases it holds. "
        "`stop` tells a paused or checkpointed agent to exit 42; a lost task lease is 409 "
        "`lease_lost`.",
        responses={200: s.HeartbeatSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.valid(s.HeartbeatInput)
        result = services.agent_heartbeat(
            agent=self.agent, now=self.now, context_percent=data.get("context_percent")
        )
        task = result.task if result.task is not None and result.task.status == "CLAIMED" else None
        body = {
            "agent": result.agent,
            "task": task.key if task else None,
            "task_lease_expires": task.lease_expires if task else None,
            "review_leases": {
                r.task.key: r.lease_expires for r in result.reviews if r.lease_expires
            },
            "stop": result.stop,
            "exit": 42 if result.stop else None,
        }
        return Response(s.HeartbeatSerializer(body).data)


class HandoffView(ProjectView):
    @extend_schema(
        operation_id="tasks_handoff",
        request=HandoffInput,
        description="Context exhaustion: write handoff notes, set handoff_pending; "
        "the agent goes to HANDOFF and exits 42.",
        responses={201: HandoffSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        data = self.valid(HandoffInput)
        handoff = services.agent_handoff(
            agent=self.agent, task=self.task(key), now=self.now, **data
        )
        return Response(HandoffSerializer(handoff).data, status=201)


class HandoffPickupView(ProjectView):
    @extend_schema(
        operation_id="tasks_handoff_pickup",
        request=None,
        description="The next session reads the handoff and clears handoff_pending.",
        responses={200: HandoffSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request: Request, slug: str, key: str) -> Response:
        handoff = services.agent_handoff_pickup(agent=self.agent, task=self.task(key), now=self.now)
        if handoff is None:
            raise Http404
        return Response(HandoffSerializer(handoff).data)


class AgentListView(ProjectView):
    @extend_schema(
        operation_id="agents_list", responses={200: s.AgentSerializer(many=True), **READ_ERRORS}
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = Agent.objects.filter(project=self.project).select_related("current_task")
        return Response(s.AgentSerializer(rows, many=True).data)

    @extend_schema(
        operation_id="agents_create",
        request=s.AgentCreateInput,
        description="Admins: create an agent (next free id by role) and its first key, shown once.",
        responses={201: s.AgentCreatedSerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = dict(self.valid(s.AgentCreateInput))
        label = data.pop("label", "")
        agent = services.agent_create(project=self.project, actor=self.actor, now=self.now, **data)
        key, plain = services.agent_key_issue(agent=agent, now=self.now, label=label)
        key.key = plain
        body = {"agent": agent, "key": key}
        return Response(s.AgentCreatedSerializer(body).data, status=201)


def _agent_of(view: ProjectView, agent_id: str) -> Agent:
    agent = Agent.objects.filter(project=view.project, agent_id=agent_id).first()
    if agent is None:
        raise Http404
    return agent


class AgentDetailView(ProjectView):
    @extend_schema(
        operation_id="agents_retrieve", responses={200: s.AgentSerializer, **READ_ERRORS}
    )
    def get(self, request: Request, slug: str, agent_id: str) -> Response:
        return Response(s.AgentSerializer(_agent_of(self, agent_id)).data)


class AgentKeysView(ProjectView):
    @extend_schema(
        operation_id="agent_keys_list",
        responses={200: s.AgentKeySerializer(many=True), **errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, agent_id: str) -> Response:
        require_role(self.actor, self.project, agent_roles=())
        agent = _agent_of(self, agent_id)
        return Response(s.AgentKeySerializer(agent.keys.all(), many=True).data)

    @extend_schema(
        operation_id="agent_keys_issue",
        request=s.KeyInput,
        responses={201: s.IssuedKeySerializer, **errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, slug: str, agent_id: str) -> Response:
        require_role(self.actor, self.project, agent_roles=())
        data = self.valid(s.KeyInput)
        key, plain = services.agent_key_issue(
            agent=_agent_of(self, agent_id), now=self.now, label=data.get("label", "")
        )
        key.key = plain
        return Response(s.IssuedKeySerializer(key).data, status=201)


class AgentKeyRevokeView(ProjectView):
    @extend_schema(
        operation_id="agent_keys_revoke",
        request=None,
        responses={200: s.AgentKeySerializer, **errors(401, 403, 404)},
    )
    def post(self, request: Request, slug: str, prefix: str) -> Response:
        require_role(self.actor, self.project, agent_roles=())
        key = AgentKey.objects.filter(project=self.project, prefix=prefix).first()
        if key is None:
            raise Http404
        key = services.agent_key_revoke(key=key, now=self.now)
        return Response(s.AgentKeySerializer(key).data)
