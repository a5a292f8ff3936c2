"""log.yaml and task `history`: two views of the one Event table (SPEC §4.1, seed 002).

Export writes every task event in both views; import must make one event of each fact again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from boards import protocol as p
from boards.coordination.models.records import Event

SUMMARY_LENGTH = Event._meta.get_field("detail").max_length
# Event.data keys of an imported event (merge_events): VIEW_KEY marks an event only one of the
# two files had; ONLY_KEY lists, per view, the keys of a merged event that only that file had.
VIEW_KEY = "liza:view"
ONLY_KEY = "liza:only"
MARKERS = frozenset({VIEW_KEY, ONLY_KEY})


class View(StrEnum):
    HISTORY = "history"  # only in its task's `history`
    LOG = "log"  # only in log.yaml


def in_history(event: Event) -> bool:
    return (event.data or {}).get(VIEW_KEY) != View.LOG


def in_log(event: Event) -> bool:
    return (event.data or {}).get(VIEW_KEY) != View.HISTORY


def event_data(event: Event, view: View) -> dict[str, Any]:
    """What the event adds to its entry in `view`: without the markers, and without the keys
    only the other file had."""
    data = event.data or {}
    only = data.get(ONLY_KEY)
    other = View.LOG if view is View.HISTORY else View.HISTORY
    hidden = set(only.get(other, [])) if isinstance(only, dict) else set()
    return {k: v for k, v in data.items() if k not in MARKERS and k not in hidden}


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
    """One event per fact, in append order: a history entry that log.yaml also has becomes no
    second event.

    Export writes every task event in both views, so a history entry matches the log entry with
    the same (timestamp, task, action, agent). Seed 002's own history often leaves `agent` out
    (task-1: `ready_for_review`, `merged`); such an entry then matches the log entry with the
    same (timestamp, task, action) whoever wrote it. A history entry's extra keys (commit,
    note, ...) are added to the matched event's data. Counts are kept, so two identical entries
    match two log entries, not one.

    An entry found in one view only is marked so (VIEW_KEY) and exported to that view only:
    an export never writes what nobody wrote. The result keeps log.yaml's order and each
    task's history order (the ids of the created events are the append order export follows):
    a history-only entry comes right before the next entry of its history that the log has.
    `history` is given task by task, each in its file order.
    """
    by_key: dict[tuple, list[PlannedEvent]] = defaultdict(list)
    by_loose_key: dict[tuple, list[PlannedEvent]] = defaultdict(list)
    for planned in log:
        by_key[planned.match_key].append(planned)
        by_loose_key[planned.match_key[:3]].append(planned)
    twin_of: dict[int, PlannedEvent] = {}  # id(history entry) → its log entry

    def take(candidates: list[PlannedEvent], entry: PlannedEvent) -> bool:
        for candidate in candidates:
            if id(candidate) not in matched:
                matched.add(id(candidate))
                twin_of[id(entry)] = candidate
                _merge_data(candidate, entry)
                return True
        return False

    matched: set[int] = set()
    unmatched = [planned for planned in history if not take(by_key[planned.match_key], planned)]
    for planned in unmatched:
        if not planned.event.actor_id:
            take(by_loose_key[planned.match_key[:3]], planned)

    # Per task, the history-only entries waiting for the next matched entry of that history.
    waiting: dict[tuple[str | None, int], list[PlannedEvent]] = {}
    pending: dict[str | None, list[PlannedEvent]] = defaultdict(list)
    for planned in history:
        twin = twin_of.get(id(planned))
        if twin is None:
            planned.event.data[VIEW_KEY] = View.HISTORY
            pending[planned.task_key].append(planned)
        else:
            waiting[(planned.task_key, id(twin))] = pending.pop(planned.task_key, [])
    ordered: list[PlannedEvent] = []
    for planned in log:
        if id(planned) not in matched:
            if planned.task_key is not None:
                planned.event.data[VIEW_KEY] = View.LOG
        else:
            ordered.extend(waiting.pop((planned.task_key, id(planned)), []))
        ordered.append(planned)
    for entries in waiting.values():  # matched out of order: keep them all the same
        ordered.extend(entries)
    for entries in pending.values():
        ordered.extend(entries)
    return ordered


def _merge_data(into: PlannedEvent, source: PlannedEvent) -> None:
    """The history entry's keys join its log entry's; each file keeps only its own keys."""
    log_data, history_data = into.event.data, source.event.data
    log_only = [name for name in log_data if name not in history_data]
    history_only = [name for name in history_data if name not in log_data]
    for name in history_only:
        log_data[name] = history_data[name]
    only = {view: names for view, names in ((View.HISTORY, history_only), (View.LOG, log_only))}
    only = {str(view): names for view, names in only.items() if names}
    if only:
        log_data[ONLY_KEY] = only


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_LENGTH else line[: SUMMARY_LENGTH - 1] + "…"
