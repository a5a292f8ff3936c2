"""The `Operation` type: what an operation binds (service, target, input, principal, role, the
words of its success) and how it runs; the kinds of row an operation acts on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection
from rest_framework import serializers

from agents.models import Agent
from boards.coordination.services.audit import records_refusals
from boards.coordination.services.authority import refuse_if_superseded
from boards.errors import lost_race, validation_error
from boards.operations.inputs.contract import contract_body_input

# What an operation acts on; the adapters resolve it (404 for missing or foreign rows).
# SITE: an operation on no project (site staff opening a new one: no project role opens it).
TASK, SPRINT, GOAL, PROJECT, DISCOVERY, AGENT, KEY, ALERT, BREAKER, RUN, SITE = (
    "task",
    "sprint",
    "goal",
    "project",
    "discovery",
    "agent",
    "key",
    "alert",
    "breaker",
    "run",
    "site",
)


@dataclass(frozen=True)
class Operation:
    name: str
    service: Callable[..., Any]
    target: str
    input: type[serializers.Serializer] | None = None
    # The service's keyword for the acting principal: agents-only operations take `agent`.
    principal: str = "actor"
    # Validated input → the service's keyword arguments (default: as they are).
    arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # The service's result → one line for a person (flash message, admin message).
    done: Callable[[Any], str] = field(default=lambda result: "Done.")
    # Board form field names that differ from the input's.
    form_aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # No input of its own: the one its contract entry says (agents.client.contract), when
        # it takes a body; a rule the contract cannot say lives in a hand-written subclass.
        if self.input is None:
            object.__setattr__(self, "input", contract_body_input(self.name))
        if self.target != SITE and not hasattr(self.service, "people"):
            raise TypeError(f"{self.name}: its service declares no people (authority.people)")

    @property
    def role(self) -> str | None:
        """The people it is for: its service's declaration (`authority.people`), which the
        service's `require_role` enforces: a membership role (and above), `PLAN` (the planner
        right) or None (agents only). The board offers its form to them; the API's role matrix
        expects exactly them to succeed. A site operation is for site staff, not a role."""
        return None if self.target == SITE else self.service.people

    def validate(self, data: Any, *, partial: bool = False) -> dict[str, Any]:
        """The operation's input, validated; a refusal is a 400 naming the field."""
        if self.input is None:
            return {}
        serializer = self.input(data=data, partial=partial)
        if not serializer.is_valid():
            raise validation_error(serializer.errors)
        return _plain(serializer.validated_data)

    def run(
        self,
        *,
        target: Any,
        actor: Any,
        now: datetime,
        data: dict[str, Any],
        generation: int | None = None,
    ) -> Any:
        """The service, run for `actor`. `generation`: the one its agent's process says it
        registered as (the API's `Liza-Generation`), or None: a superseded session is refused
        here, once for every agent operation, on the agent as the adapter read it; a `fenced`
        service is also given it, to ask again on the row it locks."""
        kwargs = self.arguments(dict(data)) if self.arguments else dict(data)
        on = {} if self.target == SITE else {self.target: target}
        if generation is not None and isinstance(actor, Agent):
            _fence(actor, generation, action=self.name, now=now)
            if getattr(self.service, "fenced", False):
                kwargs["generation"] = generation
        return run_again_on_lost_race(
            lambda: self.service(**on, **{self.principal: actor, "now": now}, **kwargs)
        )


# The runner's fence, its refusal logged as a service's is (outside any work of its own).
_fence = records_refusals(refuse_if_superseded)


# How many times one request's transaction runs when PostgreSQL keeps choosing it as the
# victim of a deadlock or a serialization failure (`errors.lost_race`): the first run and two
# more, a few milliseconds apart, before the caller is answered `contention`.
LOST_RACE_RUNS = 3
LOST_RACE_PAUSE = 0.005  # seconds, times the run's number: the winner's commit is that near

T = TypeVar("T")
_runner = threading.local()


def runs_left() -> int:
    """How many more times the runner of this thread's request will run it (0 outside one):
    an adapter that turns errors into answers lets a lost race through while this is not 0."""
    return getattr(_runner, "left", 0)


def run_again_on_lost_race(call: Callable[[], T]) -> T:
    """`call()`, run again (up to `LOST_RACE_RUNS` in all) when PostgreSQL rolled its transaction
    back for another's sake (a deadlock's victim, 40P01; a serialization failure, 40001).

    Only the whole transaction is run again: when the error reaches here inside a transaction
    (an Idempotency-Key's, opened by the API for the whole request), it is raised to the runner
    around that transaction, which the adapter puts outside it. Nothing has been sent then: the
    live messages and webhooks go out on commit, and the answer after this returns. Nested
    runners (the API's around an operation's) run it once; the outermost one runs it again.
    """
    if hasattr(_runner, "left"):
        return call()
    try:
        for run in range(1, LOST_RACE_RUNS + 1):
            _runner.left = LOST_RACE_RUNS - run
            try:
                return call()
            except Exception as exc:
                if not _runner.left or not lost_race(exc) or connection.in_atomic_block:
                    raise
            time.sleep(LOST_RACE_PAUSE * run)
        raise AssertionError("unreachable")  # the last run returns or raises
    finally:
        del _runner.left


def op(
    service: Callable[..., Any],
    target: str,
    input: type[serializers.Serializer] | None = None,
    **options: Any,
) -> Operation:
    """An operation named as its service (`tasks.task_claim` is `task_claim`), as they all are
    but where one service serves two operations (agent_enable, agent_disable)."""
    return Operation(service.__name__, service, target, input, **options)


def _plain(value: Any) -> Any:
    """Serializer output as plain dicts and lists (nested serializers give OrderedDicts)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def rename(**names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def arguments(data: dict[str, Any]) -> dict[str, Any]:
        return {names.get(k, k): v for k, v in data.items()}

    return arguments
