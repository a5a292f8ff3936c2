"""The base of the API's answers over a model."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


# An answer: every field of `Meta.fields` read-only (the schema says so), as if
# `read_only_fields = fields`. The API writes through its input serializers
# (boards.operations.inputs), never through an answer. (A comment, not a docstring: the schema
# would show a docstring as the description of every answer without one of its own.)
class ReadOnlyModelSerializer(serializers.ModelSerializer):
    def get_extra_kwargs(self) -> dict[str, Any]:
        extra = super().get_extra_kwargs()
        for name in self.Meta.fields:
            extra[name] = {**extra.get(name, {}), "read_only": True}
        return extra
