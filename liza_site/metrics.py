"""The process's counters for `/metrics` (prometheus-client), and how a scrape collects them.

Counters are counted where the thing happens, once: every Event the kernel records (transitions,
claims, refusals — all are events) when its transaction commits, and every failed attempt to
reach Redis. With several worker processes (granian, `.ci/serve --production`) each writes its
counts to files under `PROMETHEUS_MULTIPROC_DIR` and a scrape of any worker sums them all
(prometheus-client's multiprocess mode); without that variable the counts are the one
process's. The per-project gauges are read from the database at scrape time
(`boards.insights.selectors.metrics`), so every worker answers the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import REGISTRY, Metric
from prometheus_client.multiprocess import MultiProcessCollector

EVENTS = Counter(
    "liza_events",
    "Events recorded (committed), by action and outcome: transitions, claims, refusals",
    ["action", "outcome"],
)
REFUSALS = Counter("liza_refusals", "Refused operations recorded, by protocol error code", ["code"])
TRANSITIONS = Counter(
    "liza_transitions",
    "State transitions applied (committed), by the state left and the state entered",
    ["from_state", "to_state"],
)
# The claim operations' events (seed 002: a lost claim race is logged `claim_failed`).
CLAIM_ACTIONS = {
    "claimed": "task",
    "claim_failed": "task",
    "review_claimed": "review",
    "review_reclaimed": "review",
    "claim_review_failed": "review",
}
CLAIMS = Counter(
    "liza_claims", "Claims of tasks and reviews, by kind and outcome", ["kind", "outcome"]
)
# The hot path's agent-key cache (agents.keycache), per lookup: served from this process's entry
# (hit) or looked up in the database (miss). Its hit rate says whether the cache holds a fleet.
KEYCACHE_LOOKUPS = Counter(
    "liza_keycache_lookups",
    "Agent-key lookups of the hot path, by outcome (hit, miss)",
    ["outcome"],
)
REDIS_FAILURES = Counter("liza_redis_failures", "Failed attempts to reach Redis")
WEBHOOK_DELIVERIES = Counter(
    "liza_webhook_deliveries",
    "Escalation webhook attempts by outcome (delivered, failed, refused), and deliveries given "
    "up (gave_up)",
    ["outcome"],
)


def event_recorded(
    action: str, outcome: str, code: str | None, from_state: str = "", to_state: str = ""
) -> None:
    EVENTS.labels(action=action, outcome=outcome).inc()
    if code:
        REFUSALS.labels(code=code).inc()
    if outcome == "applied" and from_state and to_state and from_state != to_state:
        TRANSITIONS.labels(from_state=from_state, to_state=to_state).inc()
    if action in CLAIM_ACTIONS:
        CLAIMS.labels(kind=CLAIM_ACTIONS[action], outcome=outcome).inc()


class _Collect:
    """A collector made of a function (prometheus-client's custom collector protocol)."""

    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self.collect = collect


def exposition(*collectors: Callable[[], Iterable[Metric]]) -> bytes:
    """One scrape: every process's counters plus `collectors` (read now), in the text format."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(_Collect(REGISTRY.collect))
    for collect in collectors:
        registry.register(_Collect(collect))
    return generate_latest(registry)
