"""Projects (the tenant), memberships, configuration, and pausing (SPEC §3, §7)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from boards import protocol as p
from boards.coordination.models.projects import Membership, Project, ProjectConfig
from boards.coordination.models.records import CircuitBreaker
from boards.coordination.selectors.access import user_by_name_or_email
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import clean_text, require_known_names
from boards.coordination.services.locking import config_for_update, lock_project
from boards.coordination.services.webhook_address import check_webhook_secret, check_webhook_url
from boards.errors import Forbidden, ProtocolValidationError, validation_error
from boards.protocol import Action
from liza_site import key_generation


@transaction.atomic
def project_create(*, slug: str, name: str, now: datetime) -> Project:
    """A new tenant with its seed 002 default config and an OK circuit breaker."""
    if Project.objects.filter(slug=slug).exists():
        raise ProtocolValidationError("slug", f"project {slug!r} already exists")
    project = Project(slug=slug, name=name or slug, created=now)
    try:
        project.full_clean()
    except ValidationError as exc:
        raise validation_error(exc.message_dict) from exc
    project.save()
    ProjectConfig.objects.create(project=project)
    CircuitBreaker.objects.create(project=project)
    return project


def project_open(*, actor: Actor, slug: str, name: str, now: datetime) -> Project:
    """Site staff open a new project from the board (issue 25); staff administer every
    project (SPEC §3), so no membership is made. Audited as the project's first event."""
    if not (getattr(actor, "is_staff", False) or getattr(actor, "is_superuser", False)):
        raise Forbidden("only site staff create projects")
    slug = clean_text(slug, "slug", max_length=64)
    name = clean_text(name, "name", required=False, max_length=200)
    with transaction.atomic():
        project = project_create(slug=slug, name=name, now=now)
        record_event(
            project=project,
            actor=actor,
            action=Action.PROJECT_CREATED,
            now=now,
            detail=f"project {project.slug} ({project.name}) created",
        )
    return project


@people(ADMIN)
@records_refusals
def project_rename(*, project: Project, actor: Actor, name: str, now: datetime) -> Project:
    """A new display name (the slug is fixed: it is in every URL, key and export)."""
    attempt = Attempt(project, actor, "project_rename", now)
    require_role(attempt, agent_roles=())
    name = clean_text(name, "name", max_length=200)
    with transaction.atomic():
        locked = lock_project(project)
        if locked.name != name:
            old, locked.name = locked.name, name
            locked.save(update_fields=["name"])
            attempt.record(
                action=Action.CONFIG_UPDATED,
                detail=f"project name {old} → {name}",
                data={"changes": {"name": {"old": old, "new": name}}},
            )
    project.name = name
    return locked


@people(ADMIN)
@records_refusals
def membership_set(
    *,
    project: Project,
    user: AbstractBaseUser,
    role: str,
    actor: Actor,
    now: datetime,
    can_plan: bool | None = None,
) -> Membership:
    """Give `user` a role in `project` (SPEC §3) and, for a member, the planner right (issue 25;
    None keeps it as it is, and a role other than member drops it), audited."""
    attempt = Attempt(project, actor, "membership_set", now)
    require_role(attempt, agent_roles=(), system=True)
    if role not in Membership.Role.values:
        raise ProtocolValidationError("role", f"one of {', '.join(Membership.Role.values)}")
    if can_plan is not None and not isinstance(can_plan, bool):
        raise ProtocolValidationError("can_plan", "true or false")
    if can_plan and role != Membership.Role.MEMBER:
        raise ProtocolValidationError(
            "can_plan", "the planner right is for members (admins always plan, viewers read)"
        )
    with transaction.atomic():
        membership = (
            Membership.objects.select_for_update().filter(project=project, user=user).first()
        )
        old = membership.role if membership else None
        old_plan = membership.can_plan if membership else False
        plans = (old_plan if can_plan is None else can_plan) and role == Membership.Role.MEMBER
        if membership is None:
            membership = Membership.objects.create(
                project=project, user=user, role=role, can_plan=plans
            )
        elif (old, old_plan) != (role, plans):
            membership.role, membership.can_plan = role, plans
            membership.save(update_fields=["role", "can_plan"])
        if (old, old_plan) != (role, plans):
            shown = f"{role} (planner)" if plans else role
            was = f"{old} (planner)" if old_plan else (old or "no role")
            attempt.record(
                action=Action.MEMBERSHIP_SET,
                detail=f"{user.get_username()}: {was} → {shown}",
                data={
                    "user": user.get_username(),
                    "old": old,
                    "role": role,
                    "can_plan": plans,
                },
            )
    return membership


@people(ADMIN)
@records_refusals
def membership_invite(
    *, project: Project, actor: Actor, who: str, role: str, now: datetime, can_plan: bool = False
) -> Membership:
    """A project admin gives an existing account (named by username or e-mail) a role in the
    project, or changes it (issue 25). Accounts themselves are made by site staff."""
    require_role(Attempt(project, actor, "membership_invite", now), agent_roles=())
    who = clean_text(who, "who", max_length=254)
    user = user_by_name_or_email(who)
    if user is None:
        raise ProtocolValidationError(
            "who", f"no single active account has the username or e-mail {who!r}"
        )
    return membership_set.__wrapped__(
        project=project, user=user, role=role, actor=actor, now=now, can_plan=can_plan
    )


