"""The settings page (boards/board/web/pages.py, SPEC §7): saved through the service, audited,
its field errors.

Split from the milestone file test_oversight_views.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.selectors.access import config_of
from boards.errors import LimitReached
from tests.board.web.test_actions import (
    ACTIONS,
    ADMIN,
    client_for,
)

pytestmark = pytest.mark.django_db


def test_settings_are_saved_through_the_service_and_audited(world):
    client = client_for(world, ADMIN)
    page = client.get(f"/p/{world.project.slug}/settings")
    assert 'name="lease_duration" value="300"' in page.content.decode()
    data = {**ACTIONS[-1].data, "lease_duration": "600", "integration_branch": "main"}
    response = client.post(f"/p/{world.project.slug}/settings", data)
    assert response.status_code == 302
    config = config_of(Project.objects.get(pk=world.project.pk))
    assert (config.lease_duration, config.integration_branch) == (600, "main")
    event = Event.objects.get(project=world.project, action="config_updated")
    assert "lease_duration 300 → 600" in event.detail


def test_wip_limits_are_edited_on_the_settings_page(world):
    client = client_for(world, ADMIN)
    data = {**ACTIONS[-1].data, "wip_limits": "claimed=2, READY_FOR_REVIEW=4"}
    response = client.post(f"/p/{world.project.slug}/settings", data)
    assert response.status_code == 302
    config = config_of(Project.objects.get(pk=world.project.pk))
    assert config.wip_limits == {"CLAIMED": 2, "READY_FOR_REVIEW": 4}
    page = client.get(f"/p/{world.project.slug}/settings").content.decode()
    assert 'name="wip_limits" value="CLAIMED=2, READY_FOR_REVIEW=4"' in page
    # Saving the same text again changes nothing.
    client.post(
        f"/p/{world.project.slug}/settings", {**data, "wip_limits": "CLAIMED=2, READY_FOR_REVIEW=4"}
    )
    assert Event.objects.filter(project=world.project, action="config_updated").count() == 1
    refused = client.post(f"/p/{world.project.slug}/settings", {**data, "wip_limits": "MERGED=1"})
    assert refused.status_code == 400
    assert 'data-field="wip_limits"' in refused.content.decode()
    assert "MERGED=1" in refused.content.decode()  # what they typed, kept
    assert config_of(Project.objects.get(pk=world.project.pk)).wip_limits["CLAIMED"] == 2
    # CLAIMED's limit is enforced at claim (issue 24): the third claim is refused.
    world.claimed("c1", coder="coder-1")
    world.claimed("c2", coder="coder-2")
    world.unclaimed("c3")
    with pytest.raises(LimitReached):
        world.claim("c3", "coder-3")
    # Lowered below what the column holds, the board marks it over its limit, in words.
    client.post(f"/p/{world.project.slug}/settings", {**data, "wip_limits": "CLAIMED=1"})
    board = client.get(f"/p/{world.project.slug}/?sprint=all").content.decode()
    assert "▲ over limit 1" in board and "over its WIP limit of 1" in board


def test_invalid_settings_show_the_field_error(world):
    client = client_for(world, ADMIN)
    data = {**ACTIONS[-1].data, "heartbeat_interval": "600", "lease_duration": "300"}
    response = client.post(f"/p/{world.project.slug}/settings", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-field="lease_duration"' in html
    assert config_of(Project.objects.get(pk=world.project.pk)).heartbeat_interval == 60
    response = client.post(f"/p/{world.project.slug}/settings", {**data, "lease_grace": "soon"})
    assert response.status_code == 400
    assert 'data-field="lease_grace"' in response.content.decode()


def test_max_concurrent_is_edited_with_units_and_shown_on_the_board(world):
    client = client_for(world, ADMIN)
    data = {**ACTIONS[-1].data, "max_concurrent": "coder=2, project=3"}
    assert client.post(f"/p/{world.project.slug}/settings", data).status_code == 302
    config = config_of(Project.objects.get(pk=world.project.pk))
    assert config.max_concurrent == {"coder": 2, "project": 3}
    page = client.get(f"/p/{world.project.slug}/settings").content.decode()
    assert 'name="max_concurrent" value="coder=2, project=3"' in page
    assert 'data-unit="max_concurrent">agents at work at once<' in page
    assert 'data-unit="stall_timeout">seconds<' in page
    refused = client.post(f"/p/{world.project.slug}/settings", {**data, "max_concurrent": "dog=1"})
    assert refused.status_code == 400 and 'data-field="max_concurrent"' in refused.content.decode()
    world.claimed("c1", coder="coder-1")
    board = client.get(f"/p/{world.project.slug}/?sprint=all").content.decode()
    assert 'data-cap="coder">coder 1/2 agents<' in board
    assert 'data-cap="project">project 1/3 agents<' in board


def test_a_budget_is_raised_from_the_settings_page_audited_and_work_resumes(world):
    from decimal import Decimal

    from agents.services import run_start, usage_record
    from boards.errors import BudgetExhausted

    client = client_for(world, ADMIN)
    path = f"/p/{world.project.slug}/budgets"
    form = {
        "scope": "project",
        "subject": "",
        "limit_usd": "1",
        "limit_tokens": "",
        "next": "settings",
    }
    assert client.post(path, form).status_code == 302
    run = run_start(project=world.project, agent=world.planner, now=world.tick())
    usage_record(
        project=world.project, agent=world.planner, now=world.tick(), run=run.pk,
        usage=[{"model": "m", "cost_usd": Decimal("1.25")}],
    )  # fmt: skip
    page = client.get(f"/p/{world.project.slug}/settings").content.decode()
    assert "$1.25 · 0 tokens (125 %)" in page and 'class="budget-state">exhausted<' in page
    world.unclaimed("c1")
    with pytest.raises(BudgetExhausted):
        world.claim("c1")
    refused = client.post(path, {**form, "limit_usd": "-3"})
    assert refused.status_code == 400 and "limit_usd" in refused.content.decode()
    raised = client.post(path, {**form, "limit_usd": "5"}, follow=True)
    assert "Budget of project set: $5.00." in raised.content.decode()
    event = Event.objects.filter(project=world.project, action="budget_set").latest("pk")
    assert event.actor_id == world.admin.username
    assert event.detail == "budget of project: $1.00 → $5.00 (25 % spent)"
    assert world.claim("c1").status == "CLAIMED"
