"""What a live board message becomes on the wire: cards, agent rows and the header.

Rendered once per websocket process per message (boards.board.live.consumers), whatever the number
of open boards. A task's card is its shared fragment (`boards.board.live.fragments`): rendered
once per change, in whichever process needs it first, and reused by the board page.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent, Run
from boards.board.live.fragments import card_fragment, project_salt
from boards.board.selectors import board as board_selectors
from boards.board.selectors.cards import versioned_cards
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.outbox import AGENT, EVENT, EVENT_TYPES, RUN, SPRINT, TASK
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import agent_availability


def task_changed(project: Project, task_id: int, *, config, now) -> dict[str, Any] | None:
    """A task's live message: its card as its shared fragment (rendered here only if no
    process did yet, then reused by every browser and the next board page), and the goal and
    sprints a board filters live cards by. A constant handful of queries."""
    task = Task.objects.filter(pk=task_id, project=project)
    cards = versioned_cards(task, config=config, now=now, salt=project_salt(project.pk, config))
    if not cards:
        return None
    version, card = cards[0]
    scope = list(
        task.values_list("goal__goal_id", "planned_in__sprint_id", "stretch_in__sprint_id")
    )
    html = card_fragment(version=version, card=card)
    return {
        "type": EVENT_TYPES[TASK],
        "task": {
            "key": card.key,
            "status": card.status,
            "priority": card.priority,
            "criticality": card.criticality,
            "assigned_to": card.assigned_to,
            "description": card.description,
            "goal": scope[0][0] if scope else None,
            "sprints": sorted({s for _, *ids in scope for s in ids if s}),
        },
        "html": html,
    }


def render_changes(project_id: int, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    project = Project.objects.select_related("config").filter(pk=project_id).first()
    if project is None:
        return []
    now = timezone.now()
    config = config_of(project)
    out: list[dict[str, Any]] = []
    event_ids: list[int] = []
    for change in changes:
        kind, object_id = change["kind"], change["id"]
        if kind == EVENT:
            event_ids.append(object_id)
        elif kind == TASK:
            message = task_changed(project, object_id, config=config, now=now)
            if message is not None:
                out.append(message)
        elif kind == AGENT:
            agent = (
                Agent.objects.filter(pk=object_id, project=project)
                .select_related("current_task")
                .first()
            )
            if agent is None:
                continue
            agent.availability = agent_availability(agent, now)
            out.append(
                {
                    "type": EVENT_TYPES[AGENT],
                    "agent": {"agent_id": agent.agent_id, "status": agent.status},
                    "html": render_to_string("boards/_agent.html", {"agent": agent, "now": now}),
                }
            )
        elif kind == SPRINT:
            out.append(
                {
                    "type": EVENT_TYPES[SPRINT],
                    # Only a change of the sprint, goal or pause state moves the header's
                    # controls: boards fetch them again only then (board.js).
                    "controls": bool(change.get("controls")),
                    "html": render_to_string(
                        "boards/_header.html", board_selectors.board_header(project=project)
                    ),
                }
            )
        elif kind == RUN:
            run = Run.objects.filter(pk=object_id, project=project).select_related("task").first()
            if run is not None:
                out.append(run_output(run))
    if event_ids:
        out.append(events_recorded(project, event_ids))
    return out


# What a live run message carries of the output: the drawer shows the tail (the whole stored
# output is on the run's own page and the API).
RUN_OUTPUT_LIVE_CHARS = 8000


def run_output(run: Run) -> dict[str, Any]:
    """A running run's state and the tail of its output, for an open drawer (runs.js)."""
    return {
        "type": EVENT_TYPES[RUN],
        "run": {
            "id": run.pk,
            "task": run.task.key if run.task else None,
            "state": run.state,
            "reason": run.reason,
            "duration": run.duration_text,
        },
        "output": run.output[-RUN_OUTPUT_LIVE_CHARS:],
    }


# One message can carry thousands of events (a bulk rescope, an import through the services):
# the feed gets the newest ones and, past this many, fetches what it missed itself.
EVENTS_PER_MESSAGE = 50


def events_recorded(project: Project, event_ids: list[int]) -> dict[str, Any]:
    """The activity feed's rows for these events (boards/insights/web/activity.py), newest first,
    with what activity.js filters them by. One query."""
    rows = (
        Event.objects.filter(project=project, pk__in=event_ids)
        .select_related("task")
        .order_by("-id")[:EVENTS_PER_MESSAGE]
    )
    urls = {
        "board_url": reverse("board", args=[project.slug]),
        "activity_url": reverse("activity", args=[project.slug]),
    }
    return {
        "type": EVENT_TYPES[EVENT],
        "omitted": max(0, len(event_ids) - EVENTS_PER_MESSAGE),
        "events": [
            {
                "id": e.id,
                "actor": e.actor_id if e.actor_kind == Event.ActorKind.AGENT else "",
                "task": e.task.key if e.task else "",
                "action": e.action,
                "html": render_to_string("boards/_activity_row.html", {"e": e, **urls}).strip(),
            }
            for e in rows
        ],
    }
