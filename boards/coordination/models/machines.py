"""The models' transitions declared from seed 000's edge tables (`boards.protocol.states`).

An edge — its source, its target and the method that takes it — is written once, in the
protocol's table, which the API's "allowed transitions", the error messages and the tests read
too. A model declares each method with `seed_transition`, adding only the conditions that the
target state's invariants need of the row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django_fsm import transition


def seed_transition(
    edges: Mapping[tuple[str, str], str],
    *,
    conditions: Sequence[Callable[[Any], bool]] = (),
    field: str = "status",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Makes the decorated method the transition of every (source, target) edge that `edges`
    names after it. A method the table does not name is a mistake caught at import."""

    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        pairs = [pair for pair, name in edges.items() if name == method.__name__]
        if not pairs:
            raise ImproperlyConfigured(f"no seed 000 edge is named {method.__name__!r}")
        for source, target in pairs:
            method = transition(
                field=field, source=source, target=target, conditions=list(conditions)
            )(method)
        return method

    return decorate
