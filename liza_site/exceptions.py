"""One mapping from every exception a view can meet to SPEC §6's JSON error envelope.

`{"error": {"code", "message", "details"}}` for protocol refusals, validation errors, missing or
foreign objects and authentication failures alike. Anything unexpected is still a 500, but
tests fuzz the API so that no input reaches one.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from boards.errors import ProtocolError


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _validation_details(detail: Any) -> dict[str, Any]:
    if isinstance(detail, dict):
        return {"fields": detail}
    if isinstance(detail, list):
        return {"fields": {"non_field_errors": detail}}
    return {"fields": {"non_field_errors": [str(detail)]}}


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for field, value in detail.items():
            return f"{field}: {_first_message(value)}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ProtocolError):
        return Response(exc.as_envelope(), status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        return Response(
            envelope("validation_error", _first_message(detail), _validation_details(detail)),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)

    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        body = envelope(
            "validation_error", _first_message(exc.detail), _validation_details(exc.detail)
        )
    else:
        code = getattr(exc, "default_code", "error")
        detail = getattr(exc, "detail", str(exc))
        body = envelope(str(getattr(detail, "code", code) or code), str(detail))
    response.data = body
    return response
