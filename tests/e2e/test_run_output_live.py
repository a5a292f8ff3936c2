"""Issue 24: a running run's output appears live in the task drawer (the board's websocket,
members only), and the card says its agent is running and for how long. Real processes: the
server (daphne) and Chromium; the run and its output come through the agent HTTP API, as
`liza supervise` sends them."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from tests.e2e.support import card_in, mark_page, open_board, page_not_reloaded, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_running_runs_output_appears_live_in_the_drawer(page, agent_client):
    world = World(now=timezone.now())
    world.claimed("T-1", description="Stream the output")
    coder = agent_client(world.agent("coder-1"))
    status, run = coder.post("runs", {"task": "T-1", "restart_reason": "start"})
    assert status == 201, run

    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    # The card: its agent is running, for a duration that counts by itself.
    running = page.locator(card_in("CLAIMED", "T-1") + " .running-for")
    page.wait_for_function(
        "el => /^\\d+:\\d\\d$/.test(el.textContent.trim())", arg=running.element_handle()
    )
    page.click(card_in("CLAIMED", "T-1"))
    drawer = page.locator("#drawer")
    drawer.locator('.drawer-body[data-key="T-1"]').wait_for()
    output = drawer.locator(f'pre[data-run-output="{run["id"]}"]')
    assert output.inner_text() == ""
    assert drawer.locator(".run-state").first.inner_text() == "running"

    for n in range(3):
        status, _ = coder.post(f"runs/{run['id']}/output", {"text": f"step {n} <b>done</b>"})
        assert status == 200
        page.wait_for_function(
            "([el, n]) => el.textContent.includes(`step ${n} <b>done</b>`)",
            arg=[output.element_handle(), n],
            timeout=5_000,
        )
    # Text, never markup; the page was never reloaded.
    assert output.locator("b").count() == 0
    assert re.findall(r"step \d", output.inner_text()) == ["step 0", "step 1", "step 2"]
    assert page_not_reloaded(page)

    # The run ends: the card no longer says running (a live card update).
    status, body = coder.post(f"runs/{run['id']}/finish", {"exit_code": 42})
    assert status == 200 and body["state"] == "finished", body
    page.wait_for_selector(card_in("CLAIMED", "T-1") + " .running-for", state="detached")
