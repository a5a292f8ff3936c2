"""Access to a project's pages: a non-member gets the 404 of a missing project (SPEC §3)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from boards.coordination.models.projects import Membership, Project
from boards.coordination.selectors.access import person_may, project_with_role, role_allows


def project_for_member(request: HttpRequest, slug: str) -> tuple[Project, str]:
    """The project and the user's role; a non-member gets the same 404 as a missing project."""
    if "\x00" in slug:
        raise Http404("No such project.")
    project, role = project_with_role(slug=slug, user=request.user)
    if project is None or role is None:
        raise Http404("No such project.")
    return project, role


def project_for_role(request: HttpRequest, slug: str, role: str | None) -> tuple[Project, str]:
    """The project when the user holds at least `role` in it (below it: 403): a membership
    role, `PLAN` (the planner right) or None (an agents' operation: no person)."""
    project, current = project_for_member(request, slug)
    if role in Membership.Role.values:
        allowed = role_allows(current, role)  # the role in hand: no second query
    else:
        allowed = person_may(request.user, project, role)
    if not allowed:
        raise PermissionDenied(f"this needs the {role} role in project {project.slug}")
    return project, current
