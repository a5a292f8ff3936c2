"""The contract (agents/client/contract/) and the OpenAPI schema the server serves say the same:
every contract operation is in the schema with its method, path, operation id, parameters (type,
bounds, required), success status and errors, and every path and method of the schema is in
the contract. The server's routes are generated from the contract, its serializers validate:
this is what holds the two together."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import resolve
from drf_spectacular.generators import SchemaGenerator

from agents.client.contract import CONTRACT, GENERATION_HEADER, Endpoint

PREFIX = "/api/v1/projects/{slug}/"
# Answers every operation may give, added by boards.api.base.ProjectSchema (not per operation).
EVERYWHERE = {"429", "415"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            schema = {**components[name], **{k: v for k, v in schema.items() if k != "$ref"}}
        elif "allOf" in schema and len(schema["allOf"]) == 1:
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            schema = {**schema["allOf"][0], **rest}
        else:
            return schema


def _bounds(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI property in the contract's words (`Param.bounds`)."""
    schema = _resolve(schema, components)
    said: dict[str, Any] = {}
    if "oneOf" in schema:
        # A nullable choice is its choices or null (drf-spectacular's NullEnum): the choices.
        branches = [_resolve(s, components) for s in schema["oneOf"]]
        branches = [b for b in branches if b.get("enum") != [None]]
        if len(branches) == 1:
            schema = {**branches[0], "nullable": schema.get("nullable", False)}
    if "oneOf" in schema:
        types = {_resolve(s, components).get("type") for s in schema["oneOf"]}
        said["type"] = types.pop() if len(types) == 1 else "any"
    else:
        said["type"] = schema.get("type", "any")
    if "enum" in schema:
        said["enum"] = tuple(v for v in schema["enum"] if v not in ("", None))
    if said["type"] == "array":
        said["items"] = _resolve(schema.get("items", {}), components).get("type", "any")
        if "maxItems" in schema:
            said["max_items"] = schema["maxItems"]
    for ours, theirs in (
        ("max_length", "maxLength"),
        ("minimum", "minimum"),
        ("maximum", "maximum"),
    ):
        if theirs in schema:
            said[ours] = schema[theirs]
    if schema.get("nullable"):
        said["nullable"] = True
    return said


def _schema_params(operation: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """{(where, name): (required, bounds)} of an OpenAPI operation, the project's slug and the
    `Liza-Generation` header (every operation's, described once: boards/api/generation.py)
    aside."""
    params = {
        (p["in"], p["name"]): (p.get("required", False), _bounds(p["schema"], components))
        for p in operation.get("parameters", [])
        if p["name"] not in ("slug", GENERATION_HEADER)
    }
    body = operation.get("requestBody")
    if body:
        node = _resolve(body["content"]["application/json"]["schema"], components)
        required = set(node.get("required", []))
        for name, prop in node.get("properties", {}).items():
            params["body", name] = (name in required, _bounds(prop, components))
    return params


def _operation(openapi: dict[str, Any], endpoint: Endpoint) -> dict[str, Any]:
    methods = openapi["paths"].get(PREFIX + endpoint.path, {})
    assert endpoint.method.lower() in methods, f"{endpoint.method} {endpoint.path} not served"
    return methods[endpoint.method.lower()]


@pytest.mark.parametrize("endpoint", CONTRACT, ids=lambda e: e.name)
def test_every_contract_operation_is_served_as_declared(openapi, endpoint):
    operation = _operation(openapi, endpoint)
    components = openapi["components"]["schemas"]

    assert operation["operationId"] == endpoint.operation_id
    assert {"in": "header", "name": GENERATION_HEADER} in [
        {"in": p["in"], "name": p["name"]} for p in operation.get("parameters", [])
    ]
    declared = {(p.where, p.name): (p.required, p.bounds()) for p in endpoint.params}
    assert declared == _schema_params(operation, components)
    codes = sorted(int(c) for c in operation["responses"] if c not in EVERYWHERE)
    assert codes == sorted({endpoint.status, *endpoint.errors})
    if endpoint.description:
        assert operation["description"] == endpoint.description


def test_every_path_and_method_of_the_schema_is_in_the_contract(openapi):
    served = {
        (method.upper(), path.removeprefix(PREFIX))
        for path, methods in openapi["paths"].items()
        for method in methods
    }
    assert all(path.startswith(PREFIX) for path in openapi["paths"])
    assert served == {(e.method, e.path) for e in CONTRACT}


def test_the_contract_names_each_operation_route_and_client_method_once():
    for attribute in ("name", "operation_id"):
        values = [getattr(e, attribute) for e in CONTRACT]
        assert len(values) == len(set(values)), attribute
    clients = [e.client for e in CONTRACT if e.client]
    assert len(clients) == len(set(clients))
    # One URL name a path, one path a URL name.
    assert len({(e.path, e.route) for e in CONTRACT}) == len({e.path for e in CONTRACT})
    assert len({e.route for e in CONTRACT}) == len({e.path for e in CONTRACT})


def test_every_path_resolves_to_its_own_route():
    """The contract is assembled from its tables (agents/client/contract/): whatever their order,
    a literal path (`tasks/claim-next`, `agents/register`) is not taken by a parameter's."""
    for endpoint in CONTRACT:
        names = {p.name: 1 if p.type == "integer" else "x-1" for p in endpoint.where("path")}
        url = "/api/v1/projects/p/" + endpoint.url(**names)
        assert resolve(url).url_name == endpoint.route, (endpoint.name, url)
