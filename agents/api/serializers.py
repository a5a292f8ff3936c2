"""Serializers of the agent endpoints."""

from __future__ import annotations

from rest_framework import serializers

from agents.models import Agent, AgentKey, Run, RunUsage
from boards.api.serializers.base import ReadOnlyModelSerializer


class RunSerializer(ReadOnlyModelSerializer):
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

    def get_duration(self, run: Run) -> float | None:
        return run.duration().total_seconds() if run.ended else None


class AgentSerializer(ReadOnlyModelSerializer):
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
            # When its session ended (`agent_leave`), null while registered: the original
            # Liza drops a departed agent from its registry, we keep the row and say so.
            "left_at",
            # Its registration's number (`Agent.generation`): the register answer's is the one
            # the process sends back on every request (`Liza-Generation`).
            "generation",
            "overloaded",
            "error_cleared_at",
        ]


# An API key as it is shown, never its hash: in the API's answer (with its agent) and in the admin.
KEY_FIELDS = ("prefix", "label", "created", "last_used_at", "revoked_at")


class AgentKeySerializer(ReadOnlyModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="agent_id", read_only=True)

    class Meta:
        model = AgentKey
        fields = ["agent", *KEY_FIELDS]


class IssuedKeySerializer(AgentKeySerializer):
    key = serializers.CharField(help_text="shown once; only its hash is stored")

    class Meta(AgentKeySerializer.Meta):
        fields = [*AgentKeySerializer.Meta.fields, "key"]


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


class RunUsageSerializer(ReadOnlyModelSerializer):
    """A run's usage for one model so far (issue 24)."""

    agent = serializers.SlugRelatedField(slug_field="agent_id", read_only=True)
    task = serializers.SlugRelatedField(slug_field="key", read_only=True, allow_null=True)
    cost_usd = serializers.DecimalField(max_digits=14, decimal_places=6, coerce_to_string=True)
    tokens = serializers.IntegerField(help_text="input + output + cache read + cache write")

    class Meta:
        model = RunUsage
        fields = [
            "run",
            "agent",
            "task",
            "model",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "tokens",
            "cost_usd",
            "recorded_at",
        ]


class BudgetStateSerializer(serializers.Serializer):
    """A budget, what has been spent against it and its state (issue 24)."""

    scope = serializers.CharField(source="budget.scope")
    subject = serializers.CharField(source="budget.subject")
    limit_usd = serializers.DecimalField(
        source="budget.limit_usd", max_digits=14, decimal_places=2, allow_null=True
    )
    limit_tokens = serializers.IntegerField(source="budget.limit_tokens", allow_null=True)
    spent_usd = serializers.DecimalField(source="spent.usd", max_digits=20, decimal_places=6)
    spent_tokens = serializers.IntegerField(source="spent.tokens")
    percent = serializers.IntegerField(help_text="of the further limit")
    state = serializers.ChoiceField(
        choices=["ok", "warning", "exhausted"], help_text="warning from 80 %, exhausted at 100 %"
    )
    updated_at = serializers.DateTimeField(source="budget.updated_at")
    updated_by = serializers.CharField(source="budget.updated_by")
