"""The board's "watcher last seen" and its warning, in a real browser (issue #11): the age
counts up by itself and the warning appears, without a reload, once the watcher has been silent
for more than three watch intervals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Project
from tests.e2e.support import mark_page, open_board, page_not_reloaded, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_warning_appears_by_itself_when_the_watcher_falls_silent(page):
    world = World(now=timezone.now())
    # Swept 26 s ago; silent after 3 × 10 s: the page loads without the warning.
    Project.objects.filter(pk=world.project.pk).update(
        last_swept=timezone.now() - timedelta(seconds=26)
    )
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    banner = page.locator("#watcher-silent")
    assert banner.is_hidden()
    assert page.locator("#watcher-status .watcher-age").inner_text().startswith("last seen 2")

    banner.wait_for(state="visible", timeout=15_000)
    assert "Watcher silent" in banner.inner_text()
    age = int(page.locator("#watcher-status .watcher-age").inner_text().split()[2])
    assert age > 30
    assert page_not_reloaded(page)
