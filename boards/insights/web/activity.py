"""The project activity feed (issue #13): `/p/<slug>/activity/?agent=&task=&action=&before=`.

Rendered by the server, newest first, one keyset page at a time
(boards.insights.selectors.activity).
Live: activity.js joins the board's websocket — the same consumer, so the same membership
check decides who may listen — and prepends the rows its `events.recorded` changes carry
(boards.board.live.render). After a gap or a reconnect it asks `rows?after=<newest id>` instead.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse

from agents.selectors import agent_list
from boards.coordination.outbox import current_sequence
from boards.coordination.web.access import project_for_member
from boards.insights.selectors.activity import activity, activity_filters, known_actions

ROWS_AFTER_LIMIT = 200  # more missed than this: the feed reloads instead


def row_urls(slug: str) -> dict[str, str]:
    """What a row links to (boards/_activity_row.html): reversed once, not once a row."""
    return {
        "board_url": reverse("board", args=[slug]),
        "activity_url": reverse("activity", args=[slug]),
    }


@login_required
def activity_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    filters = activity_filters(project=project, query=request.GET)
    context = {
        "project": project,
        "role": role,
        "filters": filters,
        "agents": agent_list(project=project).order_by("agent_id"),
        "actions": known_actions(project=project),
        "next_page": "activity",
        **row_urls(project.slug),
    }
    if filters.errors:
        return render(request, "boards/activity.html", context, status=400)
    # The sequence before the rows (as the board does): an event in between shows up twice at
    # worst, and activity.js drops a row whose id it already shows.
    context["seq"] = current_sequence(project.pk)
    context["page"] = activity(project=project, filters=filters)
    return render(request, "boards/activity.html", context)


@login_required
def activity_rows(request: HttpRequest, slug: str) -> JsonResponse:
    """Rows newer than `after` (with the page's filters), for a feed that missed messages."""
    project, _ = project_for_member(request, slug)
    filters = activity_filters(project=project, query=request.GET)
    if filters.errors or filters.after is None:
        reasons = list(filters.errors) or [("after", "required: the newest event id shown")]
        return JsonResponse(
            {"error": {"code": "invalid", "message": "; ".join(f"{n}: {m}" for n, m in reasons)}},
            status=400,
        )
    seq = current_sequence(project.pk)
    page = activity(project=project, filters=filters, limit=ROWS_AFTER_LIMIT)
    html = render_to_string(
        "boards/_activity_rows.html", {"events": page.events, **row_urls(project.slug)}, request
    )
    return JsonResponse({"seq": seq, "html": html, "truncated": page.older is not None})
