"""Notifications in a real browser (issue 24): a member finds the page from the board's nav and
chooses what reaches them; a project admin sets that member's chat webhook on the same page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Membership
from boards.watch.models import NotificationPreference
from tests.e2e.support import open_board, screenshot, sign_in
from tests.factories import member
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_member_chooses_their_notifications_and_an_admin_sets_their_chat_webhook(new_context):
    world = World(now=timezone.now() - timedelta(seconds=10))
    ann = member(world.project, Membership.Role.MEMBER, username="ann", email="ann@example.com")

    page = new_context().new_page()
    sign_in(page, ann)
    open_board(page, world.project.slug)
    with page.expect_navigation():
        page.click("nav.project-nav >> text=Notifications")
    assert page.url.endswith(f"/p/{world.project.slug}/notifications")
    assert page.locator(".member-notifications").count() == 0  # the admin's part
    page.check('#my-notifications input[value="blocked"]')
    page.check('#my-notifications input[value="approval"]')
    page.check("#id_email")
    page.fill("#id_digest_minutes", "30")
    with page.expect_navigation():
        page.click("#my-notifications button[type=submit]")
    assert "Notification preferences saved." in page.inner_text(".oversight")
    assert page.is_checked('#my-notifications input[value="blocked"]')
    assert page.input_value("#id_digest_minutes") == "30"
    pref = NotificationPreference.objects.get(project=world.project, user=ann)
    assert (pref.events, pref.email, pref.digest_minutes) == (["blocked", "approval"], True, 30)
    assert "none: a project admin sets one" in page.inner_text("#my-chat")

    admin = new_context().new_page()
    sign_in(admin, world.admin)
    admin.goto(f"/p/{world.project.slug}/notifications")
    row = admin.locator('tr[data-user="ann"]')
    row.locator("input[name=chat_url]").fill("https://hooks.example.com/services/T/B/token")
    row.locator("select[name=chat_format]").select_option("discord")
    with admin.expect_navigation():
        row.locator("button[type=submit]").click()
    assert "Notification preferences saved." in admin.inner_text(".oversight")
    assert "services/T/B/token" not in admin.content()
    screenshot(admin, "notifications-admin")

    page.reload()
    assert "a Discord webhook (set by a project admin)" in page.inner_text("#my-chat")
