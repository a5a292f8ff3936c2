"""Access to a project's pages: a non-member gets the 404 of a missing project (SPEC §3)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from boards.coordination.models.projects import Project
from boards.coordination.selectors.access import human_role, role_allows


def project_for_member(request: HttpRequest, slug: str) -> tuple[Project, str]:
    """The project and the user's role; a non-member gets the same 404 as a missing project."""
    if "\x00" in slug:
        raise Http404("No such project.")
    project = Project.objects.select_related("config").filter(slug=slug).first()
    role = human_role(request.user, project) if project is not None else None
    if role is None:
        raise Http404("No such project.")
    return project, role


def project_for_role(request: HttpRequest, slug: str, role: str) -> tuple[Project, str]:
    """The project when the user holds at least `role` in it (below it: 403)."""
    project, current = project_for_member(request, slug)
    if not role_allows(current, role):
        raise PermissionDenied(f"this needs the {role} role in project {project.slug}")
    return project, current
