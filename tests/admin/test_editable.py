"""What the admin may edit: tenants, memberships, config, notes — each through its rule."""

from __future__ import annotations

import json

from django.forms.models import model_to_dict

from boards.coordination.models.projects import Membership, Project, ProjectConfig
from boards.coordination.models.records import CircuitBreaker, Event
from boards.coordination.models.tasks import HumanNote
from tests.admin.helpers import add_url, admin_url
from tests.factories import ProjectFactory, UserFactory


def _config_form(config, **changes):
    data = model_to_dict(config, exclude=["id", "project"])
    # As the change form shows them: JSON fields (retry_backoff, state_timeouts) as JSON text.
    data = {
        k: ("" if v is None else json.dumps(v) if isinstance(v, list | dict) else v)
        for k, v in data.items()
    }
    return {**data, **changes}


def test_adding_a_project_creates_its_config_and_breaker(admin_client, db):
    response = admin_client.post(add_url(Project), {"slug": "acme", "name": "Acme"})

    assert response.status_code == 302
    project = Project.objects.get(slug="acme")
    assert project.name == "Acme"
    assert project.created is not None
    assert ProjectConfig.objects.get(project=project).lease_duration == 300
    assert CircuitBreaker.objects.get(project=project).status == "OK"


def test_a_duplicate_project_slug_is_a_form_error(admin_client, board):
    slug = board.world.project.slug

    response = admin_client.post(add_url(Project), {"slug": slug, "name": "Again"})

    assert response.status_code == 200
    assert "slug" in response.context["adminform"].form.errors
    assert Project.objects.filter(slug=slug).count() == 1


def test_project_name_is_editable_and_slug_is_not(admin_client, board):
    project = board.world.project
    slug = project.slug

    response = admin_client.post(admin_url(project), {"slug": "renamed", "name": "New name"})

    assert response.status_code == 302
    project.refresh_from_db()
    assert (project.slug, project.name) == (slug, "New name")


def test_projects_cannot_be_deleted(admin_client, board):
    project = board.world.project

    response = admin_client.post(admin_url(project, "delete"), {"post": "yes"})

    assert response.status_code == 403
    assert Project.objects.filter(pk=project.pk).exists()


def test_config_edit_is_saved_and_logged(admin_client, admin_user, board):
    config = board.world.project.config

    response = admin_client.post(admin_url(config), _config_form(config, lease_duration=600))

    assert response.status_code == 302
    config.refresh_from_db()
    assert config.lease_duration == 600
    # Saved by the same service as the API and the settings page, under its event name.
    event = Event.objects.get(project=config.project, action="config_updated")
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert event.data == {"changes": {"lease_duration": {"old": 300, "new": 600}}}
    assert "300 → 600" in event.detail


def test_config_edit_runs_the_model_validation(admin_client, board):
    config = board.world.project.config
    before = model_to_dict(config)

    response = admin_client.post(
        admin_url(config), _config_form(config, heartbeat_interval=120, lease_duration=60)
    )

    assert response.status_code == 200
    assert "lease_duration" in response.context["adminform"].form.errors
    config.refresh_from_db()
    assert model_to_dict(config) == before
    assert not Event.objects.filter(action="config_updated").exists()


def test_config_has_no_add_and_no_delete(admin_client, board):
    config = board.world.project.config

    assert admin_client.get(add_url(ProjectConfig)).status_code == 403
    assert admin_client.post(admin_url(config, "delete"), {"post": "yes"}).status_code == 403
    assert ProjectConfig.objects.filter(pk=config.pk).exists()


def test_memberships_are_fully_editable(admin_client, board):
    project = board.world.project
    user = UserFactory()

    created = admin_client.post(
        add_url(Membership), {"project": project.pk, "user": user.pk, "role": "viewer"}
    )
    membership = Membership.objects.get(project=project, user=user)
    changed = admin_client.post(
        admin_url(membership), {"project": project.pk, "user": user.pk, "role": "member"}
    )
    membership.refresh_from_db()
    role_after_change = membership.role
    deleted = admin_client.post(admin_url(membership, "delete"), {"post": "yes"})

    assert (created.status_code, changed.status_code, deleted.status_code) == (302, 302, 302)
    assert role_after_change == "member"
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_a_human_note_is_added_through_the_service(admin_client, admin_user, board):
    task = board.claimed

    response = admin_client.post(
        add_url(HumanNote),
        {"project": task.project_id, "task": task.pk, "message": "Use the v2 endpoint"},
    )

    assert response.status_code == 302
    note = HumanNote.objects.get(message="Use the v2 endpoint")
    assert (note.task, note.author) == (task, admin_user)
    event = Event.objects.get(task=task, action="human_note")
    assert (event.actor_kind, event.actor_id, event.detail) == (
        "human",
        admin_user.username,
        "Use the v2 endpoint",
    )
    # Written once, as written: no change form, no delete.
    assert admin_client.post(admin_url(note), {"message": "edited"}).status_code == 403
    assert admin_client.post(admin_url(note, "delete"), {"post": "yes"}).status_code == 403
    note.refresh_from_db()
    assert note.message == "Use the v2 endpoint"


def test_a_human_note_for_another_projects_task_is_refused(admin_client, board):
    other = ProjectFactory()
    count = HumanNote.objects.count()

    response = admin_client.post(
        add_url(HumanNote),
        {"project": other.pk, "task": board.claimed.pk, "message": "Hello"},
    )

    assert response.status_code == 200
    assert "task" in response.context["adminform"].form.errors
    assert HumanNote.objects.count() == count
