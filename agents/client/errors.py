"""Errors of the client, carrying the server's exit code (`details.exit` of the envelope)."""

from __future__ import annotations

from typing import Any

from agents.client import contract

# The exit table is the contract's (agents.client.contract.EXIT, the server's too). The server
# tells the code in every error (`details.exit`); these are for what it cannot say.
EXIT = contract.EXIT


class LizaError(Exception):
    """The server refused, or could not be reached: `code`, `message`, `details`, `exit`."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        status: int | None = None,
        exit: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.status = status
        self.exit = int(exit if exit is not None else self.details.get("exit", EXIT["refused"]))

    @classmethod
    def from_response(cls, status: int, body: Any) -> LizaError:
        """The error envelope `{"error": {code, message, details}}`, or what stands for it."""
        error = body.get("error") if isinstance(body, dict) else None
        if status >= 500:
            code = error.get("code", "server_error") if isinstance(error, dict) else "server_error"
            message = error.get("message", "") if isinstance(error, dict) else ""
            return Unreachable(code, message or f"the server answered {status}", status=status)
        if not isinstance(error, dict):
            return cls("bad_response", f"HTTP {status} without an error envelope", status=status)
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
        return cls(
            str(error.get("code", "error")),
            str(error.get("message", "")),
            details,
            status=status,
        )

    def as_dict(self) -> dict[str, Any]:
        return contract.error_envelope(self.code, self.message, self.details, self.exit)


class Unreachable(LizaError):
    """No answer (connection refused, timeout) or a 5xx: try again later (exit 7)."""

    def __init__(self, code: str, message: str, *, status: int | None = None) -> None:
        super().__init__(code, message, status=status, exit=EXIT["unreachable"])


class UsageError(LizaError):
    """The client was configured or called wrongly; nothing was sent (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("usage", message, exit=EXIT["usage"])


class Redirected(LizaError):
    """The server (or a proxy before it) answered 3xx. The client follows no redirect: an agent's
    key and writes go only to the URL it was given, so the answer names where it was sent and
    the fix is a corrected URL (exit 7, as an unreachable server)."""

    def __init__(self, status: int, location: str) -> None:
        where = location or "(no Location header)"
        super().__init__(
            "redirected",
            f"the server answered {status} redirecting to {where}; liza follows no redirect: "
            "set the URL (--url / LIZA_URL) to the address the server should be reached at",
            {"location": location},
            status=status,
            exit=EXIT["unreachable"],
        )
