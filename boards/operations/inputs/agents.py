"""Agents and their keys: registration, heartbeats, availability, creation, keys; the event
query."""

from __future__ import annotations

from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.base import InputSerializer


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
    # Issue 24: the supervised run's last progress (output, a commit), as its supervisor saw it.
    progress_at = serializers.DateTimeField(required=False, allow_null=True)


class AgentCreateInput(InputSerializer):
    role = serializers.ChoiceField(choices=p.AGENT_ROLES)
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=64)
    security_reviewer = serializers.BooleanField(required=False, default=False)
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)


class EventQueryInput(serializers.Serializer):
    """The event list's query parameters (`limit` is clamped to 1–1000 by the view)."""

    task = serializers.CharField(required=False, allow_blank=True, max_length=64)
    after = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**62)
    limit = serializers.IntegerField(
        required=False, default=200, min_value=-(2**62), max_value=2**62
    )
