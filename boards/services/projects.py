"""Projects, memberships and configuration (SPEC §3)."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from boards.models import CircuitBreaker, Membership, Project, ProjectConfig


@transaction.atomic
def project_create(*, slug: str, name: str, now: datetime) -> Project:
    """A new tenant with its seed 002 default config and an OK circuit breaker."""
    if Project.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"project {slug!r} already exists"})
    project = Project(slug=slug, name=name or slug, created=now)
    project.full_clean()
    project.save()
    ProjectConfig.objects.create(project=project)
    CircuitBreaker.objects.create(project=project)
    return project


def membership_set(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    if role not in Membership.Role.values:
        raise ValidationError({"role": f"one of {', '.join(Membership.Role.values)}"})
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership
