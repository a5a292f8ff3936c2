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


def _unstorable_text(text: str) -> str | None:
    """Why PostgreSQL cannot store `text` (as text or inside jsonb), or None."""
    if "\x00" in text:
        return "null characters are not allowed"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone UTF-16 surrogate ("\ud800" unpaired): JSON can spell it, UTF-8 cannot.
        return "text holds a lone UTF-16 surrogate, which is not encodable text"
    return None


def _printable(key: str) -> str:
    """A key as an error may name it (the answer itself must be encodable)."""
    return key.replace("\x00", "").encode("utf-8", "backslashreplace").decode("utf-8")


def _first_unstorable(value: Any, path: tuple[str, ...] = ()) -> tuple[tuple[str, ...], str] | None:
    """The first number or text, at any depth, that no field can take: where it is and why."""
    if isinstance(value, _NonFinite):
        return path, f"{value.text} is not a finite number (JSON cannot carry it)"
    if isinstance(value, str):
        problem = _unstorable_text(value)
        return (path, problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _unstorable_text(key)
            if problem:
                return (*path, _printable(key)), f"a key: {problem}"
            found = _first_unstorable(item, (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_unstorable(item, (*path, str(index)))
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
      the endpoint: PostgreSQL refuses such a number in JSON, and no field means one;
    * so is text, at any depth (keys too), that PostgreSQL cannot store: a lone UTF-16
      surrogate (`"\\ud800"` is valid JSON, but not encodable as UTF-8) or a NUL character.

    This is the one check of a JSON body's encoding, before any serializer reads it: every
    endpoint's input (boards.operations.inputs) can then assume storable text.
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
        found = _first_unstorable(data)
        if found is not None:
            path, problem = found
            raise ValidationError(_nested_error(path, problem))
        return data
