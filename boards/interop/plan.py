"""The plan of an import: the unsaved rows read from `state.yaml` and `log.yaml`, joined by task
key. The reader builds it (`reading.plan_import`, with the per-record readers of `records`) and
the import stores it (`importing`); it has a module of its own so both readers can name it
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents.models import Agent
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import (
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, HumanNote, Review, Task

from .events import PlannedEvent


@dataclass
class ImportPlan:
    reference: datetime  # the file's own "now" (validation.reference_time)
    config: dict[str, Any] = field(default_factory=dict)
    goal: Goal | None = None
    tasks: list[Task] = field(default_factory=list)
    depends_on: dict[str, list[str]] = field(default_factory=dict)
    reviews: dict[str, list[Review]] = field(default_factory=dict)  # open round, by task key
    agents: list[tuple[Agent, str | None]] = field(default_factory=list)
    discoveries: list[Discovery] = field(default_factory=list)
    handoffs: list[tuple[str, Handoff]] = field(default_factory=list)
    notes: list[tuple[str | None, HumanNote, str]] = field(default_factory=list)  # +author
    spec_changes: list[SpecChange] = field(default_factory=list)
    anomalies: list[tuple[str | None, Anomaly]] = field(default_factory=list)
    sprint: Sprint | None = None
    sprint_scope: dict[str, list[str]] = field(default_factory=dict)  # planned / stretch
    breaker: CircuitBreaker | None = None
    breaker_checks: list[CircuitBreakerCheck] = field(default_factory=list)
    events: list[PlannedEvent] = field(default_factory=list)
    # What a lenient import read differently from the file, one line per item.
    warnings: list[str] = field(default_factory=list)
