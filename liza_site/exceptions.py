"""One mapping from every exception a view can meet to SPEC §6's JSON error envelope.

`{"error": {"code", "message", "details"}}` for protocol refusals, validation errors, missing or
foreign objects and authentication failures alike; `details.exit` is the exit code an agent
takes for it (boards.errors.EXIT_CODES). The translation itself is `boards.errors`'s, shared with
the board's pages and the admin. Anything unexpected is still a 500, but tests fuzz every route
so that no input reaches one.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from boards.errors import Contention, Unavailable, as_protocol_error, exit_code


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "error": {
            "code": code,
            "message": message,
            "details": {**(details or {}), "exit": exit_code(code)},
        }
    }


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    error = as_protocol_error(exc)
    if error is None:
        return None
    headers: dict[str, str] = {}
    if isinstance(exc, exceptions.APIException):
        # DRF's own answer carries the headers that go with it (WWW-Authenticate on a 401,
        # Retry-After on a 429).
        drf_response = exception_handler(exc, context)
        if drf_response is not None:
            headers = {k: v for k, v in drf_response.items() if k != "Content-Type"}
    if isinstance(error, Unavailable | Contention):
        headers["Retry-After"] = str(error.RETRY_AFTER)
        # Nothing of the request stays: an Idempotency-Key's transaction (boards.api.base)
        # rolls back with its record, so the key's retry is applied anew.
        if transaction.get_connection().in_atomic_block:
            transaction.set_rollback(True)
    elif error.status_code == 429 and isinstance(error.details.get("retry_after"), int):
        headers["Retry-After"] = str(error.details["retry_after"])  # a limit, an agent in error
    return Response(error.as_envelope(), status=error.status_code, headers=headers)
