"""Serializers of the agent endpoints."""

from __future__ import annotations

from rest_framework import serializers

from agents.models import Agent, AgentKey, Run


class RunSerializer(serializers.ModelSerializer):
    """One spawn of an agent command by `liza supervise`."""

    agent = serializers.SlugRelatedField(slug_field="agent_id", read_only=True)
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    crashed = serializers.BooleanField(read_only=True)
    duration = serializers.SerializerMethodField(
        help_text="seconds it ran; null while it runs (the time since `started`)"
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "agent",
            "task",
            "started",
            "ended",
            "exit_code",
            "crashed",
            "progress",
            "state",
            "reason",
            "duration",
            "last_output_at",
            "restart_reason",
            "stopped_by",
            "command",
            "output",
        ]
        read_only_fields = fields

    def get_duration(self, run: Run) -> float | None:
        return run.duration().total_seconds() if run.ended else None


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
            "overloaded",
            "error_cleared_at",
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


class HeartbeatSerializer(serializers.Serializer):
    agent = AgentSerializer()
    task = serializers.CharField(allow_null=True)
    task_lease_expires = serializers.DateTimeField(allow_null=True)
    review_leases = serializers.DictField(child=serializers.DateTimeField())
    stop = serializers.CharField(
        allow_null=True, help_text="paused or checkpoint: stop now and exit 42"
    )
    exit = serializers.IntegerField(allow_null=True)


class AgentCreatedSerializer(serializers.Serializer):
    agent = AgentSerializer()
    key = IssuedKeySerializer()
