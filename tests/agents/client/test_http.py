"""The client's retry rules (agents/client/http.py), against a scripted HTTP peer.

A real server does not answer 503 or drop connections on demand, so these few rules are
checked with httpx's in-process transport; everything else the client does is checked against
the real server in test_cli.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agents.client import Client, LizaError, Unreachable
from agents.client.contract import RETRYABLE
from agents.client.errors import UsageError
from boards.errors import EXIT_CODES, Contention, Unavailable


def scripted(*answers):
    """A transport answering each request with the next of `answers` (a response or an error),
    and the requests it saw."""
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handle), seen


def client(transport, retries=3):
    return Client(
        "http://liza.test", "p", "k", transport=transport, retries=retries, sleep=lambda s: None
    )


def envelope(status, code, exit):
    return httpx.Response(
        status, json={"error": {"code": code, "message": "m", "details": {"exit": exit}}}
    )


def test_a_write_is_retried_on_503_and_connection_errors_with_one_idempotency_key():
    transport, seen = scripted(
        httpx.ConnectError("refused"),
        httpx.Response(503, headers={"Retry-After": "1"}),
        httpx.Response(201, json={"id": "DISC-1"}),
    )

    body = client(transport).discover(description="d", severity="low")

    assert body == {"id": "DISC-1"}
    keys = {r.headers["Idempotency-Key"] for r in seen}
    assert len(seen) == 3 and len(keys) == 1 and keys != {""}
    assert seen[0].headers["Authorization"] == "Bearer k"


def test_each_write_gets_its_own_key_and_reads_none():
    transport, seen = scripted(
        httpx.Response(201, json={}), httpx.Response(201, json={}), httpx.Response(200, json=[])
    )
    c = client(transport)

    c.log(action="note", detail="a")
    c.log(action="note", detail="b")
    c.tasks()

    assert seen[0].headers["Idempotency-Key"] != seen[1].headers["Idempotency-Key"]
    assert "Idempotency-Key" not in seen[2].headers


@pytest.mark.parametrize(
    ("status", "code", "exit"),
    [(409, "lease_lost", 42), (404, "not_found", 5), (400, "validation_error", 3)],
)
def test_a_4xx_is_never_retried_and_carries_the_servers_exit(status, code, exit):
    transport, seen = scripted(envelope(status, code, exit))

    with pytest.raises(LizaError) as caught:
        client(transport).claim("T1")

    assert len(seen) == 1
    assert (caught.value.code, caught.value.status, caught.value.exit) == (code, status, exit)
    assert caught.value.exit == EXIT_CODES[code]


def test_no_answer_after_the_retries_is_unreachable_exit_7():
    transport, seen = scripted(*[httpx.ConnectTimeout("slow")] * 3)

    with pytest.raises(Unreachable) as caught:
        client(transport, retries=2).heartbeat()

    assert len(seen) == 3
    assert caught.value.exit == 7


def test_a_500_is_unreachable_and_not_retried_but_a_last_503_is_unreachable_too():
    transport, seen = scripted(httpx.Response(500, text="oops"))
    with pytest.raises(Unreachable) as caught:
        client(transport).heartbeat()
    assert len(seen) == 1 and caught.value.exit == 7

    transport, seen = scripted(httpx.Response(503), httpx.Response(503))
    with pytest.raises(Unreachable):
        client(transport, retries=1).heartbeat()
    assert len(seen) == 2


def test_a_contention_answer_is_sent_again_with_its_key_and_a_last_one_is_exit_7():
    """409 `contention`: the server wrote nothing (a deadlock it lost, a lock timeout), so the
    same request goes again, after at least its Retry-After, rather than ending the agent."""
    busy = envelope(409, "contention", 7)
    busy.headers["Retry-After"] = "1"
    slept: list[float] = []
    transport, seen = scripted(busy, busy, httpx.Response(200, json={"task": None}))
    c = Client("http://liza.test", "p", "k", transport=transport, sleep=slept.append)

    c.claim_next()

    assert len(seen) == 3 and len({r.headers["Idempotency-Key"] for r in seen}) == 1
    assert slept == [1.0, 1.0]  # the Retry-After, above the first backoff steps

    transport, seen = scripted(*[envelope(409, "contention", 7)] * 2)
    with pytest.raises(LizaError) as caught:
        client(transport, retries=1).heartbeat()
    assert len(seen) == 2
    assert (caught.value.code, caught.value.exit) == ("contention", 7)


def test_the_retryable_codes_are_the_servers_answers_that_wrote_nothing():
    assert {Contention.code, Unavailable.code} == RETRYABLE
    assert {EXIT_CODES[code] for code in RETRYABLE} == {7}


def test_after_registering_every_request_carries_the_sessions_generation():
    """None before: a client that never registered (people's tools, an older agent) sends no
    `Liza-Generation`; the register answer's from then on, reads and writes alike. Given one
    (`liza` reads LIZA_GENERATION, set by its supervisor), it sends it from the start."""
    agent = {"agent_id": "coder-1", "role": "coder", "status": "STARTING", "generation": 4}
    transport, seen = scripted(
        httpx.Response(200, json={"work": False}),
        httpx.Response(200, json=agent),
        httpx.Response(200, json={"agent": agent}),
        httpx.Response(200, json={"work": False}),
    )
    liza = client(transport)

    liza.work()
    liza.register()
    liza.heartbeat()
    liza.work()

    assert [r.headers.get("Liza-Generation") for r in seen] == [None, None, "4", "4"]
    transport, seen = scripted(httpx.Response(200, json={"work": False}))
    Client("http://liza.test", "p", "k", transport=transport, generation=7).work()
    assert seen[0].headers["Liza-Generation"] == "7"


def test_a_client_without_its_configuration_is_a_usage_error():
    with pytest.raises(UsageError) as caught:
        Client("", "p", "k")
    assert caught.value.exit == 2


def test_the_client_and_the_cli_load_without_django():
    probe = (
        "import sys, agents.client.cli; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'rest_framework', 'boards', 'liza_site'}); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parents[3],
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
