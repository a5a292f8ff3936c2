"""What every input shares: a body with no unknown field (and the schema that says so), the
per-task limit field, the commit and key spellings, a reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from boards import protocol as p


class InputSerializer(serializers.Serializer):
    """A request body: a field it does not know is a 400 naming it, never silently dropped.

    DRF ignores unknown keys; for the agent protocol that would turn a misspelt `depends_on`
    or `questions` into an operation that "succeeded" without the data (SPEC §6: validation →
    400 naming the field).
    """

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(name) for name in data if name not in self.fields)
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class InputSerializerSchema(OpenApiSerializerExtension):
    """Say it in the OpenAPI schema too: request bodies take no other properties."""

    target_class = InputSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


def limit_field(name: str) -> serializers.IntegerField:
    """A per-task limit: within `protocol.TASK_LIMIT_BOUNDS`, null = the project's setting."""
    low, high = p.TASK_LIMIT_BOUNDS[name]
    return serializers.IntegerField(min_value=low, max_value=high, required=False, allow_null=True)


COMMIT = {"max_length": 64, "allow_blank": False}
KEY = {"max_length": 64, "allow_blank": False}


class ReasonInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)
