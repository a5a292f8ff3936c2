"""The `Liza-Generation` request header (agents.client.contract.GENERATION_HEADER): which
registration of its agent the request's process belongs to, as the register answer said it.

Read by every project view (`ProjectView.generation`, the hot path's included, whose stand-in
request carries the same headers) and handed to the operation runner, which refuses a
superseded session (`boards.operations.base`); described once for every operation of the
OpenAPI schema (`ProjectSchema`)."""

from __future__ import annotations

from collections.abc import Mapping

from agents.client.contract import GENERATION_HEADER
from boards.errors import ProtocolValidationError

# Up to 18 digits: any bigint a registration count reaches, never one that overflows it.
_MOST_DIGITS = 18

GENERATION_PARAMETER = {
    "in": "header",
    "name": GENERATION_HEADER,
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": 10**_MOST_DIGITS - 1},
    "description": "an agent's process: the generation its registration answered; a "
    "superseded session's (its id registered again since) is refused 409 `not_registered` "
    "(exit 8). Without it, the request is served as before.",
}


def claimed_generation(headers: Mapping[str, str]) -> int | None:
    """The generation a request's process says it registered as, or None when it sends none
    (older clients, people's tools: served as before); not a positive integer: 400 naming it."""
    value = headers.get(GENERATION_HEADER)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit() and len(value) <= _MOST_DIGITS and int(value)):
        raise ProtocolValidationError(GENERATION_HEADER, "a positive integer")
    return int(value)
