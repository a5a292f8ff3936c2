"""The base of the API's answers over a model."""

from __future__ import annotations

import copy
from typing import Any

from rest_framework import serializers

# Each answer's fields as its model gave them, built once per class (`get_fields`).
_BUILT: dict[type, dict[str, serializers.Field]] = {}


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

    def get_fields(self) -> dict[str, serializers.Field]:
        # ModelSerializer reads the model's fields and builds one of its own for each on every
        # instance — 1.5 of the 2.3 ms a task's answer took, a claim-next's (bench/README.md);
        # they depend on the class alone (its Meta and declared fields). So they are built once
        # and each instance gets copies, as DRF gives each its declared fields (a copy is
        # unbound: each instance binds its own).
        built = _BUILT.get(type(self))
        if built is None:
            built = _BUILT[type(self)] = super().get_fields()
        return copy.deepcopy(built)
