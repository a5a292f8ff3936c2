"""Records (discoveries, anomalies, activity, notes) and human oversight of tasks: override block,
approval, limits, decisions, deadlines.
"""

from __future__ import annotations

import json

from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.base import InputSerializer, ReasonInput, limit_field


class OverrideBlockInput(ReasonInput):
    questions = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        required=False,
        max_length=p.MAX_BLOCKED_QUESTIONS,
    )


class DiscoveryInput(InputSerializer):
    description = serializers.CharField(max_length=5000)
    severity = serializers.ChoiceField(choices=p.DISCOVERY_SEVERITIES)
    urgency = serializers.ChoiceField(
        choices=p.DISCOVERY_URGENCIES, required=False, default="deferred"
    )
    during = serializers.CharField(required=False, allow_blank=True, max_length=64)
    recommendation = serializers.CharField(required=False, allow_blank=True, max_length=5000)


ANOMALY_DETAILS_MAX_CHARS = 10_000


def _holds_null_character(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_null_character(k) or _holds_null_character(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_null_character(v) for v in value)
    return False


class AnomalyInput(InputSerializer):
    type = serializers.ChoiceField(choices=p.ANOMALY_TYPES)
    details = serializers.DictField(help_text="the type's required fields (seed 002)")
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)

    def validate_details(self, details: dict) -> dict:
        # Stored as jsonb, and PostgreSQL refuses NUL in any jsonb string, key or value.
        if _holds_null_character(details):
            raise serializers.ValidationError("null characters are not allowed")
        if len(json.dumps(details)) > ANOMALY_DETAILS_MAX_CHARS:
            raise serializers.ValidationError(
                f"at most {ANOMALY_DETAILS_MAX_CHARS} characters of JSON"
            )
        return details


class LogInput(InputSerializer):
    action = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
    detail = serializers.CharField(max_length=500)
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)


class ApprovalInput(InputSerializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class LimitsInput(InputSerializer):
    """Per-task overrides; null puts a limit back to the project's setting."""

    priority = serializers.IntegerField(
        min_value=p.PRIORITY_RANGE[0], max_value=p.PRIORITY_RANGE[1], required=False
    )
    max_iterations = limit_field("max_iterations")
    max_review_cycles = limit_field("max_review_cycles")
    lease_duration_override = limit_field("lease_duration_override")
    needs_human_approval = serializers.BooleanField(required=False)


class DecisionInput(InputSerializer):
    decision = serializers.CharField(max_length=2000, help_text="recorded in the retrospective")


class DeadlineInput(InputSerializer):
    deadline = serializers.DateTimeField(allow_null=True, help_text="in the future; null clears")


class NoteInput(InputSerializer):
    message = serializers.CharField(max_length=5000)
    task = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="omit for a project note"
    )
