"""factory_boy factories; domain rows are made through the services, never by hand-set status."""

from __future__ import annotations

from datetime import UTC, datetime

import factory
from django.contrib.auth import get_user_model

from agents.models import Agent
from agents.services import agent_register
from boards.coordination.models.projects import Membership, Project
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import membership_set, project_create

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.test")
    password = factory.django.Password("pw-for-tests")


class ProjectFactory(factory.Factory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    created = T0

    @classmethod
    def _create(cls, model_class, slug, name, created, **kwargs):
        return project_create(slug=slug, name=name, now=created)


def member(project: Project, role: str = Membership.Role.ADMIN, **user_kwargs):
    """A user with `role` in `project`."""
    user = UserFactory(**user_kwargs)
    membership_set(project=project, user=user, role=role, actor=SYSTEM, now=T0)
    return user


def register(project: Project, agent_id: str, *, now: datetime = T0, **fields) -> Agent:
    """Register an agent through the identity protocol (role from the id's prefix)."""
    role = {"planner": "planner", "coder": "coder", "code": "code_reviewer"}[agent_id.split("-")[0]]
    agent = agent_register(project=project, agent_id=agent_id, role=role, now=now)
    if fields:
        Agent.objects.filter(pk=agent.pk).update(**fields)
        agent.refresh_from_db()
    return agent
