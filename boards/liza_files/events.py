"""log.yaml and task `history`: two views of the one Event table (SPEC §4.1, seed 002).

Export writes every task event in both views; import must make one event of each fact again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from boards import protocol as p
from boards.models import Event

SUMMARY_LENGTH = Event._meta.get_field("detail").max_length
_NEVER = datetime.min.replace(tzinfo=UTC)  # sorts entries whose time was a problem


@dataclass
class PlannedEvent:
    event: Event  # unsaved, without project and task
    task_key: str | None

    @property
    def match_key(self) -> tuple[datetime, str | None, str, str]:
        e = self.event
        return (e.timestamp, self.task_key, e.action, e.actor_id)


def derived_actor_kind(actor_id: str) -> str:
    """Who wrote a log line, from its `agent` (SPEC §4.1 actor kinds).

    An agent id (planner-N, coder-N, code-reviewer-N) is an agent, `system` (what the services
    record for the server itself) or nothing is the system, any other name a human.
    """
    if p.AGENT_ID_RE.match(actor_id):
        return Event.ActorKind.AGENT
    if actor_id in ("", "system"):
        return Event.ActorKind.SYSTEM
    return Event.ActorKind.HUMAN


def history_summary(action: str, data: dict[str, Any]) -> str:
    """A history entry has no `detail`: its note, its commit, or its event name (seed 002)."""
    for name in ("detail", "note"):
        if isinstance(data.get(name), str) and data[name].strip():
            return _one_line(data[name])
    if data.get("commit"):
        return _one_line(f"commit {data['commit']}")
    return action or "event"


def merge_events(log: list[PlannedEvent], history: list[PlannedEvent]) -> list[PlannedEvent]:
    """One event per fact: a history entry that log.yaml also has becomes no second event.

    Export writes every task event in both views, so a history entry matches the log entry with
    the same (timestamp, task, action, agent). Seed 002's own history often leaves `agent` out
    (task-1: `ready_for_review`, `merged`); such an entry then matches the log entry with the
    same (timestamp, task, action) whoever wrote it. A history entry's extra keys (commit,
    note, ...) are added to the matched event's data. Counts are kept, so two identical entries
    match two log entries, not one.
    """
    by_key: dict[tuple, list[PlannedEvent]] = defaultdict(list)
    by_loose_key: dict[tuple, list[PlannedEvent]] = defaultdict(list)
    for planned in log:
        by_key[planned.match_key].append(planned)
        by_loose_key[planned.match_key[:3]].append(planned)
    matched: set[int] = set()

    def take(candidates: list[PlannedEvent]) -> PlannedEvent | None:
        for candidate in candidates:
            if id(candidate) not in matched:
                matched.add(id(candidate))
                return candidate
        return None

    unmatched: list[PlannedEvent] = []
    for planned in history:
        twin = take(by_key[planned.match_key])
        if twin is None:
            unmatched.append(planned)
        else:
            _merge_data(twin, planned)
    history_only: list[PlannedEvent] = []
    for planned in unmatched:
        twin = take(by_loose_key[planned.match_key[:3]]) if not planned.event.actor_id else None
        if twin is None:
            history_only.append(planned)
        else:
            _merge_data(twin, planned)
    # Created in time order (log first on ties), so ids follow the file's chronology.
    return sorted(log + history_only, key=lambda e: e.event.timestamp or _NEVER)


def _merge_data(into: PlannedEvent, source: PlannedEvent) -> None:
    for name, value in source.event.data.items():
        into.event.data.setdefault(name, value)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_LENGTH else line[: SUMMARY_LENGTH - 1] + "…"
