"""What the e2e tests share besides fixtures: the server handle, page helpers, an agent client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
PASSWORD = "pw-for-tests"  # tests.factories.UserFactory's
# "Every committed change reaches every open board within a second" (SPEC §7), with slack for
# a loaded CI machine.
LIVE_TIMEOUT_MS = 2_000


@dataclass(frozen=True)
class Server:
    url: str
    log: Path


def sign_in(page, user, password: str = PASSWORD, next_path: str = "/") -> None:
    """Through the login form, as a person does."""
    page.goto(f"/login/?next={quote(next_path)}")
    page.fill("input[name=username]", user.get_username())
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "/login/" not in page.url, f"sign-in failed for {user.get_username()}"


def open_board(page, slug: str, query: str = ""):
    """The board page, with its websocket open (so no change can slip in before it listens)."""
    response = page.goto(f"/p/{slug}/{query}")
    assert response is not None and response.status == 200, response and response.status
    page.wait_for_selector('#board[data-live="1"]', timeout=5_000)
    return response


def card_in(status: str, key: str) -> str:
    return f'.column[data-status="{status}"] .card[data-key="{key}"]'


def column_count(page, status: str) -> int:
    return int(page.inner_text(f'.column[data-status="{status}"] .count'))


def mark_page(page) -> None:
    """A value only this document holds: a reload or a navigation would lose it."""
    page.evaluate("window.__marker = 'no-reload'")


def page_not_reloaded(page) -> bool:
    return page.evaluate("window.__marker") == "no-reload"


class HeldAnswer:
    """The first answer to requests matching `pattern`, taken from the server when the page asks
    and delivered only on `deliver()`: the page gets an answer of that moment late, as a slow
    network would, while the requests after it pass."""

    def __init__(self, page, pattern) -> None:
        self.page = page
        self.held: list = []  # (route, the server's answer then)
        page.route(pattern, self._route)

    def _route(self, route) -> None:
        if self.held:
            route.continue_()
        else:
            self.held.append((route, route.fetch()))

    def wait(self, what: str) -> None:
        for _ in range(100):
            if self.held:
                return
            self.page.wait_for_timeout(50)
        raise AssertionError(f"{what} never started")

    def deliver(self) -> None:
        route, answer = self.held[0]
        route.fulfill(response=answer)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    return path


@dataclass(frozen=True)
class AgentClient:
    """An agent on the HTTP API with its bearer key (SPEC §6)."""

    server: Server
    slug: str
    key: str

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{self.server.url}/api/v1/projects/{self.slug}/{path}",
            data=json.dumps(body or {}).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def claim(self, key: str) -> dict:
        status, body = self.post(f"tasks/{key}/claim", {"base_commit": "base0001"})
        assert status == 200, body
        assert body["task"]["status"] == "CLAIMED", body
        return body["task"]

    def submit(self, key: str, commit: str = "c0ffee01") -> dict:
        status, body = self.post(
            f"tasks/{key}/request-review", {"review_commit": commit, "tree_clean": True}
        )
        assert status == 200, body
        assert body["task"]["status"] == "READY_FOR_REVIEW", body
        return body["task"]