@people(ADMIN)
@records_refusals
def membership_remove(*, membership: Membership, actor: Actor, now: datetime) -> None:
    """Take a user's access to a project away (SPEC §3), audited."""
    project = membership.project
    attempt = Attempt(project, actor, "membership_remove", now)
    require_role(attempt, agent_roles=(), system=True)
    with transaction.atomic():
        username = membership.user.get_username()
        old = membership.role
        Membership.objects.filter(pk=membership.pk).delete()
        attempt.record(
            action=Action.MEMBERSHIP_SET,
            detail=f"{username}: {old} → no role",
            data={"user": username, "old": old, "role": None},
        )


@people(ADMIN)
@records_refusals
def project_pause(*, project: Project, actor: Actor, reason: str, now: datetime) -> Project:
    """Seed 000 PAUSE: claims are refused (`paused`), heartbeats answer stop / exit 42."""
    attempt = Attempt(project, actor, "project_pause", now)
    require_role(attempt, agent_roles=())
    reason = clean_text(reason, "reason", max_length=500)
    with transaction.atomic():
        locked = lock_project(project)
        if locked.is_paused:
            raise attempt.conflict(
                f"project {project.slug} is already paused since "
                f"{p.format_timestamp(locked.paused_at)}: {locked.paused_reason}",
                details={"paused": True},
            )
        _store_pause(locked, paused_at=now, reason=reason)
        attempt.record(action="project_paused", detail=reason)
    project.paused_at, project.paused_reason = locked.paused_at, locked.paused_reason
    return locked


@people(ADMIN)
@records_refusals
def project_resume(*, project: Project, actor: Actor, now: datetime) -> Project:
    """Lift the pause: agents may claim again."""
    attempt = Attempt(project, actor, "project_resume", now)
    require_role(attempt, agent_roles=())
    with transaction.atomic():
        locked = lock_project(project)
        if not locked.is_paused:
            raise attempt.conflict(
                f"project {project.slug} is not paused", details={"paused": False}
            )
        since, reason = locked.paused_at, locked.paused_reason
        _store_pause(locked, paused_at=None, reason="")
        attempt.record(
            action="project_resumed",
            detail=f"resumed after pause since {p.format_timestamp(since)} ({reason})",
        )
    project.paused_at, project.paused_reason = None, ""
    return locked


def _store_pause(locked: Project, *, paused_at: datetime | None, reason: str) -> None:
    """Pause or resume the locked row; agents see it at once, not when their cached project row
    expires (agents.keycache)."""
    locked.paused_at = paused_at
    locked.paused_reason = reason
    locked.save(update_fields=["paused_at", "paused_reason"])
    key_generation.bump()


CONFIG_FIELDS: tuple[str, ...] = tuple(
    f.name for f in ProjectConfig._meta.concrete_fields if f.name not in ("id", "project")
)


@people(ADMIN)
@records_refusals
def config_update(*, project: Project, actor: Actor, now: datetime, **fields: Any) -> ProjectConfig:
    """Edit the project's configuration; the model's own rules decide (400 naming the field)."""
    attempt = Attempt(project, actor, "config_update", now)
    require_role(attempt, agent_roles=())
    require_known_names(fields, CONFIG_FIELDS, what="config setting", field_if_none="config")
    for name, value in fields.items():
        if isinstance(value, bool):
            raise ProtocolValidationError(name, "not a boolean")
    config_for_update(project)  # created with the defaults if the project has none yet
    with transaction.atomic():
        config = ProjectConfig.objects.select_for_update().get(project=project)
        old = {name: getattr(config, name) for name in fields}
        for name, value in fields.items():
            if value is None and name in ("escalation_webhook", "webhook_secret"):
                value = ""  # null in state.yaml, blank here
            setattr(config, name, value)
        # Django's ValidationError names the field (400); the API and the settings form map it.
        # The field rules first: the model's clean() compares values it assumes are numbers.
        try:
            config.clean_fields(exclude=["project"])
            config.clean()
        except ValidationError as exc:
            raise validation_error(exc.message_dict) from exc
        diff = {name: (old[name], getattr(config, name)) for name in fields}
        diff = {name: pair for name, pair in diff.items() if pair[0] != pair[1]}
        if diff.get("escalation_webhook", ("", ""))[1]:
            check_webhook_url(config.escalation_webhook)  # a public address (SSRF)
        if "webhook_secret" in diff:
            check_webhook_secret(config.webhook_secret)
            # Write-only: the audit says that it changed, never what it is.
            diff["webhook_secret"] = tuple("set" if v else "" for v in diff["webhook_secret"])
        if diff:
            config.save(update_fields=list(diff))
            key_generation.bump()  # the hot path's cached config row (agents.keycache)
            # The log never holds a webhook's token: its URLs only redacted (p.redact_url).
            changes = {
                n: (
                    {"old": p.redact_url(o), "new": p.redact_url(v)}
                    if n in p.SECRET_URL_SETTINGS
                    else {"old": o, "new": v}
                )
                for n, (o, v) in diff.items()
            }
            attempt.record(
                action="config_updated",
                detail=p.config_change_detail(changes),
                data={"changes": changes},
            )
    project.config = config
    return config
