"""The watcher's alerts and the circuit breaker's state and checks."""

from __future__ import annotations

from rest_framework import serializers

from boards.api.serializers.base import ReadOnlyModelSerializer
from boards.coordination.models.records import Alert


class AlertSerializer(ReadOnlyModelSerializer):
    """A watcher alert (SPEC §9); `severity` is its level, `first_seen` when it was raised."""

    severity = serializers.CharField(source="level", read_only=True)
    first_seen = serializers.DateTimeField(source="created", read_only=True)
    task = serializers.SlugRelatedField(slug_field="key", read_only=True)
    acknowledged_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    open = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = [
            "id",
            "type",
            "subject",
            "severity",
            "message",
            "task",
            "agent_id",
            "first_seen",
            "last_seen",
            "count",
            "escalated_at",
            "resolved_at",
            "open",
            "acknowledged_by",
            "acknowledged_at",
        ]

    def get_open(self, alert: Alert) -> bool:
        return alert.resolved_at is None


def _detail(name: str) -> serializers.CharField:
    return serializers.CharField(source=f"details.{name}", read_only=True, allow_null=True)


class BreakerCheckSerializer(serializers.Serializer):
    """One entry of seed 002's `circuit_breaker.history` (the report is on the breaker)."""

    timestamp = serializers.DateTimeField()
    pattern = serializers.SerializerMethodField()
    result = serializers.CharField()
    # The rest is the check's `details` entry of that name, as text; null when it has none.
    severity = _detail("severity")
    resolution = _detail("resolution")
    resolved_at = _detail("resolved_at")
    resolved_by = _detail("resolved_by")

    def get_pattern(self, check) -> str | None:
        return check.pattern or None


class BreakerSerializer(serializers.Serializer):
    """The circuit breaker (seed 002 `circuit_breaker`): status, the current trigger, the
    report of the current trip (else of the last one, resolved) and the history."""

    status = serializers.CharField()
    last_check = serializers.DateTimeField(allow_null=True)
    current_trigger = serializers.JSONField(allow_null=True)
    report = serializers.JSONField(allow_null=True)
    history = BreakerCheckSerializer(many=True)
