"""The exit codes of an agent process, and the error envelope that carries one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# What an agent process does with an answer (seed 000 "Exit Codes", SPEC §13): the server's one
# table (boards.errors `Exit` is built from it), and the client's for what the server cannot say.
EXIT: dict[str, int] = {
    "ok": 0,
    "usage": 2,  # the CLI was called wrongly (never sent)
    "refused": 3,  # validation, permission, authentication: fix the call, do not retry as is
    "conflict": 4,  # invalid transition or a lost race: read the board again
    "not_found": 5,  # no such object (or another tenant's)
    "collision": 6,  # the agent id is held by a live lease: the process must exit
    "unreachable": 7,  # the server did not answer (or answered 5xx): retry later
    # The agent's session ended (it left: `liza leave`, its supervisor stopping) and the id has
    # not registered since: the process exits; only a new registration starts a session.
    "not_registered": 8,
    "wait": 11,  # an enforced limit holds (WIP, max_concurrent): ask again after Retry-After
    "budget": 14,  # a budget is spent: nothing more until an admin raises it
    "stop": 42,  # lease lost, paused, checkpoint, aborted: stop and restart (seed 000)
}

# The error codes after which the same request may be sent again as it is (with its
# Idempotency-Key): the server wrote nothing — its database away (`unavailable`, 503) or the
# rows busy with another request (`contention`, 409: a deadlock it lost, a lock timeout). The
# client sends them again itself, as it does a 503 (agents.client.http).
RETRYABLE: frozenset[str] = frozenset({"unavailable", "contention"})


def error_envelope(
    code: str, message: str, details: Mapping[str, Any], exit: int
) -> dict[str, Any]:
    """Every refusal's JSON body (SPEC §6): its code, a sentence and its details, which carry
    the exit code an agent process takes for it (the server writes it, the client reads it)."""
    return {"error": {"code": code, "message": message, "details": {**details, "exit": exit}}}
