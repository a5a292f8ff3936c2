"""The notifications page (issue 24): a member sets what they hear and how often; a project
admin sets each member's chat webhook (a public address), never shown back."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.coordination.models.records import Event
from boards.watch.models import NotificationPreference
from tests.factories import member

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_viewer_sets_their_own_events_and_unticking_all_clears_them(world):
    bob = member(world.project, "viewer", username="bob", email="bob@example.com")
    client = _client(bob)
    page = client.get(f"/p/{world.project.slug}/notifications")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="events" value="blocked"' in html and "to bob@example.com" in html
    assert "Chat webhooks of the members" not in html  # the admin's part

    url = f"/p/{world.project.slug}/notifications/set"
    answer = client.post(url, {"events": ["stall", "blocked"], "digest_minutes": "60"})
    assert answer.status_code == 302 and answer["Location"].endswith("/notifications")
    pref = NotificationPreference.objects.get(project=world.project, user=bob)
    assert (pref.events, pref.email, pref.digest_minutes) == (["blocked", "stall"], False, 60)
    client.post(url, {"digest_minutes": "0"})  # every box unticked
    pref.refresh_from_db()
    assert (pref.events, pref.digest_minutes) == ([], 0)


def test_bad_input_is_a_400_on_the_page_again_and_changes_nothing(world):
    bob = member(world.project, "viewer", username="bob")
    url = f"/p/{world.project.slug}/notifications/set"
    for data in ({"events": ["everything"]}, {"digest_minutes": "-1"}, {"digest_minutes": "x"}):
        answer = _client(bob).post(url, data)
        assert answer.status_code == 400, data
        assert "Your notifications" in answer.content.decode()
    assert not NotificationPreference.objects.filter(project=world.project)


def test_an_admin_sets_a_members_chat_webhook_which_is_never_shown_back(world, settings):
    bob = member(world.project, "viewer", username="bob")
    admin = _client(world.admin)
    page = admin.get(f"/p/{world.project.slug}/notifications").content.decode()
    assert 'data-user="bob"' in page
    url = f"/p/{world.project.slug}/notifications/set"
    secret = "https://hooks.example.com/services/T0/B0/very-secret-token"
    answer = admin.post(url, {"user": "bob", "chat_url": secret, "chat_format": "discord"})
    assert answer.status_code == 302
    pref = NotificationPreference.objects.get(project=world.project, user=bob)
    assert (pref.chat_url, pref.chat_format) == (secret, "discord")
    assert (
        "very-secret-token"
        not in admin.get(f"/p/{world.project.slug}/notifications").content.decode()
    )
    assert (
        "a Discord webhook"
        in _client(bob).get(f"/p/{world.project.slug}/notifications").content.decode()
    )
    event = Event.objects.filter(project=world.project, action="notifications_set").last()
    assert "very-secret-token" not in str(event.data) + event.detail

    # A viewer may not set one (theirs or anyone's); a private address is refused (SSRF).
    refused = _client(bob).post(url, {"user": "bob", "chat_url": "https://example.com/x"})
    assert refused.status_code == 403
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    private = admin.post(url, {"user": "bob", "chat_url": "http://10.0.0.7/hook"})
    assert private.status_code == 400 and "private address" in private.content.decode()
    pref.refresh_from_db()
    assert pref.chat_url == secret
