"""Every model of boards and agents is in the admin, and its pages render with rows."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent, AgentKey, Budget, IdempotentRequest, Run, RunUsage
from boards.coordination.models.projects import Goal, Membership, Project, ProjectConfig, Sprint
from boards.coordination.models.records import (
    Alert,
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import (
    ChangeSummary,
    Discovery,
    Handoff,
    HumanNote,
    Review,
    Task,
)
from boards.watch.models import (
    Notification,
    NotificationPreference,
    WebhookAttempt,
    WebhookDelivery,
)
from tests.admin.helpers import admin_url, build_board, changelist_url, result_pks
from tests.factories import UserFactory
from tests.lifecycle import World

EVERY_MODEL = [
    Project,
    Membership,
    ProjectConfig,
    Goal,
    Sprint,
    Task,
    Review,
    Discovery,
    Handoff,
    HumanNote,
    SpecChange,
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Alert,
    WebhookDelivery,
    ChangeSummary,
    WebhookAttempt,
    NotificationPreference,
    Notification,
    Event,
    Agent,
    AgentKey,
    IdempotentRequest,
    Run,
    RunUsage,
    Budget,
]


def test_every_model_of_both_apps_is_registered():
    models = {
        *apps.get_app_config("boards").get_models(),
        *apps.get_app_config("agents").get_models(),
    }
    assert models == set(EVERY_MODEL)
    assert [m for m in EVERY_MODEL if m not in admin.site._registry] == []


@pytest.mark.parametrize("model", EVERY_MODEL, ids=lambda m: m.__name__)
def test_changelist_and_change_page_render_with_a_row(admin_client, board, model):
    obj = model.objects.order_by("pk").first()
    assert obj is not None, f"the board fixture has no {model.__name__}"

    listing = admin_client.get(changelist_url(model))
    page = admin_client.get(admin_url(obj))
    # Every search_fields path is a real lookup (a typo there is a 500 only at search time).
    search = admin_client.get(changelist_url(model), {"q": "task-1"})

    assert listing.status_code == 200
    assert listing.context["cl"].result_count == model.objects.count()
    assert result_pks(listing)  # rows on the first page
    assert page.status_code == 200
    assert page.context["original"] == obj
    assert search.status_code == 200


def test_task_change_page_shows_its_timeline_in_order_without_add_or_delete(admin_client, board):
    task = board.claimed

    response = admin_client.get(admin_url(task))

    timeline = next(f for f in response.context["inline_admin_formsets"] if f.opts.model is Event)
    shown = [form.form.instance.pk for form in timeline]
    expected = list(
        Event.objects.filter(task=task).order_by("timestamp", "id").values_list("pk", flat=True)
    )
    assert len(expected) >= 3  # created, finalized, claimed
    assert shown == expected
    assert not timeline.has_add_permission
    assert not timeline.has_change_permission
    assert not timeline.has_delete_permission
    assert "claimed" in response.content.decode()


def test_task_list_shows_the_board_columns(admin_client, board):
    world = board.world
    world.rejected("task-6", coder="coder-2")  # one rejected round: review cycles 1/1

    response = admin_client.get(changelist_url(Task), {"q": "task-6"})

    html = response.content.decode()
    for text in ("task-6", "REJECTED", "coder-2", "1/1", world.project.slug, "standard"):
        assert text in html


def test_agent_list_shows_role_status_task_and_liveness(admin_client, board):
    response = admin_client.get(changelist_url(Agent), {"q": "coder-1"})

    html = response.content.decode()
    row = response.context["cl"].result_list[0]
    assert row.agent_id == "coder-1"
    for text in ("coder-1", "WORKING", "task-1", "coder"):
        assert text in html


# -- no N+1: a changelist costs the same number of queries for 1× and 3× the rows -------------

CHANGELISTS_WITH_RELATIONS = [Task, Event, Review, Agent, AgentKey, Sprint, Alert, Handoff]


def _queries(client, model) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(changelist_url(model))
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_changelist_queries_do_not_grow_with_rows(admin_client, board):
    before = {model: _queries(admin_client, model) for model in CHANGELISTS_WITH_RELATIONS}
    for _ in range(2):
        build_board(World())
    for model in CHANGELISTS_WITH_RELATIONS:
        assert model.objects.count() >= 3  # three projects' rows on the page now

    after = {model: _queries(admin_client, model) for model in CHANGELISTS_WITH_RELATIONS}

    assert after == before


def test_staff_without_model_permissions_cannot_open_the_log(client, board):
    user = UserFactory(is_staff=True)
    client.force_login(user)

    assert client.get(changelist_url(Event)).status_code == 403
    assert client.get(changelist_url(Task)).status_code == 403
