"""Tenancy (SPEC §3): the one way to reach a project's rows, and who may see them.

"Missing" and "belongs to another project" are the same 404, whoever asks.
"""

from __future__ import annotations

from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Model, QuerySet

from boards.coordination.models.projects import Membership, Project, ProjectConfig
from boards.errors import NotFound

M = TypeVar("M", bound=Model)


def project_get(*, slug: str) -> Project:
    project = Project.objects.select_related("config").filter(slug=slug).first()
    if project is None:
        raise NotFound()
    return project


def in_project(queryset: QuerySet[M], project: Project, *, what: str = "", **lookup) -> M:
    """The one row of `queryset` in `project` matching `lookup`, or the tenant 404."""
    if any(isinstance(v, str) and "\x00" in v for v in lookup.values()):
        raise NotFound()  # no name holds a NUL (PostgreSQL text cannot)
    row = queryset.filter(project=project, **lookup).first()
    if row is None:
        raise NotFound()
    return row


def config_of(project: Project) -> ProjectConfig:
    """The project's config; seed 002's defaults for a project that has none yet (a read)."""
    try:
        return project.config
    except ProjectConfig.DoesNotExist:
        return ProjectConfig(project=project)


def human_role(user: AbstractBaseUser | None, project: Project) -> str | None:
    """The user's role in `project`; site staff act as admins everywhere (SPEC §3)."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return None
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return Membership.Role.ADMIN
    membership = Membership.objects.filter(project=project, user=user).first()
    return membership.role if membership else None


# The planning right (issue 25): `require_role(..., human=PLAN)` asks for it.
PLAN = "plan"


def may_plan(user: AbstractBaseUser | None, project: Project) -> bool:
    """Who plans as a person: project admins (and site staff), and members given the planner
    right; viewers only read."""
    role = human_role(user, project)
    if role == Membership.Role.ADMIN:
        return True
    if role != Membership.Role.MEMBER:
        return False
    return Membership.objects.filter(project=project, user=user, can_plan=True).exists()


def user_by_name_or_email(who: str) -> AbstractBaseUser | None:
    """An active account named by its username, or else its e-mail (case-insensitive); None
    when there is none, or when the e-mail is shared by several accounts (ambiguous)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.filter(is_active=True)
    user = users.filter(username=who).first()
    if user is not None or "@" not in who:
        return user
    matches = list(users.filter(email__iexact=who)[:2])
    return matches[0] if len(matches) == 1 else None


def project_members(*, project: Project) -> list[Membership]:
    """The project's memberships, admins first, then by username."""
    rank = {role: -value for role, value in Membership.RANK.items()}
    rows = list(Membership.objects.filter(project=project).select_related("user"))
    return sorted(rows, key=lambda m: (rank[m.role], m.user.get_username()))


def role_allows(role: str | None, needed: str) -> bool:
    return role is not None and Membership.RANK[role] >= Membership.RANK[needed]


def person_may(user: AbstractBaseUser | None, project: Project, role: str | None) -> bool:
    """Whether `user` holds `role` (or above) in `project`: a membership role, `PLAN` (the
    planner right), or None (agents only: no person)."""
    if role is None:
        return False
    if role == PLAN:
        return may_plan(user, project)
    return role_allows(human_role(user, project), role)


def projects_of(user: AbstractBaseUser) -> list[tuple[Project, str]]:
    """The projects a user sees, with the role held in each."""
    if user.is_staff or user.is_superuser:
        return [(project, Membership.Role.ADMIN) for project in Project.objects.all()]
    return [
        (m.project, m.role) for m in Membership.objects.filter(user=user).select_related("project")
    ]
