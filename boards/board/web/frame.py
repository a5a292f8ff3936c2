"""What every page in the oversight frame (templates/boards/oversight/page.html) is given: the
project, the person's role, the page's name (the project nav marks it, a form posts it back as
`next`) and its canonical address (the address bar shows it after a form's POST answered with
the page)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from boards.coordination.models.projects import Project
from boards.coordination.web.access import project_for_member, project_for_role

Draw = Callable[[HttpRequest, Project, str], HttpResponse]


def oversight_page(
    request: HttpRequest,
    page: str,
    project: Project | None,
    role: str,
    /,
    *,
    template: str = "",
    status: int = 200,
    **context: Any,
) -> HttpResponse:
    """The page named `page` (its URL name) of `project`, drawn by `template`, by default
    templates/boards/oversight/<page>.html; without a project (site staff's pages across
    projects), the page's own address."""
    canonical = reverse(page) if project is None else reverse(page, args=[project.slug])
    return render(
        request,
        template or f"boards/oversight/{page}.html",
        {
            **context,
            "project": project,
            "role": role,
            "next_page": page,
            "canonical_url": canonical,
        },
        status=status,
    )


def page_view(draw: Draw, *, role: str | None = None):
    """The view (by the project's slug) of the page `draw(request, project, role)` draws, for a
    member of the project, or one holding at least `role`: anyone else gets the access guard's
    404 (not a member) or 403 (below `role`). A form refused on the page draws it again
    (`boards.board.web.pages.render_page`), so the drawing is a function of its own."""

    @login_required
    @wraps(draw)
    def view(request: HttpRequest, slug: str) -> HttpResponse:
        if role is None:
            project, current = project_for_member(request, slug)
        else:
            project, current = project_for_role(request, slug, role)
        return draw(request, project, current)

    return view
