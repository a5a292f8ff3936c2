"""Anomalies for the circuit breaker's patterns, logged through the service, and a trip."""

from __future__ import annotations

from typing import Any

from boards.coordination.models.records import Anomaly
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.services.records import anomaly_create
from boards.coordination.services.sprints import sprint_create
from boards.watch.services.watch import watch_sweep
from tests.lifecycle import World

AnomalySpec = tuple[str, dict[str, Any]]


def retry(pattern: str) -> AnomalySpec:
    return "retry_loop", {"count": 3, "error_pattern": pattern}


def trade_off(what: str, debt: Any = True, **more: Any) -> AnomalySpec:
    return "trade_off", {"what": what, "why": "unblock the task", "debt_created": debt, **more}


def assumption(text: str) -> AnomalySpec:
    return "assumption_violated", {"assumption": text, "reality": "it does not hold"}


def workaround(**details: Any) -> AnomalySpec:
    return "workaround", details


def ambiguity(**details: Any) -> AnomalySpec:
    return "spec_ambiguity", details


def blocker(service: str) -> AnomalySpec:
    return "external_blocker", {"blocker_service": service, "error": "Connection refused"}


REPORTERS = ("coder-1", "coder-2", "coder-3", "code-reviewer-1", "code-reviewer-2", "planner-1")


def log(world: World, specs: list[AnomalySpec], task: str | None = None) -> list[Anomaly]:
    """Each anomaly at the world's next tick (the current sprint's), by the world's agents in
    turn: the breaker counts one reporter's repeats of a value once a minute (issue #27), and
    these stand for distinct occurrences."""
    logged = []
    for kind, details in specs:
        turn = getattr(world, "anomaly_turn", 0)
        world.anomaly_turn = turn + 1
        logged.append(
            anomaly_create(
                project=world.project,
                actor=world.agent(REPORTERS[turn % len(REPORTERS)]),
                anomaly_type=kind,
                details=details,
                task=task,
                now=world.tick(),
            )
        )
    return logged


def trip(world: World) -> None:
    """An open sprint (opened if none), two anomalies blaming one service, a sweep: tripped."""
    if sprint_open(project=world.project) is None:
        sprint_create(project=world.project, actor=world.planner, now=world.tick())
    log(world, [blocker("payment-gateway-api"), blocker("payment-gateway-api")])
    sweep = watch_sweep(project=world.project, now=world.tick())
    assert any(line.startswith("circuit breaker triggered") for line in sweep.actions), sweep
