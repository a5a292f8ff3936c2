"""The contract's vocabulary: the agent roles, a parameter (`Param`), an operation (`Endpoint`)
and the short names the tables are written with (`P`, `E`, `KEY`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PLANNER, CODER, REVIEWER = "planner", "coder", "code_reviewer"
ROLES: tuple[str, ...] = (PLANNER, CODER, REVIEWER)
EVERY_ROLE = frozenset(ROLES)
PLANNER_ONLY, CODER_ONLY, REVIEWER_ONLY = (
    frozenset({PLANNER}),
    frozenset({CODER}),
    frozenset({REVIEWER}),
)

# The errors a write answers unless its entry says otherwise.
WRITE_ERRORS = (400, 401, 403, 404, 409)

# The request header in which an agent's process sends the generation its registration answered
# (`agents_register`'s `generation`), on every request after it: the server refuses a request
# of a superseded session (its id registered again since) `not_registered`, exit 8. Optional:
# a request without it is served as before (docs/decisions.md "Fencing a stale session").
GENERATION_HEADER = "Liza-Generation"


@dataclass(frozen=True)
class Param:
    name: str  # the JSON field, query parameter or path segment (and the client's keyword)
    type: str  # JSON Schema type: string, integer, number, boolean, array, object; any
    where: str = "body"  # body, query or path
    required: bool = False
    enum: tuple[str, ...] = ()
    items: str = "string"  # the element type of an array
    max_items: int | None = None
    max_length: int | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    nullable: bool = False
    help: str = ""
    # What JSON Schema says beyond type and bounds, and the server's input is generated from
    # (boards.operations.inputs.contract): a string's least length (1: not blank; 0: a required
    # string may be empty), its format ("date-time", "uri"), an array's least length and its
    # strings' greatest, the value an absent parameter takes.
    min_length: int | None = None
    format: str = ""
    min_items: int | None = None
    item_max_length: int | None = None
    default: Any = None
    # The agent surfaces: offered as a tool parameter and a `liza` option (False: the
    # supervisor's or the client's own, e.g. `progress_at`, `change_summary`).
    tool: bool = True
    flag: str = ""  # the `liza` option when it is not --<name>
    argument: bool = False  # a positional `liza` argument (path parameters always are)

    def schema(self) -> dict[str, Any]:
        """The parameter as a JSON Schema property (the MCP tools' input schemas)."""
        prop: dict[str, Any] = {} if self.type == "any" else {"type": self.type}
        if self.help:
            prop["description"] = self.help
        if self.enum:
            prop["enum"] = list(self.enum)
        if self.type == "array":
            prop["items"] = {"type": self.items}
        return prop

    def bounds(self) -> dict[str, Any]:
        """What the OpenAPI schema must say of it (tests/contract/test_contract.py)."""
        said: dict[str, Any] = {"type": self.type}
        if self.enum:
            said["enum"] = tuple(self.enum)
        if self.type == "array":
            said["items"] = self.items
        for name in ("max_items", "max_length", "minimum", "maximum"):
            if getattr(self, name) is not None:
                said[name] = getattr(self, name)
        if self.nullable:
            said["nullable"] = True
        return said


@dataclass(frozen=True)
class Endpoint:
    name: str  # the server's declared operation (boards.operations), else its view's name
    method: str  # GET, POST, PUT, PATCH
    path: str  # below /api/v1/projects/{slug}/, path parameters in braces
    route: str  # the server's URL name
    operation_id: str  # OpenAPI's
    result: str  # what it answers: "task" is {"task": …}, a list is plural
    status: int = 200
    errors: tuple[int, ...] = WRITE_ERRORS
    params: tuple[Param, ...] = ()
    description: str = ""  # OpenAPI's; empty: the service's docstring (server side)
    # -- the client
    client: str = ""  # the agents.client.http.Client method ("": none)
    tool: str = ""  # the MCP tool, when `roles` is not empty (default: the client method)
    roles: frozenset[str] = frozenset()  # the agent roles offered it as a tool
    cli: tuple[str, ...] = ()  # the `liza` subcommand path
    help: str = ""  # one line for an agent (the tool's and the subcommand's help)
    tool_requires: tuple[str, ...] = ()  # optional on the server, asked of an agent's tool

    @property
    def tool_name(self) -> str:
        return self.tool or self.client

    def where(self, place: str) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.where == place)

    def url(self, **names: Any) -> str:
        """The path with its parameters filled in."""
        return self.path.format(**names)


P, E = Param, Endpoint
# Parameters many operations take, named once so that their bounds cannot drift apart.
KEY = P("key", "string", where="path", required=True, help="the task key")
AGENT_ID = P("agent_id", "string", where="path", required=True)
RUN_ID = P("run_id", "integer", where="path", required=True)
REASON = P("reason", "string", required=True, max_length=2000, help="why")
