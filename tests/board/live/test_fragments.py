"""Card fragments (issue #26, `boards.board.live.fragments`): each card rendered once per change,
shared through Django's cache by the board page, its resync and the live update.

Nothing of ours is patched. A card's template renders are counted from what the test client
records (`response.templates`); "another process" is this one with its own copies dropped
(`forget_local`) reading the shared cache, written or read through a second cache client.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.services import agent_set_security_reviewer
from boards.board.live import fragments
from boards.board.live.render import render_changes
from boards.board.selectors.cards import card_versions
from boards.coordination.models.tasks import Task
from boards.coordination.outbox import TASK
from boards.coordination.selectors.access import config_of
from boards.coordination.services import tasks
from tests.board.live.helpers import in_memory_layer_settings, sprint_world
from tests.factories import member

pytestmark = pytest.mark.django_db

CARD = "boards/_card.html"


@pytest.fixture(autouse=True)
def _in_memory_layer(settings):
    # The page reads the board sequence; nothing here is committed, so nothing is published.
    with in_memory_layer_settings(settings):
        yield


@pytest.fixture
def world():
    world = sprint_world()
    world.approved("task-dep", sprint_scope="planned")
    world.unclaimed("task-2", sprint_scope="planned", depends_on=["task-dep"])
    world.claimed("task-1", sprint_scope="planned")
    return world


@pytest.fixture
def client(world):
    client = Client()
    client.force_login(member(world.project, "viewer"))
    return client


def _page(client, world) -> tuple[str, int]:
    """The board's HTML and how many cards were rendered for it."""
    response = client.get(f"/p/{world.project.slug}/")
    assert response.status_code == 200
    rendered = sum(1 for template in response.templates if template.name == CARD)
    return response.content.decode(), rendered


def _cards(html: str) -> list[str]:
    """Every card of the page, in order (the page around them shows the time and a token)."""
    return re.findall(r'<article class="card.*?</article>', html, re.S)


def _card(html: str, key: str) -> str:
    match = re.search(rf'<article class="card[^"]*" data-key="{key}".*?</article>', html, re.S)
    assert match, key
    return match.group(0)


def _key(world, key: str) -> str:
    """The shared cache key of `key`'s card as it is now."""
    config = config_of(world.project)
    salt = fragments.project_salt(world.project.pk, config)
    tasks_ = Task.objects.filter(project=world.project, key=key)
    [version] = card_versions(tasks_, config=config, now=timezone.now(), salt=salt)
    return fragments.fragment_key(version)


def test_a_card_is_rendered_once_and_again_only_when_its_task_changes(client, world):
    first, rendered = _page(client, world)
    assert rendered == 3
    again, rendered = _page(client, world)
    assert (_cards(again), rendered) == (_cards(first), 0)

    world.submit("task-1")
    changed, rendered = _page(client, world)
    assert rendered == 1  # task-1 only
    assert 'data-status="READY_FOR_REVIEW"' in _card(changed, "task-1")
    assert _card(changed, "task-2") == _card(first, "task-2")
    # What the cached page shows is what a page rendered from nothing shows.
    fragments.forget_local()
    caches["default"].delete_many([_key(world, k) for k in ("task-1", "task-2", "task-dep")])
    cold, rendered = _page(client, world)
    assert (_cards(cold), rendered) == (_cards(changed), 3)


def test_a_dependency_merged_updates_its_dependents_waiting_on(client, world):
    before, _ = _page(client, world)
    assert 'class="waiting-keys">task-dep<' in _card(before, "task-2")
    row = world.task("task-2")

    tasks.task_report_merge(
        task=world.task("task-dep"), agent=world.reviewer, merge_commit="m001", now=world.tick()
    )
    after, rendered = _page(client, world)
    # task-2's own row did not change; what it waits on did.
    assert world.task("task-2").updated == row.updated
    assert "waiting" not in _card(after, "task-2")
    assert rendered == 1  # task-2 (task-dep left the shown columns: MERGED is collapsed)


def test_two_cache_clients_share_a_fragment(client, world):
    """A fragment written by one process is what another process's page shows, unrendered."""
    html, _ = _page(client, world)
    other = caches.create_connection("default")  # another process's client of the same cache
    key = _key(world, "task-2")
    assert other.get(key).strip() == _card(html, "task-2")
    # Another process's render of task-2 (marked, to tell it from one made here).
    other.set(key, other.get(key).replace("waiting on", "waiting (from the other process) on"))

    fragments.forget_local()  # this process has rendered nothing yet
    page, rendered = _page(client, world)
    assert rendered == 0
    assert "waiting (from the other process) on" in _card(page, "task-2")


def test_the_live_update_and_the_page_use_the_same_fragment(client, world):
    _page(client, world)
    world.submit("task-1")
    fragments.forget_local()  # the websocket process is another process than the page's
    [message] = render_changes(world.project.pk, [{"kind": TASK, "id": world.task("task-1").pk}])
    assert 'data-status="READY_FOR_REVIEW"' in message["html"]

    page, rendered = _page(client, world)
    assert rendered == 0  # rendered once, by the live update, for every browser and this page
    assert _card(page, "task-1") == message["html"].strip()
    # A second process serving live boards renders nothing either.
    fragments.forget_local()
    [again] = render_changes(world.project.pk, [{"kind": TASK, "id": world.task("task-1").pk}])
    assert again["html"] == message["html"]


def test_a_review_lease_running_out_changes_the_card_without_a_write(world):
    """The one input of a card that moves with the clock: whether a review is still live."""
    world.under_review("task-3", coder="coder-2", sprint_scope="planned")
    config, now = config_of(world.project), world.tick()
    task = Task.objects.filter(project=world.project, key="task-3")
    [live] = card_versions(task, config=config, now=now)
    [same] = card_versions(task, config=config, now=now + timedelta(seconds=1))
    [expired] = card_versions(task, config=config, now=now + timedelta(days=1))
    assert same == live
    assert expired.stamp != live.stamp


def test_the_page_costs_the_same_queries_with_its_cards_cached_or_not(client, world):
    client.get(f"/p/{world.project.slug}/activity/")  # the session's first use, not the board's
    with CaptureQueriesContext(connection) as cold:
        _, rendered = _page(client, world)
    assert rendered == 3
    with CaptureQueriesContext(connection) as warm:
        _, rendered = _page(client, world)
    assert rendered == 0
    assert len(warm.captured_queries) == len(cold.captured_queries)


def test_a_security_reviewer_flagged_changes_every_card_of_its_project(world):
    """The security reviewers decide the human gate a card shows: they are in every version."""
    config, now = config_of(world.project), world.tick()
    shown = Task.objects.filter(project=world.project).order_by("key")
    before = card_versions(shown, config=config, now=now)
    agent_set_security_reviewer(
        agent=world.reviewer, actor=world.admin, security_reviewer=True, now=world.tick()
    )
    after = card_versions(shown, config=config, now=now)
    assert [v.key for v in after] == [v.key for v in before] == sorted(v.key for v in before)
    assert all(a.stamp != b.stamp for a, b in zip(after, before, strict=True))
