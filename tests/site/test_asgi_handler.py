"""liza_site.asgi_handler: the agents' hot routes served in one thread hop under ASGI.

Each request is sent through the ASGI protocol to Django's own handler and to ours, and the
answers compared: status, every header in order, the body with its times blanked. The requests
run on the handlers' threads with their own database connections, so the data is committed.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware

from agents import keycache
from liza_site.asgi_handler import OneHopASGIHandler
from tests.api.helpers import api_base, blank_times, http_start, key_for
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = b'{"base_commit": "c0ffee01"}'


@pytest.fixture(scope="module")
def handlers():
    return ASGIHandler(), OneHopASGIHandler()


@pytest.fixture
def world():
    keycache.clear()
    return World(now=http_start())


def _asgi(app, method: str, path: str, body: bytes = b"", headers=()) -> tuple[int, list, bytes]:
    """One request through `app` as an ASGI server sends it: (status, headers, body)."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            *([(b"content-length", str(len(body)).encode())] if body else []),
            *headers,
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict] = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # no disconnect: the client waits

    async def send(message):
        sent.append(message)

    async def call():
        await app(scope, receive, send)

    async_to_sync(call)()
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], list(start["headers"]), content


def _answer(status: int, headers: list, body: bytes):
    """What a client sees, times blanked (a heartbeat moves the lease): Content-Length aside,
    which follows the body."""
    try:
        shown = blank_times(json.loads(body))
    except ValueError:
        shown = body
    return status, [(k, v) for k, v in headers if k.lower() != b"content-length"], shown


def _agent(plain: str, *more) -> list:
    return [(b"authorization", f"Bearer {plain}".encode()), *more]


JSON = (b"content-type", b"application/json")


def _both(handlers, method, path, body=b"", headers=()):
    django_answer = _answer(*_asgi(handlers[0], method, path, body, headers))
    ours = _answer(*_asgi(handlers[1], method, path, body, headers))
    return django_answer, ours


def test_a_heartbeat_answers_as_djangos_handler_does(handlers, world):
    world.unclaimed("T-1")
    plain = key_for(world.coder)
    base = api_base(world.project.slug)
    claimed = _asgi(handlers[1], "POST", f"{base}/tasks/claim-next", CLAIM, _agent(plain, JSON))
    assert claimed[0] == 200, claimed[2]
    django_answer, ours = _both(
        handlers, "POST", f"{base}/agents/heartbeat", b'{"context_percent": 40}',
        _agent(plain, JSON),
    )  # fmt: skip
    assert ours == django_answer
    assert ours[0] == 200
    assert ours[2]["task"] == "T-1"
    names = {k.lower() for k, _ in ours[1]}
    # What the middleware adds (SecurityMiddleware, XFrameOptions, CSP): they ran.
    assert {b"x-frame-options", b"x-content-type-options", b"content-security-policy"} <= names


@pytest.mark.parametrize(
    ("path", "body", "headers", "status"),
    [
        ("/tasks/claim-next", b"{}", "agent", 200),  # an empty queue: task null
        ("/tasks/claim-next", CLAIM, "idempotent", 200),
        ("/agents/heartbeat", b"{not json", "agent", 400),
        ("/agents/heartbeat", b"{}", "nobody", 401),  # no key: the DRF view's answer
        ("/agents/heartbeat", b"{}", "unknown", 401),
        ("/agents/heartbeat?via=drf", b"{}", "agent", 200),
        ("/agents/heartbeat", b"", "agent-get", 405),  # not a POST: Django's handler
        ("/tasks", b"", "agent-get", 200),  # not a marked view
    ],
)
def test_other_requests_answer_as_djangos_handler_does(
    handlers, world, path, body, headers, status
):
    plain = key_for(world.coder)
    sent = {
        "agent": _agent(plain, JSON),
        "idempotent": _agent(plain, JSON, (b"idempotency-key", uuid.uuid4().hex.encode())),
        "nobody": [JSON],
        "unknown": _agent("lz_" + "x" * 40, JSON),
        "agent-get": _agent(plain),
    }[headers]
    method = "GET" if headers == "agent-get" else "POST"
    if headers == "idempotent":
        # Each handler its own key: the second request with one key would be a replay.
        django_answer = _answer(*_asgi(handlers[0], method, api_base(world.project.slug) + path,
                                       body, sent))  # fmt: skip
        sent = _agent(plain, JSON, (b"idempotency-key", uuid.uuid4().hex.encode()))
        ours = _answer(*_asgi(handlers[1], method, api_base(world.project.slug) + path, body, sent))
    else:
        django_answer, ours = _both(
            handlers, method, api_base(world.project.slug) + path, body, sent
        )
    assert ours == django_answer
    assert ours[0] == status


def test_a_hot_request_runs_its_middleware_view_and_signals_on_one_pooled_thread(
    handlers, world, monkeypatch
):
    seen: dict[str, str] = {}

    def note(step):
        seen[step] = threading.current_thread().name

    process_request = SecurityMiddleware.process_request
    process_response = XFrameOptionsMiddleware.process_response
    monkeypatch.setattr(
        SecurityMiddleware,
        "process_request",
        lambda self, request: (note("first middleware"), process_request(self, request))[1],
    )
    monkeypatch.setattr(
        XFrameOptionsMiddleware,
        "process_response",
        lambda self, request, response: (
            note("last middleware"),
            process_response(self, request, response),
        )[1],
    )

    def started(**kwargs):
        note("request_started")

    def finished(**kwargs):
        note("request_finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        plain = key_for(world.coder)
        base = api_base(world.project.slug)
        beat = _asgi(handlers[1], "POST", f"{base}/agents/heartbeat", b"{}", _agent(plain, JSON))
        assert beat[0] == 200
        hot = dict(seen)
        seen.clear()
        listed = _asgi(handlers[1], "GET", f"{base}/tasks", b"", _agent(plain))
        assert listed[0] == 200
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert set(hot) == {
        "request_started",
        "first middleware",
        "last middleware",
        "request_finished",
    }
    assert len(set(hot.values())) == 1
    assert hot["request_started"].startswith("one-hop")
    # Another route is Django's: its signals on threads of the request's own.
    assert not any(name.startswith("one-hop") for name in seen.values())
