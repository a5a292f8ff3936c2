"""The board UI (SPEC §7): server-rendered pages, a little JavaScript, live over a websocket."""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from agents.models import Agent
from boards import protocol as p
from boards import selectors
from boards.events import AGENT, EVENT_TYPES, SPRINT, TASK, current_sequence
from boards.models import Handoff, Membership, Project, Review, Task
from boards.services.common import config_of, human_role


def project_for_member(request: HttpRequest, slug: str) -> tuple[Project, str]:
    """The project and the user's role; a non-member gets the same 404 as a missing project."""
    project = Project.objects.select_related("config").filter(slug=slug).first()
    role = human_role(request.user, project) if project is not None else None
    if role is None:
        raise Http404("No such project.")
    return project, role


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    if request.user.is_staff or request.user.is_superuser:
        rows = [(project, Membership.Role.ADMIN) for project in Project.objects.all()]
    else:
        rows = [
            (m.project, m.role)
            for m in Membership.objects.filter(user=request.user).select_related("project")
        ]
    return render(request, "boards/project_list.html", {"rows": rows})


@functools.lru_cache(maxsize=8192)
def card_html(card: selectors.Card) -> str:
    """A card's markup (`boards/_card.html`), for the page and for live events.

    A card is an immutable value and the template reads nothing else, so each distinct card is
    rendered once per process: a board view re-renders only the cards that changed since the
    last one. The template engine costs ~0.1 ms a card, most of the page at 500 cards.
    """
    return render_to_string("boards/_card.html", {"card": card})


def _board_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    filters = selectors.BoardFilters.from_query(request.GET)
    now = timezone.now()
    # Read the sequence before the rows: an event in between is applied twice, harmlessly
    # (cards are replaced by key), never lost.
    seq = current_sequence(project.pk)
    state = selectors.board_state(project=project, filters=filters, now=now)
    for column in state["columns"]:
        # Joined template output, escaped when each card was rendered.
        column.cards_html = mark_safe("".join(card_html(card) for card in column.cards))
    return {
        **state,
        "seq": seq,
        "now": now,
        "task_states": p.TASK_STATES,
        "criticalities": p.CRITICALITIES,
    }


@login_required
def board(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    context = _board_context(request, project)
    context["role"] = role
    return render(request, "boards/board.html", context)


@login_required
def board_fragment(request: HttpRequest, slug: str) -> JsonResponse:
    """What a board needs to resynchronise after a gap or a reconnect."""
    project, _ = project_for_member(request, slug)
    context = _board_context(request, project)
    return JsonResponse(
        {
            "seq": context["seq"],
            "columns": render_to_string("boards/_columns.html", context, request),
            "header": render_to_string("boards/_header.html", context, request),
            "agents": render_to_string("boards/_agents.html", context, request),
        }
    )


@login_required
def task_drawer(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    task = selectors.card_tasks(
        Task.objects.filter(project=project, key=key).select_related("goal")
    ).first()
    if task is None:
        raise Http404("No such task.")
    now = timezone.now()
    config = config_of(project)
    context = {
        "project": project,
        "task": task,
        "card": selectors.card_for(task, config, now),
        "history": selectors.task_history(task=task),
        "time_in_states": selectors.time_in_states(task=task, now=now),
        "notes": task.human_notes.select_related("author").order_by("timestamp", "id"),
        "discoveries": project.discoveries.filter(during=task.key).order_by("created", "id"),
        "anomalies": task.anomalies.order_by("timestamp", "id"),
        "handoff": Handoff.objects.filter(task=task).first(),
        "depends_on": task.depends_on.order_by("key"),
        # Every round, closed ones too: `task.reviews` is the card's prefetch (open reviews only).
        "reviews": Review.objects.filter(project=project, task=task).order_by("claimed_at", "id"),
        "now": now,
        "role": role,  # which oversight forms the drawer offers (boards/oversight_views.py)
    }
    return render(request, "boards/_drawer.html", context)


# -- live events: what a websocket process sends for a message of boards.events ---------------


def render_changes(project_id: int, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    project = Project.objects.select_related("config").filter(pk=project_id).first()
    if project is None:
        return []
    now = timezone.now()
    config = config_of(project)
    out: list[dict[str, Any]] = []
    for change in changes:
        kind, object_id = change["kind"], change["id"]
        if kind == TASK:
            # The board's own card path (plain rows), then the goal and sprints a board
            # filters live cards by: four queries.
            task = Task.objects.filter(pk=object_id, project=project)
            cards = selectors.board_cards(task, config=config, now=now)
            if not cards:
                continue
            card = cards[0]
            scope = list(
                task.values_list("goal__goal_id", "planned_in__sprint_id", "stretch_in__sprint_id")
            )
            goal = scope[0][0] if scope else None
            sprints = sorted({s for _, *ids in scope for s in ids if s})
            out.append(
                {
                    "type": EVENT_TYPES[TASK],
                    "task": {
                        "key": card.key,
                        "status": card.status,
                        "priority": card.priority,
                        "criticality": card.criticality,
                        "assigned_to": card.assigned_to,
                        "description": card.description,
                        "goal": goal,
                        "sprints": sprints,
                    },
                    "html": card_html(card),
                }
            )
        elif kind == AGENT:
            agent = (
                Agent.objects.filter(pk=object_id, project=project)
                .select_related("current_task")
                .first()
            )
            if agent is None:
                continue
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
                    "html": render_to_string(
                        "boards/_header.html", selectors.board_header(project=project)
                    ),
                }
            )
    return out
