"""The one exception vocabulary services raise (STYLE.md "API").

Services raise `ProtocolError` for protocol refusals and Django's `ValidationError` /
`PermissionDenied` / `Http404` for the rest; `liza_site.exceptions` maps all of them once to the
JSON error envelope of SPEC §6.
"""

from __future__ import annotations

from typing import Any


class ProtocolError(Exception):
    """A refusal by the Liza protocol, carried to the caller as `{"error": {...}}`."""

    status_code = 409

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        if status_code is not None:
            self.status_code = status_code

    def as_envelope(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidTransition(ProtocolError):
    def __init__(
        self, *, from_status: str, to_status: str, allowed: list[str], message: str = ""
    ) -> None:
        super().__init__(
            "invalid_transition",
            message or f"Transition {from_status} → {to_status} is not allowed.",
            {"from": from_status, "to": to_status, "allowed": allowed},
        )
        self.from_status = from_status
        self.to_status = to_status
        self.allowed = allowed


class Conflict(ProtocolError):
    """A lost race or a precondition on other rows that no longer holds."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__("conflict", message, details)


class LeaseLost(ProtocolError):
    """The caller's lease was taken over or expired: the agent must exit 42 (seed 000)."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__("lease_lost", message, {**(details or {}), "exit": 42})


class StopWork(ProtocolError):
    """Project paused or sprint at CHECKPOINT: claims refused, agents exit 42."""

    def __init__(self, code: str, message: str) -> None:
        assert code in ("paused", "checkpoint")
        super().__init__(code, message, {"exit": 42})


class ProtocolValidationError(ProtocolError):
    """Bad input for a protocol operation, naming the field (HTTP 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(
            "validation_error",
            f"{field}: {message}",
            {"fields": {field: [message]}},
            status_code=400,
        )
        self.field = field


class Forbidden(ProtocolError):
    """The actor is known but may not do this (HTTP 403)."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__("permission_denied", message, details, status_code=403)
