"""The one error hierarchy of Liza Board (STYLE.md "API", SPEC §6 and §13 "Exit codes").

Every refusal is a `ProtocolError`: a code, an HTTP status and the exit code an agent process
takes for it, from one table (`EXIT_CODES`). Services raise only these. Everything else a caller
can meet (Django's `ValidationError`, `PermissionDenied`, `Http404`, DRF's exceptions) is turned
into one by `as_protocol_error`, once, so the JSON envelope (liza_site.exceptions), the HTML
message (boards.web) and the admin message (boards.admin) all say the same thing — and the
`liza` CLI exits with the same number the envelope's `details.exit` carries.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404

from agents.client.contract import EXIT, error_envelope

# What an agent process does with an answer (seed 000 "Exit Codes", SPEC §13): the contract's one
# table (agents.client.contract.EXIT, which the client reads too), as Exit.REFUSED, Exit.STOP …
Exit = IntEnum("Exit", {name.upper(): code for name, code in EXIT.items()})


# Protocol error code → exit code. The API puts it in every error's `details.exit`.
EXIT_CODES: dict[str, int] = {
    "validation_error": Exit.REFUSED,
    "permission_denied": Exit.REFUSED,
    "not_authenticated": Exit.REFUSED,
    "authentication_failed": Exit.REFUSED,
    "throttled": Exit.UNREACHABLE,
    "unsupported_media_type": Exit.REFUSED,
    "method_not_allowed": Exit.REFUSED,
    "parse_error": Exit.REFUSED,
    "bad_request": Exit.REFUSED,
    "invalid_transition": Exit.CONFLICT,
    "conflict": Exit.CONFLICT,
    "not_found": Exit.NOT_FOUND,
    "collision": Exit.COLLISION,
    "not_registered": Exit.NOT_REGISTERED,
    "lease_lost": Exit.STOP,
    "paused": Exit.STOP,
    "checkpoint": Exit.STOP,
    "aborted": Exit.STOP,
    "server_error": Exit.UNREACHABLE,
    "unavailable": Exit.UNREACHABLE,
    # The rows were busy with another request (a deadlock, a lost serialization race, a lock
    # or statement timeout): nothing was written, the same request may be sent again.
    "contention": Exit.UNREACHABLE,
    "idempotency_key_reused": Exit.REFUSED,
    # The agent itself may take no work now (in error, overloaded): wait and ask again.
    "agent_unavailable": Exit.UNREACHABLE,
    "limit_reached": Exit.WAIT,
    "budget_exhausted": Exit.BUDGET,
}


def exit_code(code: str) -> int:
    return int(EXIT_CODES.get(code, Exit.REFUSED))


class ProtocolError(Exception):
    """A refusal, carried to the caller as `{"error": {"code", "message", "details"}}`."""

    code = "error"
    status_code = 409

    def __init__(
        self,
        code: str | None = None,
        message: str = "",
        details: dict[str, Any] | None = None,
        *,
        status_code: int | None = None,
    ) -> None:
        if code is not None:
            self.code = code
        super().__init__(message)
        self.message = message
        self.details = dict(details or {})
        if status_code is not None:
            self.status_code = status_code

    @property
    def exit(self) -> int:
        return exit_code(self.code)

    def as_envelope(self) -> dict[str, Any]:
        return error_envelope(self.code, self.message, self.details, self.exit)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidTransition(ProtocolError):
    code = "invalid_transition"

    def __init__(
        self, *, from_status: str, to_status: str, allowed: list[str], message: str = ""
    ) -> None:
        super().__init__(
            None,
            message or f"Transition {from_status} → {to_status} is not allowed.",
            {"from": from_status, "to": to_status, "allowed": allowed},
        )
        self.from_status = from_status
        self.to_status = to_status
        self.allowed = allowed


class IdempotencyKeyReused(ProtocolError):
    """An `Idempotency-Key` first sent with another request: replaying its answer would lie."""

    code = "idempotency_key_reused"
    status_code = 422


class Conflict(ProtocolError):
    """A lost race or a precondition on other rows that no longer holds."""

    code = "conflict"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class Collision(ProtocolError):
    """An agent id held by a live lease (seed 000 identity protocol): the process exits."""

    code = "collision"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class NotRegistered(ProtocolError):
    """The agent left (`agent_leave`) and has not registered since: the original Liza deleted
    its registry entry, so a late heartbeat finds no session to extend (seed 000 "HANDOFF →
    (deregistered)"). 409, exit 8: the process exits; a new registration starts a new one."""

    code = "not_registered"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        # As lease_lost: the instruction is the refusal's meaning, carried with it.
        super().__init__(None, message, {**(details or {}), "exit": int(Exit.NOT_REGISTERED)})


class LeaseLost(ProtocolError):
    """The work was taken out of the caller's hands: the agent must exit 42 (seed 000)."""

    code = "lease_lost"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        # The instruction is the refusal's meaning: it travels with it, not only on the wire.
        super().__init__(None, message, {**(details or {}), "exit": int(Exit.STOP)})


class StopWork(ProtocolError):
    """Project paused, sprint at CHECKPOINT, or sprint/goal aborted: agents exit 42."""

    CODES = ("paused", "checkpoint", "aborted")

    def __init__(self, code: str, message: str) -> None:
        assert code in self.CODES
        super().__init__(code, message, {"exit": int(Exit.STOP)})


class AgentUnavailable(ProtocolError):
    """Seed 003 availability: the agent is in error or overloaded, so it gets no new work now.
    429 and exit 7 (retry later, after `retry_after` seconds): not 42, which would make its
    supervisor restart it into the same state, nor 4, which says the board changed."""

    code = "agent_unavailable"
    status_code = 429

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class Throttled(ProtocolError):
    """Over a per-agent limit of the protocol (e.g. anomalies a minute): 429 with Retry-After,
    exit 7, like the API's own rate limits."""

    code = "throttled"
    status_code = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(None, message, {"retry_after": retry_after})
        self.retry_after = retry_after


class LimitReached(ProtocolError):
    """Issue 24: an enforced limit (the CLAIMED column's WIP limit, max_concurrent per role or
    project) holds: 429 with Retry-After, exit 11 (wait and ask again), like `/work`'s "wait"."""

    code = "limit_reached"
    status_code = 429

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class BudgetExhausted(ProtocolError):
    """Issue 24: a budget that applies (project, goal, sprint, agent, task) is spent: claims,
    review claims and run starts are refused (409, exit 14) until an admin raises it; a running
    agent is told `stop` by its heartbeat."""

    code = "budget_exhausted"
    status_code = 409

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class ProtocolValidationError(ProtocolError):
    """Bad input for an operation, naming the field (HTTP 400)."""

    code = "validation_error"
    status_code = 400

    def __init__(self, field: str, message: str, *, fields: dict[str, list[str]] | None = None):
        fields = fields or {field: [message]}
        super().__init__(None, f"{field}: {message}", {"fields": fields})
        self.field = field


class Forbidden(ProtocolError, PermissionDenied):
    """The actor is known but may not do this (HTTP 403; Django's own 403 on a web page)."""

    code = "permission_denied"
    status_code = 403

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(None, message, details)


class NotFound(ProtocolError, Http404):
    """Missing, or another tenant's: the same answer (SPEC §3; Django's 404 on a web page)."""

    code = "not_found"
    status_code = 404

    def __init__(self) -> None:
        # One message for every miss: a different one would tell a tenant what exists.
        super().__init__(None, "Not found.")


class Unavailable(ProtocolError):
    """The database cannot be reached right now (restarting, failing over, out of
    connections): HTTP 503 with Retry-After, never a 500. Nothing was written; the same
    request, retried (with its Idempotency-Key), is applied once."""

    code = "unavailable"
    status_code = 503
    RETRY_AFTER = 5  # seconds: PostgreSQL restarts in about that; the client backs off anyway

    def __init__(self, message: str = "The database is unavailable; retry shortly.") -> None:
        super().__init__(None, message, {"retry_after": self.RETRY_AFTER})


class Contention(ProtocolError):
    """The database is up but this request's transaction met another one on the same rows and
    was rolled back: PostgreSQL chose it as a deadlock's victim (SQLSTATE 40P01) or a
    serialization failure (40001) — the operation runner has already run it again, and it lost
    each time — or it waited for a row lock past `lock_timeout` (55P03) or `statement_timeout`
    (57014). Nothing was written: HTTP 409 with Retry-After, exit 7, and the same request (with
    its Idempotency-Key) may be sent again at once. `details.reason` says which."""

    code = "contention"
    status_code = 409
    RETRY_AFTER = 1  # seconds: the other transaction holds its rows for milliseconds

    def __init__(self, reason: str) -> None:
        super().__init__(
            None,
            f"Another request held the rows this one needed ({reason.replace('_', ' ')}); "
            "nothing was written: send it again.",
            {"reason": reason, "retry_after": self.RETRY_AFTER},
        )


# PostgreSQL's SQLSTATEs of a transaction that met another on the same rows (Appendix A).
CONTENTION_SQLSTATES: dict[str, str] = {
    "40P01": "deadlock",
    "40001": "serialization_failure",
    "55P03": "lock_timeout",
    "57014": "statement_timeout",
}
# Of those, the ones where PostgreSQL rolled the transaction back so that the other could go
# on: run again, it is very likely to pass. A timeout already waited its full time: it is not.
LOST_RACE_SQLSTATES = frozenset({"40P01", "40001"})


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error (psycopg's, which Django's error wraps), else None."""
    seen: BaseException | None = exc
    while seen is not None:
        state = getattr(seen, "sqlstate", None)
        if state:
            return str(state)
        seen = seen.__cause__
    return None


def contention(exc: BaseException) -> str | None:
    """Why `exc` is contention on rows (`CONTENTION_SQLSTATES`' reason), else None."""
    from django.db import DatabaseError

    if not isinstance(exc, DatabaseError):
        return None
    return CONTENTION_SQLSTATES.get(sqlstate(exc) or "")


def lost_race(exc: BaseException) -> bool:
    """Did PostgreSQL roll `exc`'s transaction back for another's sake (a deadlock's victim, a
    serialization failure), so that the whole transaction may be run again?"""
    return contention(exc) is not None and sqlstate(exc) in LOST_RACE_SQLSTATES


def database_unavailable(exc: BaseException) -> bool:
    """Is `exc` the database being unreachable (refused, lost, restarting), as opposed to a bug
    in a query or contention on rows (`contention`: the database answered)?"""
    from django.db import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError) and contention(exc) is None


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for field, value in detail.items():
            return f"{field}: {_first_message(value)}"
    if isinstance(detail, list | tuple) and detail:
        return _first_message(detail[0])
    return str(detail)


def _as_lists(detail: Any) -> dict[str, Any]:
    if isinstance(detail, dict):
        return {str(k): v if isinstance(v, list | dict) else [str(v)] for k, v in detail.items()}
    if isinstance(detail, list):
        return {"non_field_errors": detail}
    return {"non_field_errors": [str(detail)]}


def validation_error(detail: Any) -> ProtocolValidationError:
    """A 400 from a `{field: [messages]}` mapping (a form's or a serializer's errors)."""
    fields = _as_lists(detail)
    first = next(iter(fields), "non_field_errors")
    error = ProtocolValidationError(first, "", fields=fields)
    error.message = _first_message(fields)
    return error


def as_protocol_error(exc: BaseException) -> ProtocolError | None:
    """The `ProtocolError` an exception stands for, or None for a real bug (a 500).

    The one translation of Django's and DRF's own exceptions into the protocol's vocabulary.
    """
    from django.core.exceptions import ValidationError as DjangoValidationError
    from rest_framework import exceptions as drf

    if isinstance(exc, ProtocolError):
        return exc
    if (reason := contention(exc)) is not None:
        return Contention(reason)
    if database_unavailable(exc):
        from liza_site.outages import DATABASE

        DATABASE.failed(exc)  # its cause, logged once per outage
        return Unavailable()
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        return validation_error(detail)
    if isinstance(exc, Http404 | drf.NotFound):
        return NotFound()
    if isinstance(exc, PermissionDenied):
        return Forbidden(str(exc) or "You may not do this.")
    if isinstance(exc, drf.ValidationError):
        return validation_error(exc.detail)
    if isinstance(exc, drf.APIException):
        detail = exc.detail
        code = str(getattr(detail, "code", None) or exc.default_code)
        return ProtocolError(code, str(detail), status_code=exc.status_code)
    return None
