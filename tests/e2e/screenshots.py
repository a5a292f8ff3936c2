"""The README's screenshots, made again: `python -m tests.e2e.screenshots` (not a test module:
pytest collects only test_*.py).

On a database of its own — DATABASE_URL's name + `_screenshots`, dropped and made afresh —
it migrates, runs `manage.py liza_demo`, serves the app with daphne on 127.0.0.1 and drives
Debian's Chromium through Playwright, writing PNGs into docs/screenshots/ (after one watcher
sweep of the demo, as `.ci/serve`'s watcher makes):

    board.png           the board at 1440×900
    board-phone.png     the board on a phone, 390×844
    time-travel.png     the board at a past moment (`?at=`, halfway through the demo's history)
    graph.png           the dependency graph
    activity.png        the activity feed
    insights.png        the insights of `demo-flow` (the two weeks of flow `liza_demo` walks
                        through the services), its cumulative flow diagram in view

Viewport-sized shots (not full pages) keep each file small. Needs PostgreSQL (DATABASE_URL)
and Debian's Chromium headless shell (`.ci/test` installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

from tests.live_server import ROOT, LiveServer

OUT = ROOT / "docs" / "screenshots"
SLUG = "demo"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def _database_url() -> str:
    base = os.environ.get("DATABASE_URL")
    if not base:
        sys.exit("DATABASE_URL is not set (a PostgreSQL server this script may create a db on)")
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "_screenshots"))


def _fresh_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _manage(url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env.pop("REDIS_URL", None)  # the in-memory layer, as the server below uses
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _shoot(page, name: str) -> None:
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"  {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from playwright.sync_api import sync_playwright

    from boards.demo.flow import FLOW_SLUG
    from boards.demo.projects import ADMIN_PASSWORD, ADMIN_USERNAME
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    if not os.access(CHROMIUM, os.X_OK):
        sys.exit(f"no Chromium at {CHROMIUM} (apt-get install chromium-headless-shell)")
    url = _database_url()
    print(f"database {urlsplit(url).path.lstrip('/')}: fresh, migrated, demo data")
    _fresh_database(url)
    _manage(url, "migrate", "-v0")
    print("  " + _manage(url, "liza_demo", "--slug", SLUG).splitlines()[0])
    # One sweep, as the watcher `.ci/serve` runs beside the server would have made: the board
    # shows the watcher seen and the alerts it raised, not the "watcher silent" warning.
    _manage(url, "liza_watch", "--once", "--project", SLUG)
    OUT.mkdir(parents=True, exist_ok=True)
    server = LiveServer(name="screenshots", database_url=url)
    try:
        server.wait_ready()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(base_url=server.url, viewport=DESKTOP)
            page = context.new_page()
            page.goto("/login/?next=/")
            page.fill("input[name=username]", ADMIN_USERNAME)
            page.fill("input[name=password]", ADMIN_PASSWORD)
            with page.expect_navigation():
                page.click("button[type=submit]")

            page.goto(f"/p/{SLUG}/")
            page.wait_for_selector('#board[data-live="1"]', timeout=10_000)
            _shoot(page, "board")

            # Halfway between the first recorded event and now (the slider's bounds).
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            page.goto(f"/p/{SLUG}/?at={now}")
            slider = page.locator("#replay-slider")
            low, high = int(slider.get_attribute("min")), int(slider.get_attribute("max"))
            moment = datetime.fromtimestamp((low + high) // 2, UTC)
            page.goto(f"/p/{SLUG}/?at={moment.strftime('%Y-%m-%dT%H:%M:%SZ')}")
            _shoot(page, "time-travel")

            page.goto(f"/p/{SLUG}/graph/?all=1")
            _shoot(page, "graph")

            page.goto(f"/p/{SLUG}/activity/")
            page.wait_for_selector('#activity-view[data-live="1"]', timeout=10_000)
            _shoot(page, "activity")

            # The imported demo has no state history: the flow project's charts are full.
            page.goto(f"/p/{FLOW_SLUG}/insights/")
            page.wait_for_load_state("networkidle")
            # From the page's top (title and period) down to the whole cumulative flow chart;
            # scrolled only if that chart would be cut.
            chart = page.locator("#insight-cfd figure").bounding_box()
            if chart["y"] + chart["height"] > DESKTOP["height"]:
                page.locator("#insight-cfd figure").scroll_into_view_if_needed()
            _shoot(page, "insights")

            phone = browser.new_context(
                base_url=server.url, viewport=PHONE, is_mobile=True, has_touch=True
            )
            phone.add_cookies(context.cookies())
            mobile = phone.new_page()
            mobile.goto(f"/p/{SLUG}/")
            mobile.wait_for_selector('#board[data-live="1"]', timeout=10_000)
            time.sleep(0.2)  # the live status settles ("live")
            _shoot(mobile, "board-phone")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
