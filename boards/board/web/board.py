"""The board (SPEC §7): server-rendered pages, a little JavaScript, live over a websocket."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from boards import protocol as p
from boards.board.live.fragments import page_fragments
from boards.board.selectors.board import (
    BOARD_COLUMNS,
    LANES,
    BoardFilters,
    board_header,
    board_state,
)
from boards.board.selectors.drawer import drawer_state
from boards.board.selectors.projects import project_summaries
from boards.board.selectors.replay import (
    board_at,
    replay_bounds,
    replay_steps,
    tasks_created_since,
)
from boards.board.web.columns import CardSlots
from boards.coordination.models.projects import Project
from boards.coordination.outbox import current_sequence
from boards.coordination.web.access import project_for_member, project_for_role


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "boards/project_list.html",
        {"summaries": project_summaries(request.user), "now": timezone.now()},
    )


def _board_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    filters = BoardFilters.from_query(request.GET)
    now = timezone.now()
    # Read the sequence before the rows: an event in between is applied twice, harmlessly
    # (cards are replaced by key), never lost.
    seq = current_sequence(project.pk)
    # The cards as their rendered fragments, shared by every process (issue #26).
    read_cards = functools.partial(page_fragments, project=project)
    state = board_state(project=project, filters=filters, now=now, read_cards=read_cards)
    lane_columns = [column for lane in state["lanes"] for column in lane.columns]
    cards = CardSlots()  # filled in once the page is drawn (`cards.fill`)
    for column in [*state["columns"], *lane_columns]:
        column.html = cards.column_html(column, filters)
    return {
        **state,
        "card_slots": cards,
        "seq": seq,
        "now": now,
        "task_states": p.TASK_STATES,
        "criticalities": p.CRITICALITIES,
        "lane_choices": tuple(LANES),
        # board.js reads it from the board's data-filters (JSON, escaped by the template).
        "live_filters_json": json.dumps(state["live_filters"], separators=(",", ":")),
    }


def board_page(
    request: HttpRequest, project: Project, role: str, *, open_task: str = "", status: int = 200
) -> HttpResponse:
    context = _board_context(request, project)
    context["role"] = role
    context["open_task"] = open_task
    # A filter the board refused is shown with the board, unfiltered by it (400).
    status = 400 if context["filters"].errors and status == 200 else status
    html = render_to_string("boards/board.html", context, request)
    return HttpResponse(context["card_slots"].fill(html), status=status)


@login_required
def board(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    if "at" in request.GET:
        return time_travel(request, project, role)
    return board_page(request, project, role)


def _moment(raw: str) -> datetime | None:
    """An ISO 8601 moment from the URL; a time without zone is UTC (what the board shows)."""
    try:
        moment = parse_datetime(raw.strip())
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


def time_travel(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    """The board as it was at `?at=<ISO 8601 time>`, rebuilt from events (issue #13). The
    slider steps from event to event (issue 25); `?part=board` answers the replayed columns
    alone, which the page swaps in place as it is scrubbed (no reload per step)."""
    now = timezone.now()
    part = request.GET.get("part") == "board"
    bounds = None if part else replay_bounds(project=project)
    moment = _moment(request.GET["at"])
    context: dict[str, Any] = {"project": project, "role": role, "now": now, "bounds": bounds}
    template = "boards/_replay_board.html" if part else "boards/time_travel.html"
    if moment is None:
        context["error"] = "Give the moment as an ISO 8601 time, e.g. 2026-11-24T09:30:00Z."
        return render(request, template, context, status=400)
    replayed = board_at(project=project, at=moment)
    by_status: dict[str, list] = {status: [] for status in BOARD_COLUMNS}
    for task in replayed:
        by_status.setdefault(task.status, []).append(task)
    context.update(
        moment=moment,
        columns=[(status, cards) for status, cards in by_status.items()],
        total=len(replayed),
        changed=sum(1 for task in replayed if task.changed),
        created_since=tasks_created_since(project=project, at=moment),
    )
    if not part:
        steps = replay_steps(project=project)
        # The step the slider starts on: the last event at or before the moment.
        shown = sum(1 for step in steps if step.at <= moment) - 1
        context.update(
            steps=steps,
            step=max(shown, 0),
            steps_json=json.dumps(
                [
                    {"at": _iso_exact(s.at), "label": f"{s.key} {s.action.replace('_', ' ')}"}
                    for s in steps
                ],
                separators=(",", ":"),
            ),
        )
    return render(request, template, context)


def _iso_exact(moment: datetime) -> str:
    """A moment to the microsecond, as `?at=` reads it back (an event's own time)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@login_required
def board_fragment(request: HttpRequest, slug: str) -> JsonResponse:
    """What a board needs to resynchronise after a gap or a reconnect."""
    project, _ = project_for_member(request, slug)
    context = _board_context(request, project)
    return JsonResponse(
        {
            "seq": context["seq"],
            "columns": context["card_slots"].fill(
                render_to_string("boards/_columns.html", context, request)
            ),
            "header": render_to_string("boards/_header.html", context, request),
            "agents": render_to_string("boards/_agents.html", context, request),
        }
    )


@login_required
def task_drawer(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    context = drawer_state(project=project, key=key, now=timezone.now())
    context["role"] = role  # which oversight forms the drawer offers (boards.board.web.actions)
    return render(request, "boards/_drawer.html", context)


@login_required
def board_controls(request: HttpRequest, slug: str) -> HttpResponse:
    """The board's control strip, fetched again by board.js when an event says the sprint,
    goal or pause state changed. No metrics: the controls do not show them."""
    project, role = project_for_role(request, slug, "member")
    context = {**board_header(project=project, metrics=False), "role": role}
    return render(request, "boards/oversight/_board_controls.html", context)
