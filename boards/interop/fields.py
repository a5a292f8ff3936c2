"""Reading seed 002's values: each scalar, id and section checked and converted, every problem
collected with where it is (`FieldReader`), as `reading.py`'s reader and its record sections use
them. A value is never coerced silently: an id written as a number, a lone id for a list, a
timestamp in another format are problems (or, with `--lenient`, gaps read with a warning).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django_fsm import FSMField

from boards import protocol as p

from .schema import (
    SECTION_SHAPES,
    STATE_FILE,
    Kind,
)


def jsonable(value: Any) -> Any:
    """A YAML value as JSON (timestamps as seed 002 Z strings), for JSONFields."""
    if isinstance(value, datetime):
        return p.format_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # e.g. bytes from a !!binary scalar


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return repr(jsonable(value))


class FieldReader:
    """Converts values and collects problems and warnings instead of stopping at the first."""

    def __init__(self, *, lenient: bool = False) -> None:
        self.lenient = lenient
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.task_keys: dict[str, int] = {}  # key → position in the tasks list
        self.histories: list[tuple[str, Any, str]] = []  # task key, history, where

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def warn(self, where: str, message: str) -> None:
        """Something read differently from the file that loses nothing protocol-relevant."""
        self.warnings.append(f"{where}: {message}")

    def unknown_keys(self, entry: dict, known: Any, where: str) -> None:
        for name in entry:
            if name not in known:
                self.warn(f"{where}: {name}", "not a key Liza Board keeps; left out")

    def gap(self, where: str, message: str, reading: str) -> bool:
        """Something the original's scripts write that our model has no place for as is.

        Lenient: a warning saying how it is read (True: go ahead). Strict: a problem.
        """
        if self.lenient:
            self.warnings.append(f"{where}: {message}; {reading}")
            return True
        self.problem(where, f"{message} (--lenient: {reading})")
        return False

    def convert(self, raw: Any, kind: Kind, where: str, default: Any) -> Any:
        if raw is None:
            if kind is Kind.TIME_REQUIRED:
                self.problem(where, "missing (seed 002: an ISO 8601 UTC timestamp)")
            return default
        if kind is Kind.TEXT:
            return self.text(raw, where)
        if kind is Kind.INT:
            if isinstance(raw, bool) or not isinstance(raw, int):
                self.problem(where, f"expected a whole number, found {describe(raw)}")
                return default
            return raw
        if kind is Kind.BOOL:
            if not isinstance(raw, bool):
                self.problem(where, f"expected true or false, found {describe(raw)}")
                return default
            return raw
        if kind is Kind.LIST:
            if isinstance(raw, list):
                return jsonable(raw)
            if isinstance(raw, dict) or not self.gap(
                where, f"expected a list, found {describe(raw)}", "read as a one-item list"
            ):
                return default
            return jsonable([raw])
        if kind is Kind.JSON:
            return jsonable(raw)
        return self.time(raw, where)

    def text(self, raw: Any, where: str) -> str:
        if raw is None:
            return ""
        if isinstance(raw, str):
            return raw
        if isinstance(raw, int | float | date) and not isinstance(raw, bool):
            return str(jsonable(raw))
        self.problem(where, f"expected text, found {describe(raw)}")
        return ""

    def time(self, raw: Any, where: str) -> datetime | None:
        try:
            return p.parse_timestamp(raw)
        except (ValueError, TypeError, OverflowError):
            self.problem(
                where,
                f"{describe(raw)} is not an ISO 8601 timestamp (seed 002: YYYY-MM-DDTHH:MM:SSZ)",
            )
            return None

    def key(self, raw: Any, where: str, *, required: bool = False) -> str | None:
        """An id (task, goal, sprint, discovery, agent): text, never coerced from a number
        (`id: 7` and `id: "7"` would become the same task)."""
        if raw is None or raw == "":
            if required:
                self.problem(where, "missing")
            return None
        if not isinstance(raw, str):
            hint = " (write it in quotes)" if isinstance(raw, int | float | date) else ""
            self.problem(where, f"expected an id as text, found {describe(raw)}{hint}")
            return None
        return raw

    def key_list(self, raw: Any, where: str) -> list[str]:
        """A list of ids (depends_on, sprint scope); a lone id is not silently a list."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            if isinstance(raw, dict) or not self.gap(
                where, f"expected a list of ids, found {describe(raw)}", "read as a one-item list"
            ):
                return []
            raw = [raw]
        keys = [self.key(item, where) for item in raw]
        return list(dict.fromkeys(k for k in keys if k is not None))

    def task_ref(self, raw: Any, where: str) -> str | None:
        """A task key that must name a task of this file (rows that hold a foreign key)."""
        key = self.key(raw, where)
        if key is not None and key not in self.task_keys:
            self.problem(where, f"names {key}, which is not a task in {STATE_FILE}")
            return None
        return key

    def enum(self, raw: Any, allowed: tuple[str, ...], where: str) -> str | None:
        if isinstance(raw, str) and raw in allowed:
            return raw
        found = "missing" if raw is None else f"{describe(raw)} is not"
        self.problem(where, f"{found} one of: {', '.join(allowed)}")
        return None

    def section(self, state: dict, name: str) -> Any:
        raw = state.get(name)
        shape = SECTION_SHAPES[name]
        if raw is None or isinstance(raw, shape):
            return raw
        expected = "a mapping" if shape is dict else "a list"
        self.problem(f"{STATE_FILE}: {name}", f"must be {expected}, found {describe(raw)}")
        return None

    def mappings(self, items: Iterable, label: str) -> Iterator[tuple[str, dict]]:
        """(where, item) for each mapping in `items`, `where` being "<label> #<position>"; any
        other item is a problem there, reported as the loop reaches it."""
        for position, item in enumerate(items, start=1):
            where = f"{label} #{position}"
            if isinstance(item, dict):
                yield where, item
            else:
                self.problem(where, f"must be a mapping, found {describe(item)}")

    def entries(self, raw: list | None, label: str) -> list[tuple[str, dict]]:
        """(where, entry) for each mapping of a list section; other items are problems."""
        found = []
        for position, entry in enumerate(raw or [], start=1):
            where = f"{STATE_FILE}: {label} #{position}"
            if isinstance(entry, dict):
                found.append((where, entry))
            else:
                self.problem(where, f"must be a mapping of fields, found {describe(entry)}")
        return found

    def fields(
        self, entry: dict, table: dict[str, Kind], model: type[models.Model], where: str
    ) -> dict[str, Any]:
        values = {}
        for name, kind in table.items():
            default = model._meta.get_field(name).get_default()
            values[name] = self.convert(entry.get(name), kind, f"{where}: {name}", default)
        return values

    def clean(
        self,
        instance: models.Model,
        where: str,
        exclude: tuple[str, ...],
        names: dict[str, str] | None = None,
    ) -> None:
        """The model's own field rules (lengths, choices, ranges, blank), as problems.

        django-fsm status fields are excluded: they are protected (clean_fields would assign
        them again), checked by `enum`, and set once in the constructor, the one way to restore
        a status.
        """
        fsm = [f.name for f in instance._meta.concrete_fields if isinstance(f, FSMField)]
        try:
            instance.clean_fields(exclude=[*exclude, *fsm])
        except ValidationError as exc:
            for name, errors in exc.error_dict.items():
                model_field = instance._meta.get_field(name)
                label = (names or {}).get(name, name)
                if any(m.startswith(f"{where}: {label}: ") for m in self.problems):
                    continue  # already said better (e.g. a required timestamp)
                for error in errors:
                    self.problem(f"{where}: {label}", _field_message(model_field, error))


def _field_message(model_field: models.Field, error: ValidationError) -> str:
    if error.code == "invalid_choice":
        allowed = ", ".join(str(value) for value, _ in model_field.choices)
        return f"{describe(error.params['value'])} is not one of: {allowed}"
    if error.code in ("blank", "null"):
        return "missing"
    return " ".join(error.messages)
