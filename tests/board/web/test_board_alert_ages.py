"""Ages are computed when shown (issue 25: alert texts kept the age they had when written,
"created 123 min ago"): an alert stores what its age counts from, and each page draws it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from boards.coordination.models.records import Alert
from boards.templatetags.states import duration_text
from boards.watch.services.watch import watch_sweep
from tests.factories import member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (45, "45 s"), (720, "12 min"), (10586, "2 h 56 min"), (273600, "3 d 4 h")],
)
def test_durations_read_as_people_say_them(seconds, text):
    assert duration_text(seconds) == text


def test_a_stale_drafts_age_grows_on_the_page_without_another_sweep():
    world = World(now=timezone.now() - timedelta(hours=3))
    world.draft("T-1")
    created = world.task("T-1").created
    watch_sweep(project=world.project, now=created + timedelta(minutes=31))  # the only sweep
    [alert] = Alert.objects.filter(project=world.project, type=Alert.Type.STALE_DRAFT)
    assert "min" not in alert.message  # no age frozen into the text

    client = Client()
    client.force_login(member(world.project, "admin"))
    age = timezone.now() - created
    for path in (f"/p/{world.project.slug}/", f"/p/{world.project.slug}/inbox"):
        html = client.get(path).content.decode()
        assert alert.message in html
        # Drawn now: about three hours, not the 31 min the sweep saw.
        assert f">for {duration_text(age.total_seconds())}<" in html or (
            f">for {duration_text(age.total_seconds() + 1)}<" in html
        ), path
