"""PostgreSQL restarts under a running server (issue #14, fault 3).

A real server (daphne, tests/live_server.py) on a private PostgreSQL (tests/private_postgres.py)
that the test crashes and starts again: while it is down every request gets a 503 with
Retry-After (the JSON envelope for the API, a plain page for the board), never a 500; once it
is back the server answers again within 10 s without being restarted, with or without the
connection pool; a write retried with the same Idempotency-Key is applied once.
"""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from tests.faults.support import django_run
from tests.live_server import live_server

pytestmark = pytest.mark.faults

COUNT_CLAIMS = """
import django
django.setup()
from boards.models import Event
print(Event.objects.filter(action="claimed", task__key="task-1").count())
"""


@pytest.mark.parametrize("pool", [0, 4], ids=["no-pool", "pool"])
def test_a_restart_answers_503_then_recovers_and_a_retried_write_applies_once(database, pool):
    # While the database is down a pooled request waits DB_POOL_TIMEOUT for a connection
    # before its 503: 3 s instead of the default 10 keeps the three such requests short.
    env = {"DB_POOL_MAX_SIZE": str(pool), "DB_POOL_TIMEOUT": "3"} if pool else {}
    with live_server(name="faults", database_url=database.database_url, env=env) as server:
        api = httpx.Client(
            base_url=f"{server.url}/api/v1/projects/faults",
            headers={"Authorization": f"Bearer {database.key}"},
            timeout=30,
        )
        web = httpx.Client(base_url=server.url, timeout=30)
        assert api.post("/agents/heartbeat", json={}).status_code == 200
        login = web.get("/login/")
        csrf = web.cookies["csrftoken"]
        assert login.status_code == 200

        database.stop("immediate")  # a crash: every connection is cut at once
        heartbeat = api.post("/agents/heartbeat", json={})
        assert heartbeat.status_code == 503, heartbeat.text
        assert heartbeat.headers["Retry-After"] == "5"
        error = heartbeat.json()["error"]
        assert (error["code"], error["details"]["exit"]) == ("unavailable", 7)
        assert error["details"]["retry_after"] == 5
        # A keyed write during the outage: refused whole, so its retry later applies it.
        claim_key = str(uuid.uuid4())
        claim = api.post(
            "/tasks/task-1/claim",
            json={"base_commit": "base0001"},
            headers={"Idempotency-Key": claim_key},
        )
        assert claim.status_code == 503, claim.text
        # A page that needs the database (signing in): the plain 503 page, not a 500.
        page = web.post(
            "/login/",
            data={"username": "ada", "password": "pw-for-tests", "csrfmiddlewaretoken": csrf},
            headers={"Referer": server.url + "/login/"},
        )
        assert page.status_code == 503, page.text[:500]
        assert page.headers["Retry-After"] == "5"
        assert "unavailable" in page.text

        database.start()
        back = time.monotonic()
        while True:
            answer = api.post("/agents/heartbeat", json={})
            if answer.status_code == 200:
                break
            assert answer.status_code == 503, answer.text  # never a 500 on the way back
            assert time.monotonic() - back < 10, "no recovery within 10 s"
            time.sleep(0.2)

        first = api.post(
            "/tasks/task-1/claim",
            json={"base_commit": "base0001"},
            headers={"Idempotency-Key": claim_key},
        )
        again = api.post(
            "/tasks/task-1/claim",
            json={"base_commit": "base0001"},
            headers={"Idempotency-Key": claim_key},
        )
        assert first.status_code == again.status_code == 200, (first.text, again.text)
        assert first.json() == again.json()
        assert first.json()["task"]["status"] == "CLAIMED"
        assert django_run(database.database_url, COUNT_CLAIMS) == "1"
        log = server.log_tail(20000)
        assert "Internal Server Error" not in log
        # Each 503 `unavailable` had a cause, and the log says it (once a process), then the end.
        outage = [line for line in log.splitlines() if "PostgreSQL unreachable (" in line]
        assert outage, log[-3000:]
        assert all("; the API answers 503 until it answers again" in line for line in outage)
        assert "PostgreSQL reachable again" in log, log[-3000:]
