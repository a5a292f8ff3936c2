"""A real board in a real browser (SPEC §7): daphne in a subprocess, Debian's Chromium.

The server is a separate process on a free port of 127.0.0.1, on the pytest-django test
database (the tests' data is committed: `django_db(transaction=True)`). It gets no REDIS_URL,
so its channel layer is the in-memory one of that single process: every live change a page
must see is therefore made through the server (the agent HTTP API), as agents make them.

Chromium is Debian's headless shell (/usr/bin/chromium-headless-shell, package
chromium-headless-shell: the same Blink and V8 as /usr/bin/chromium, without the browser's own
window UI; Playwright's own browser download does not work on these machines). `.ci/test`
installs it; on CI (CI=true) a missing browser fails the run, on a developer's machine it skips
the e2e tests with the reason.

Why the shell and not /usr/bin/chromium: the full browser's headless mode builds a browser window
for every context, whose WebUI omnibox popups (chrome://omnibox-popup.top-chrome/) load in a
renderer process of their own, ~0.7 s of CPU per context; the tests open one or more contexts
each. A launch and three small pages cost 3.3 s of CPU in the full browser, 0.4 s in the shell;
tests/e2e with -n 2, 165 s of Chromium CPU against 75 s. The pages under test run in the same
engine either way, and the shell is what Playwright itself runs for headless Chromium.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from boards.coordination.services.actors import SYSTEM
from tests.ci import unavailable
from tests.e2e.support import ARTIFACTS, AgentClient, Server
from tests.live_server import live_server, suite_database_url

CHROMIUM = os.environ.get("LIZA_E2E_CHROMIUM", "/usr/bin/chromium-headless-shell")
# Without the background-networking flags Chromium keeps dialling Google's hosts, which this
# machine's closed network refuses (docs: .library/env/machines/python-svc.md).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# -- the server ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def server(django_db_setup, django_db_blocker) -> Iterator[Server]:
    """daphne serving the ASGI app (HTTP and websockets) on the test database."""
    with django_db_blocker.unblock():
        database_url = suite_database_url()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with live_server(  # no redis_url: the in-memory layer of this one process
        name=f"e2e-{worker}",
        database_url=database_url,
        server="daphne",
        log=ARTIFACTS / f"daphne-{worker}.log",
    ) as live:
        yield Server(url=live.url, log=live.log)


# -- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module.

    Playwright's sync API runs its event loop in a greenlet of this thread, so while it is up
    Django sees a "running loop" and refuses ORM calls (SynchronousOnlyOperation) although no
    coroutine is running here. DJANGO_ALLOW_ASYNC_UNSAFE lifts that check for as long as the
    browser lives, and no longer: module scope keeps it away from the rest of the suite.
    """
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        unavailable(
            f"no Chromium at {CHROMIUM} (apt-get install chromium-headless-shell)",
            ci_hint=".ci/test installs it",
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[test]')")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


# Recorded before any page script runs: the board keeps its websocket in a closure, and the
# reconnect test needs to close it and to hold the next connections back for a moment. A held
# socket goes to a board that does not exist, which the server refuses, as a dead network would.
SOCKET_HOOK = """
(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.__holdSockets = false;
  class Recorded extends Native {
    constructor(url, protocols) {
      const held = window.__holdSockets;
      super(held ? String(url).replace(/\\/ws\\/p\\/[^/]+\\//, "/ws/p/held-by-test/") : url,
            protocols);
      window.__sockets.push({ socket: this, held });
    }
  }
  window.WebSocket = Recorded;
})();
"""


@pytest.fixture
def new_context(browser, server):
    """Open fresh browser contexts (separate cookies: separate people) on the server."""
    contexts = []

    def make():
        context = browser.new_context(base_url=server.url, viewport={"width": 1600, "height": 900})
        context.set_default_timeout(10_000)
        context.add_init_script(SOCKET_HOOK)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_context):
    return new_context().new_page()


@pytest.fixture(autouse=True)
def no_publishing_from_the_test_process(monkeypatch):
    """Only the server's changes can reach its pages (its layer is its own, in memory), so the
    setup made here publishes nothing, instead of failing to reach a layer from this thread."""
    monkeypatch.setattr("boards.coordination.outbox.get_channel_layer", lambda: None)


@pytest.fixture
def agent_client(server):
    """An API client for `agent`, with a key issued through the service."""

    def make(agent) -> AgentClient:
        from django.utils import timezone

        from agents.services import agent_key_issue

        _, plain = agent_key_issue(actor=SYSTEM, agent=agent, now=timezone.now(), label="e2e")
        return AgentClient(server=server, slug=agent.project.slug, key=plain)

    return make
