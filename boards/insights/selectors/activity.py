"""The project activity feed (issue #13): the event log, newest first, by keyset pages.

Keyset on `Event.id` (`before=<id>` for older pages, `after=<id>` for what came since), so a
page costs the same at event 50 as at event 500,000 and a row never shows twice when new
events arrive while someone pages. Filters are checked here, once, for the page and for the
live rows it fetches after a gap: an unknown agent, task or a malformed action is refused
with the reason (the page answers 400), never passed to the database as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agents.models import Agent
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task

PAGE_SIZE = 50
# Seed 002 action names, and the words agents log under: lower-case, digits, `_`, `-`, `.`.
ACTION_RE = re.compile(r"[a-z][a-z0-9_.\-]{0,63}")
MAX_ID = 2**63 - 1  # bigint


@dataclass(frozen=True)
class ActivityFilters:
    agent: str = ""
    task: str = ""
    action: str = ""
    before: int | None = None
    after: int | None = None
    errors: tuple[tuple[str, str], ...] = ()
    task_id: int | None = field(default=None, compare=False)

    @property
    def query(self) -> dict[str, str]:
        """The filters as URL parameters (for links to the next page)."""
        pairs = (("agent", self.agent), ("task", self.task), ("action", self.action))
        return {name: value for name, value in pairs if value}


def _event_id(raw: str, name: str, errors: list[tuple[str, str]]) -> int | None:
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) <= MAX_ID:
        errors.append((name, "an event id, a positive whole number"))
        return None
    return int(raw)


def activity_filters(*, project: Project, query: Any) -> ActivityFilters:
    """The feed's filters from a query dict, checked against the project."""
    errors: list[tuple[str, str]] = []
    agent = query.get("agent", "").strip()
    task = query.get("task", "").strip()
    action = query.get("action", "").strip()
    task_id = None
    if agent and (
        "\x00" in agent or not Agent.objects.filter(project=project, agent_id=agent).exists()
    ):
        errors.append(("agent", f"no agent {agent[:64]!r} in this project"))
    if task:
        row = (
            None
            if "\x00" in task
            else Task.objects.filter(project=project, key=task).values_list("id", flat=True).first()
        )
        if row is None:
            errors.append(("task", f"no task {task[:64]!r} in this project"))
        task_id = row
    if action and not ACTION_RE.fullmatch(action):
        errors.append(("action", "an action name: lower-case letters, digits, _ . -"))
    before = _event_id(query.get("before", "").strip(), "before", errors)
    after = _event_id(query.get("after", "").strip(), "after", errors)
    return ActivityFilters(
        agent=agent,
        task=task,
        action=action,
        before=before,
        after=after,
        errors=tuple(errors),
        task_id=task_id,
    )


@dataclass(frozen=True)
class ActivityPage:
    events: list[Event]
    older: int | None  # `before=` of the next (older) page, None on the last one


def activity(*, project: Project, filters: ActivityFilters, limit: int = PAGE_SIZE) -> ActivityPage:
    """One page of the project's events, newest first, narrowed by valid `filters`.

    With `after`, the events since that id (oldest of them dropped past `limit`: a feed that
    missed that many reloads instead).
    """
    events = Event.objects.filter(project=project).select_related("task")
    if filters.agent:
        events = events.filter(actor_kind=Event.ActorKind.AGENT, actor_id=filters.agent)
    if filters.task_id is not None:
        events = events.filter(task_id=filters.task_id)
    if filters.action:
        events = events.filter(action=filters.action)
    if filters.before is not None:
        events = events.filter(id__lt=filters.before)
    if filters.after is not None:
        events = events.filter(id__gt=filters.after)
    rows = list(events.order_by("-id")[: limit + 1])
    older = rows[limit - 1].id if len(rows) > limit else None
    return ActivityPage(events=rows[:limit], older=older)


def known_actions(*, project: Project) -> list[str]:
    """The action names the filter offers: the server's own (boards.protocol.Action)."""
    from boards.protocol import Action

    return sorted(a.value for a in Action)
