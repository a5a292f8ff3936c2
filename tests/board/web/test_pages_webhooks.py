"""The escalation webhook on the board (issue #11): its delivery log page, for project admins
only, and its write-only secret on the settings page."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.board.web.pages import SECRET_FIELDS, SETTINGS_FIELDS, _setting_text
from boards.coordination.models.projects import Membership
from boards.coordination.models.records import Alert
from boards.coordination.selectors.access import config_of
from boards.coordination.services.projects import config_update
from boards.watch.models import WebhookAttempt, WebhookDelivery
from tests.api.helpers import key_for
from tests.board.web.test_actions import (
    ADMIN,
    ANONYMOUS,
    MEMBER,
    OTHER_ADMIN,
    STAFF,
    VIEWER,
    client_for,
    expected_status,
)
from tests.factories import ProjectFactory, register

pytestmark = pytest.mark.django_db

SECRET = "whsec-board-0123456789"
AGENT, OTHER_AGENT = "agent of the project", "agent of another project"


def _delivery(world) -> WebhookDelivery:
    alert = Alert.objects.create(
        project=world.project,
        type=Alert.Type.INTEGRATION_FAILED,
        subject="T-1",
        level=Alert.Level.CRITICAL,
        message="INTEGRATION FAILED: T-1",
        created=world.tick(),
    )
    delivery = WebhookDelivery.objects.create(
        project=world.project,
        alert=alert,
        kind="alert.raised",
        body="{}",
        created=world.now,
        next_attempt_at=world.now,
        attempts=1,
    )
    WebhookAttempt.objects.create(
        delivery=delivery,
        at=world.now,
        url="https://hooks.example.test/liza",
        status_code=503,
        error="HTTP 503",
        duration_ms=42,
    )
    return delivery


@pytest.mark.parametrize(
    "who", [ANONYMOUS, VIEWER, MEMBER, ADMIN, OTHER_ADMIN, STAFF, AGENT, OTHER_AGENT]
)
def test_the_delivery_log_is_for_project_admins(world, who):
    _delivery(world)
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        escalation_webhook="https://hooks.example.test/liza",
        webhook_secret=SECRET,
    )
    if who in (AGENT, OTHER_AGENT):
        project = world.project if who == AGENT else ProjectFactory()
        agent = register(project, "coder-7", now=world.now)
        client = Client(HTTP_AUTHORIZATION=f"Bearer {key_for(agent)}")
        expected = 302  # a key is no sign-in: pages are for people
    else:
        client = client_for(world, who)
        expected = expected_status(who, Membership.Role.ADMIN, 200)
    response = client.get(f"/p/{world.project.slug}/webhook")
    assert response.status_code == expected
    html = response.content.decode()
    assert ("HTTP 503" in html) == (expected == 200)
    assert ("https://hooks.example.test/liza" in html) == (expected == 200)
    assert SECRET not in html
    if expected == 200:
        assert "42 ms" in html and "INTEGRATION FAILED: T-1" in html
        assert '<dd id="webhook-secret">set</dd>' in html


def test_the_inbox_and_the_settings_link_to_the_log(world):
    client = client_for(world, ADMIN)
    for page in ("inbox", "settings"):
        html = client.get(f"/p/{world.project.slug}/{page}").content.decode()
        assert f'href="/p/{world.project.slug}/webhook"' in html


def _form(world, **values) -> dict[str, str]:
    """The settings form as the browser posts it: every field, as shown, then `values`."""
    config = config_of(world.project)
    config.refresh_from_db()
    shown = {n: _setting_text(config, n) for n in SETTINGS_FIELDS if n not in SECRET_FIELDS}
    return {**shown, "webhook_secret": "", **values}


def test_the_settings_form_takes_a_secret_and_never_shows_it_again(world):
    client = client_for(world, ADMIN)
    path = f"/p/{world.project.slug}/settings"
    page = client.get(path).content.decode()
    assert 'type="password" name="webhook_secret" value=""' in page and "not set" in page

    form = _form(world, escalation_webhook="https://hooks.example.test/liza", webhook_secret=SECRET)
    assert client.post(path, form).status_code == 302
    config = config_of(world.project)
    config.refresh_from_db()
    assert (config.escalation_webhook, config.webhook_secret) == (
        form["escalation_webhook"],
        SECRET,
    )
    page = client.get(path).content.decode()
    assert SECRET not in page
    assert "set — leave empty to keep it" in page

    # An empty box keeps it; the checkbox removes it.
    assert client.post(path, _form(world)).status_code == 302
    config.refresh_from_db()
    assert config.webhook_secret == SECRET
    assert client.post(path, _form(world, webhook_secret_clear="1")).status_code == 302
    config.refresh_from_db()
    assert config.webhook_secret == ""


def test_a_refused_form_does_not_echo_the_secret(world, settings):
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    client = client_for(world, ADMIN)
    response = client.post(
        f"/p/{world.project.slug}/settings",
        _form(world, escalation_webhook="http://10.0.0.7/hook", webhook_secret=SECRET),
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "10.0.0.7, a private address" in html
    assert SECRET not in html
    assert config_of(world.project).escalation_webhook == ""
