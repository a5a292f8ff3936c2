"""A sprint deadline passes and an open board shows CHECKPOINT within one watch interval
(issue #11 "Done when"), end to end with real processes: a server and a watcher
(`manage.py liza_watch`) sharing the database and Redis, and Chromium showing the board. Nothing
but the watcher moves the sprint, and the page is never reloaded."""

from __future__ import annotations

import subprocess
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import ProjectConfig
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from tests.e2e.support import mark_page, open_board, page_not_reloaded, sign_in
from tests.lifecycle import World
from tests.live_server import live_server, suite_database_url, watcher_process
from tests.private_redis import private_redis_url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

REDIS_URL = private_redis_url()
INTERVAL = 2  # seconds: the project's watch_interval
SLACK = 6.0  # seconds for the sweep, the render and the websocket on a loaded shared machine


def test_a_passed_deadline_reaches_an_open_board_as_checkpoint_within_one_interval(browser):
    world = World(now=timezone.now())
    goal = goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    deadline = timezone.now() + timedelta(seconds=12)  # time to start both and open the board
    sprint_create(
        project=world.project, actor=world.planner, goal=goal, now=world.now, deadline=deadline
    )
    ProjectConfig.objects.filter(project=world.project).update(watch_interval=INTERVAL)
    prefix = f"liza-e2e-watch-{uuid.uuid4().hex[:8]}"
    env = {"LIZA_TEST_CHANNEL_PREFIX": prefix}
    database_url = suite_database_url()
    with live_server(
        name="watch-e2e", database_url=database_url, redis_url=REDIS_URL, env=env
    ) as server:
        watcher = watcher_process(
            world.project.slug, env={**env, "REDIS_URL": REDIS_URL}, stderr=subprocess.STDOUT
        )
        context = browser.new_context(base_url=server.url, viewport={"width": 1600, "height": 900})
        try:
            page = context.new_page()
            sign_in(page, world.admin)
            open_board(page, world.project.slug)
            mark_page(page)
            status = page.locator("#board-header .sprint-status")
            assert status.inner_text() == "IN_PROGRESS"
            left = (deadline - timezone.now()).total_seconds()
            assert left > 0, "the board opened after the deadline: the test proves nothing"

            page.wait_for_function(
                "() => document.querySelector('#board-header .sprint-status')"
                ".textContent.trim() === 'CHECKPOINT'",
                timeout=(left + INTERVAL + SLACK + 5) * 1000,
            )
            seen = timezone.now()
            assert page_not_reloaded(page)
            assert (seen - deadline).total_seconds() <= INTERVAL + SLACK, (seen, deadline)
        finally:
            context.close()
            watcher.terminate()
            output = watcher.communicate(timeout=30)[0]
    # The watcher's own log names the action it took.
    assert "checkpoint" in output.lower(), output


def test_a_quiet_board_stays_quiet_while_the_watcher_sweeps(browser):
    """Issue 25: with nothing happening, the header is never redrawn; the watcher's sweeps alone
    must keep "watcher last seen" fresh, so no "Watcher silent" appears over 5 intervals."""
    world = World(now=timezone.now())
    ProjectConfig.objects.filter(project=world.project).update(watch_interval=INTERVAL)
    prefix = f"liza-e2e-quiet-{uuid.uuid4().hex[:8]}"
    env = {"LIZA_TEST_CHANNEL_PREFIX": prefix}
    with live_server(
        name="quiet-e2e", database_url=suite_database_url(), redis_url=REDIS_URL, env=env
    ) as server:
        watcher = watcher_process(
            world.project.slug, env={**env, "REDIS_URL": REDIS_URL}, stderr=subprocess.STDOUT
        )
        context = browser.new_context(base_url=server.url, viewport={"width": 1440, "height": 900})
        try:
            page = context.new_page()
            sign_in(page, world.admin)
            # The watcher's first sweep (its process may take a while to start), then the board.
            for _ in range(120):
                world.project.refresh_from_db()
                if world.project.last_swept is not None:
                    break
                page.wait_for_timeout(250)
            assert world.project.last_swept is not None, "the watcher never swept"
            open_board(page, world.project.slug)
            mark_page(page)
            banner = page.locator("#watcher-silent")
            ages = []
            for _ in range(5 * INTERVAL * 2 + 4):  # 5 intervals and then some, every 0.5 s
                assert banner.is_hidden(), page.inner_text("#watcher-status")
                ages.append(int(page.inner_text("#watcher-status .watcher-age").split()[2]))
                page.wait_for_timeout(500)
            # The age is reset by every sweep: never older than an interval and the slack.
            assert max(ages) <= INTERVAL + SLACK, ages
            assert page_not_reloaded(page)
        finally:
            context.close()
            watcher.terminate()
            watcher.communicate(timeout=30)
