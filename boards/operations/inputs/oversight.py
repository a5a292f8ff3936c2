"""Records (discoveries, anomalies, activity, notes) and human oversight of tasks: override block,
approval, limits, decisions, deadlines.
"""

from __future__ import annotations

import json

from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.contract import contract_input

ANOMALY_DETAILS_MAX_CHARS = 10_000


def _holds_null_character(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_null_character(k) or _holds_null_character(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_null_character(v) for v in value)
    return False


class AnomalyInput(contract_input("anomaly_create")):
    def validate_details(self, details: dict) -> dict:
        # Stored as jsonb, and PostgreSQL refuses NUL in any jsonb string, key or value.
        if _holds_null_character(details):
            raise serializers.ValidationError("null characters are not allowed")
        if len(json.dumps(details)) > ANOMALY_DETAILS_MAX_CHARS:
            raise serializers.ValidationError(
                f"at most {ANOMALY_DETAILS_MAX_CHARS} characters of JSON"
            )
        return details


class LogInput(contract_input("activity_log")):
    action = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
