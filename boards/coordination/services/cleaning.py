"""The text and the task keys a service is given, cleaned before it is stored (a 400 naming
the field otherwise)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.tasks import tasks_by_keys
from boards.errors import ProtocolValidationError


def clean_text(value: Any, field: str, *, required: bool = True, max_length: int = 10_000) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ProtocolValidationError(field, "must be a string")
    value = value.strip()
    if required and not value:
        raise ProtocolValidationError(field, "is required")
    if len(value) > max_length:
        raise ProtocolValidationError(field, f"must be at most {max_length} characters")
    if "\x00" in value:
        raise ProtocolValidationError(field, "null characters are not allowed")
    return value


def clean_string_list(
    value: Any, field: str, *, min_items: int = 0, max_items: int = 100, max_length: int = 1000
) -> list[str]:
    if value is None:
        value = []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ProtocolValidationError(field, "must be a list of strings")
    items = [clean_text(v, field, max_length=max_length) for v in value if v.strip()]
    if not min_items <= len(items) <= max_items:
        raise ProtocolValidationError(field, f"needs between {min_items} and {max_items} items")
    return items


def require_known_names(
    given: Iterable[str], allowed: Sequence[str], *, what: str, field_if_none: str | None = None
) -> None:
    """The names of a partial update (config, a task's limits, notification settings): each one
    of `allowed`, else a 400 naming the first unknown; with `field_if_none`, at least one, else a
    400 naming that field."""
    given = set(given)
    unknown = sorted(given - set(allowed))
    if unknown:
        raise ProtocolValidationError(unknown[0], f"not a {what}; one of {', '.join(allowed)}")
    if field_if_none is not None and not given:
        raise ProtocolValidationError(field_if_none, f"give at least one of {', '.join(allowed)}")


def resolve_key(project: Project, key: Any, field: str) -> Task | None:
    """The task named by `key`, or None when none is named; an unknown key is a 400 naming
    `field`."""
    if key in (None, ""):
        return None
    if not isinstance(key, str):
        raise ProtocolValidationError(field, "must be a task key")
    task = Task.objects.filter(project=project, key=key).first()
    if task is None:
        raise ProtocolValidationError(field, f"unknown task {key}")
    return task


def resolve_keys(project: Project, keys: Sequence[str], field: str) -> list[Task]:
    """The tasks named by `keys`; an unknown key is a 400 naming `field`."""
    keys = clean_string_list(list(keys), field, max_items=1000, max_length=64)
    found, missing = tasks_by_keys(project=project, keys=keys)
    if missing:
        raise ProtocolValidationError(field, f"unknown task(s): {', '.join(missing)}")
    return found
