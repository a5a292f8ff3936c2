"""What the admin must never write: the log, status, and domain rows outside the services."""

from __future__ import annotations

import pytest
from django.forms.models import model_to_dict

from agents.models import Agent
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import (
    Alert,
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import Discovery, Handoff, Review, Task
from boards.watch.models import WebhookDelivery
from tests.admin.helpers import add_url, admin_url, changelist_url

APPEND_ONLY = [Event, SpecChange, WebhookDelivery]
# Created and moved only by services: no add, no delete, and (but Agent) no change form.
SERVICE_MANAGED = [
    Goal,
    Sprint,
    Task,
    Review,
    Discovery,
    Handoff,
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Alert,
]


def _row_as_saved(obj):
    obj.refresh_from_db()
    return model_to_dict(obj)


@pytest.mark.parametrize("model", APPEND_ONLY, ids=lambda m: m.__name__)
def test_the_log_cannot_be_added_changed_or_deleted_even_by_a_superuser(admin_client, board, model):
    obj = model.objects.filter(project=board.world.project).order_by("id").first()
    before = _row_as_saved(obj)
    forged = {**before, "detail": "forged", "change": "forged", "action": "forged"}
    forged = {k: v for k, v in forged.items() if v is not None and not isinstance(v, dict)}

    assert admin_client.get(add_url(model)).status_code == 403
    assert admin_client.post(add_url(model), forged).status_code == 403
    assert admin_client.post(admin_url(obj), forged).status_code == 403
    assert admin_client.get(admin_url(obj, "delete")).status_code == 403
    assert admin_client.post(admin_url(obj, "delete"), {"post": "yes"}).status_code == 403

    assert _row_as_saved(obj) == before
    page = admin_client.get(admin_url(obj))
    assert page.status_code == 200  # still visible, read-only
    assert not page.context["has_change_permission"]
    assert "delete_selected" not in page.context["adminform"].model_admin.get_actions(
        page.wsgi_request
    )


def test_bulk_delete_of_events_is_not_an_action(admin_client, board):
    events = list(Event.objects.filter(project=board.world.project)[:3])
    count = Event.objects.count()

    response = admin_client.post(
        changelist_url(Event),
        {"action": "delete_selected", "_selected_action": [e.pk for e in events], "post": "yes"},
        follow=True,
    )

    assert response.status_code == 200
    assert Event.objects.count() == count


@pytest.mark.parametrize("model", SERVICE_MANAGED, ids=lambda m: m.__name__)
def test_domain_rows_have_no_add_no_delete_and_a_view_only_change_form(admin_client, board, model):
    obj = model.objects.filter(project=board.world.project).order_by("id").first()
    before = _row_as_saved(obj)
    count = model.objects.count()

    page = admin_client.get(admin_url(obj))
    edit = admin_client.post(admin_url(obj), {"description": "edited", "priority": 1})
    add = admin_client.get(add_url(model))
    delete = admin_client.post(admin_url(obj, "delete"), {"post": "yes"})
    bulk_delete = admin_client.post(
        changelist_url(model),
        {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"},
    )

    assert page.status_code == 200
    assert list(page.context["adminform"].form.fields) == []
    assert (edit.status_code, add.status_code, delete.status_code) == (403, 403, 403)
    assert bulk_delete.status_code in (200, 302)  # "no action selected", nothing deleted
    assert model.objects.count() == count
    assert _row_as_saved(obj) == before


@pytest.fixture
def fsm_rows(board):
    return {
        Task: board.claimed,
        Goal: board.goal,
        Sprint: board.sprint,
        Agent: board.world.agent("coder-1"),
    }


@pytest.mark.parametrize("model", [Task, Goal, Sprint, Agent], ids=lambda m: m.__name__)
def test_status_is_never_an_editable_form_field(admin_client, fsm_rows, model):
    obj = fsm_rows[model]

    page = admin_client.get(admin_url(obj))

    form = page.context["adminform"].form
    assert "status" not in form.fields
    assert "status" in page.context["adminform"].readonly_fields
    assert obj.status in page.content.decode()
