"""Tenancy (SPEC §3): the one way to reach a project's rows, and who may see them.

"Missing" and "belongs to another project" are the same 404, whoever asks.
"""

from __future__ import annotations

from functools import cache
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Model, QuerySet

from boards.coordination import rows
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


# `_role_without_membership`'s answer when only the user's membership can tell.
_ASK_MEMBERSHIP = "membership"


def _role_without_membership(user: AbstractBaseUser | None) -> str | None:
    """What the user's account alone says: no role (anonymous, inactive), admin (site staff act
    as admins everywhere, SPEC §3), or `_ASK_MEMBERSHIP`."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return None
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return Membership.Role.ADMIN
    return _ASK_MEMBERSHIP


def human_role(user: AbstractBaseUser | None, project: Project) -> str | None:
    """The user's role in `project`; site staff act as admins everywhere (SPEC §3)."""
    role = _role_without_membership(user)
    if role != _ASK_MEMBERSHIP:
        return role
    membership = Membership.objects.filter(project=project, user=user).first()
    return membership.role if membership else None


def project_with_role(
    *, slug: str, user: AbstractBaseUser | None
) -> tuple[Project | None, str | None]:
    """The project named `slug` with its config (`config_of` reads no more), and `user`'s role
    in it (`human_role`), in one statement: every page of a project asks both first."""
    role = _role_without_membership(user)
    asked = user.pk if role == _ASK_MEMBERSHIP else None
    with connection.cursor() as cursor:
        cursor.execute(_project_with_role_sql(), [asked, slug])
        values = cursor.fetchone()
    if values is None:
        return None, None
    width = rows.width(Project)
    project = rows.from_row(Project, values[:width])
    config_values = values[width:-1]
    config = rows.from_row(ProjectConfig, config_values) if config_values[0] is not None else None
    # What `select_related("config")` leaves: no query on `project.config`, None raising
    # DoesNotExist as without a row.
    Project.config.related.set_cached_value(project, config)
    if config is not None:
        ProjectConfig.project.field.set_cached_value(config, project)
    return project, values[-1] if role == _ASK_MEMBERSHIP else role


@cache
def _project_with_role_sql() -> str:
    quote = connection.ops.quote_name
    table = {m: quote(m._meta.db_table) for m in (Project, ProjectConfig, Membership)}
    return (
        f"SELECT {rows.select_list(Project, 'p')}, {rows.select_list(ProjectConfig, 'c')}, m.role"
        f" FROM {table[Project]} p LEFT JOIN {table[ProjectConfig]} c ON c.project_id = p.id"
        f" LEFT JOIN LATERAL (SELECT role FROM {table[Membership]} WHERE project_id = p.id"
        " AND user_id = %s ORDER BY id LIMIT 1) m ON TRUE WHERE p.slug = %s"
    )


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
