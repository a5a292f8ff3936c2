"""Request parsing that answers 400 for every malformed body (SPEC §6: no 500 on any input)."""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError


class _NonFinite:
    """Stands in for a number JSON cannot carry (NaN, ±Infinity, or 1e400 which overflows)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _first_non_finite(value: Any, path: tuple[str, ...] = ()) -> tuple[tuple[str, ...], str] | None:
    if isinstance(value, _NonFinite):
        return path, value.text
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = ((str(index), item) for index, item in enumerate(value))
    else:
        return None
    for key, item in items:
        found = _first_non_finite(item, (*path, str(key)))
        if found is not None:
            return found
    return None


def _nested_error(path: tuple[str, ...], message: str) -> Any:
    detail: Any = [message]
    for name in reversed(path):
        detail = {name: detail}
    return detail if path else {"non_field_errors": detail}


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, except that

    * absurdly deep nesting is a parse error, not a crash: `json.loads` raises RecursionError
      (not ValueError, which DRF catches) on `[[[[...]]]]` nested thousands deep;
    * a number that is not finite — `NaN`, `Infinity`, or a literal like `1e400` that Python
      reads as infinity — is a 400 validation_error naming the field where it sits, whatever
      the endpoint: PostgreSQL refuses such a number in JSON, and no field means one.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
            data = json.loads(text, parse_float=_float, parse_constant=_NonFinite)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc
        except LookupError as exc:
            raise ParseError(f"Unsupported charset {encoding!r}") from exc
        except ValueError as exc:  # also UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from exc
        found = _first_non_finite(data)
        if found is not None:
            path, literal = found
            raise ValidationError(
                _nested_error(path, f"{literal} is not a finite number (JSON cannot carry it)")
            )
        return data
