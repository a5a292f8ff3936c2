"""An operation's input read off its contract entry (issue 22: one contract per operation).

The contract (`agents.client.contract`) says each body parameter once — its JSON type, whether
it is required, its enum, length and range — and the client, `liza` and the MCP tools are
generated from it. The server's input is generated from the same entry: `contract_input(name)`
is an `InputSerializer` with one field a body parameter. An input that needs more than the
contract can say (a pattern, a date, a nested shape, a cross-field check) subclasses it and
declares only that; an operation with no input of its own gets the generated one
(`boards.operations.base.Operation`).

Rules of the generated fields, as every hand-written input had them: a required string may not
be blank, an optional one may (absent and empty mean the same to the services); `nullable`
admits null; an array's items are of its `items` type.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from rest_framework import serializers

from agents.client.contract import BY_NAME
from agents.client.contract.base import Param
from boards.operations.inputs.base import InputSerializer


def _scalar(kind: str, **options: Any) -> serializers.Field:
    if kind == "string":
        return serializers.CharField(**options)
    if kind == "integer":
        return serializers.IntegerField(**options)
    if kind == "number":
        return serializers.FloatField(**options)
    if kind == "boolean":
        return serializers.BooleanField(**options)
    if kind == "object":
        return serializers.DictField(**options)
    return serializers.JSONField(**options)  # "any"


def _given(**options: Any) -> dict[str, Any]:
    """The options that say something: DRF's defaults are left out (None, False, "")."""
    return {k: v for k, v in options.items() if v not in (None, False, "")}


def contract_field(param: Param) -> serializers.Field:
    """The serializer field of one body parameter."""
    options = _given(help_text=param.help, allow_null=param.nullable)
    if not param.required:
        options["required"] = False
        if param.default is not None:
            options["default"] = param.default
    if param.enum:
        return serializers.ChoiceField(choices=list(param.enum), **options)
    if param.type == "array":
        child = _scalar(param.items, **_given(max_length=param.item_max_length))
        limits = _given(min_length=param.min_items, max_length=param.max_items)
        return serializers.ListField(child=child, **limits, **options)
    if param.type == "string":
        least = param.min_length if param.min_length is not None else int(param.required)
        options |= _given(allow_blank=least == 0, max_length=param.max_length)
        if param.format == "date-time":
            options.pop("max_length", None)
            options.pop("allow_blank", None)
            return serializers.DateTimeField(**options)
        if param.format == "uri":
            return serializers.URLField(**options)
    if param.type in ("integer", "number"):
        options |= _given(min_value=param.minimum, max_value=param.maximum)
    return _scalar(param.type, **options)


@cache
def contract_input(name: str) -> type[InputSerializer]:
    """The input of operation `name`: a field a body parameter of its contract entry."""
    endpoint = BY_NAME[name]
    fields = {p.name: contract_field(p) for p in endpoint.params if p.where == "body"}
    title = "".join(part.title() for part in name.split("_")) + "Input"
    return type(title, (InputSerializer,), fields)


def contract_body_input(name: str) -> type[InputSerializer] | None:
    """`contract_input(name)` when operation `name` is in the contract and takes a body."""
    endpoint = BY_NAME.get(name)
    if endpoint is None or not any(p.where == "body" for p in endpoint.params):
        return None
    return contract_input(name)
