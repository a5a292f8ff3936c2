"""Serializers of the agent endpoints."""

from __future__ import annotations

from rest_framework import serializers

from agents.models import Agent, AgentKey
from boards import protocol as p
from boards.api.serializers import InputSerializer


class AgentSerializer(serializers.ModelSerializer):
    current_task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)

    class Meta:
        model = Agent
        fields = [
            "agent_id",
            "role",
            "status",
            "current_task",
            "lease_expires",
            "heartbeat",
            "terminal",
            "iterations_total",
            "context_percent",
            "enabled",
            "security_reviewer",
            "registered_at",
        ]
        read_only_fields = fields


class AgentKeySerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="agent_id", read_only=True)

    class Meta:
        model = AgentKey
        fields = ["prefix", "agent", "label", "created", "last_used_at", "revoked_at"]
        read_only_fields = fields


class IssuedKeySerializer(AgentKeySerializer):
    key = serializers.CharField(help_text="shown once; only its hash is stored")

    class Meta(AgentKeySerializer.Meta):
        fields = [*AgentKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class RegisterInput(InputSerializer):
    agent_id = serializers.CharField(
        required=False, max_length=64, help_text="must be the key's agent when given"
    )
    role = serializers.ChoiceField(choices=p.AGENT_ROLES, required=False)
    terminal = serializers.CharField(required=False, allow_blank=True, max_length=200)


class HeartbeatInput(InputSerializer):
    context_percent = serializers.IntegerField(
        min_value=0, max_value=100, required=False, allow_null=True
    )


class HeartbeatSerializer(serializers.Serializer):
    agent = AgentSerializer()
    task = serializers.CharField(allow_null=True)
    task_lease_expires = serializers.DateTimeField(allow_null=True)
    review_leases = serializers.DictField(child=serializers.DateTimeField())
    stop = serializers.CharField(
        allow_null=True, help_text="paused or checkpoint: stop now and exit 42"
    )
    exit = serializers.IntegerField(allow_null=True)


class AgentCreateInput(InputSerializer):
    role = serializers.ChoiceField(choices=p.AGENT_ROLES)
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=64)
    security_reviewer = serializers.BooleanField(required=False, default=False)
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)


class AgentCreatedSerializer(serializers.Serializer):
    agent = AgentSerializer()
    key = IssuedKeySerializer()


class KeyInput(InputSerializer):
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)
