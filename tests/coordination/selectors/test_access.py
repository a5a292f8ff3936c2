"""Tenancy reads (`selectors.access`): a project with the asker's role in one statement, the
same answer as the project's ORM read and `human_role`."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.selectors.access import config_of, human_role, project_with_role
from tests.factories import T0, ProjectFactory, UserFactory, member

pytestmark = pytest.mark.django_db


def _people(project):
    other = ProjectFactory()
    return {
        "anonymous": AnonymousUser(),
        "viewer": member(project, "viewer"),
        "member": member(project, "member"),
        "admin": member(project, "admin"),
        "admin of another project": member(other, "admin"),
        "no membership": UserFactory(),
        "staff": UserFactory(is_staff=True),
        "superuser": UserFactory(is_superuser=True),
        "inactive admin": member(project, "admin", is_active=False),
        "inactive staff": UserFactory(is_staff=True, is_active=False),
    }


def _fields(row) -> dict:
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}


def test_the_project_and_role_are_the_orms_and_human_roles_in_one_statement():
    configured = ProjectFactory()
    bare = Project.objects.create(slug="bare", name="Bare", created=T0)  # no config row
    people = _people(configured)
    roles = {}
    for project in (configured, bare):
        expected = Project.objects.select_related("config").get(pk=project.pk)
        for who, user in people.items():
            with CaptureQueriesContext(connection) as queries:
                found, role = project_with_role(slug=project.slug, user=user)
                config = config_of(found)
            assert len(queries) == 1, who
            assert role == human_role(user, expected), (project.slug, who)
            roles[project.slug, who] = role
            assert _fields(found) == _fields(expected)
            assert _fields(config) == _fields(config_of(expected))
            assert (config.pk is None) == (project is bare)
    assert roles["bare", "staff"] == "admin" and roles["bare", "member"] is None
    assert roles[configured.slug, "viewer"] == "viewer"
    assert roles[configured.slug, "inactive admin"] is None
    found, _ = project_with_role(slug="bare", user=people["staff"])
    with pytest.raises(ProjectConfig.DoesNotExist):
        _ = found.config


def test_a_missing_project_is_none_for_everyone():
    for user in _people(ProjectFactory()).values():
        assert project_with_role(slug="missing", user=user) == (None, None)
