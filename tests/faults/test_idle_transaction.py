"""A transaction left open and idle (issue #14, fault 4).

Another client of the database that holds a transaction open with a task's row locked does not
stall claims: claim-next skips the locked row and hands out the others at once. A connection
of our own left idle inside a transaction (a hung worker) is ended by PostgreSQL after
`DB_IDLE_IN_TRANSACTION_TIMEOUT`, and the claim waiting on its lock goes through. The product's
connections carry both timeouts. (Throughput while another client holds a snapshot for minutes
is measured by `bench/claims.py --idle-holder`, not here.)
"""

from __future__ import annotations

import select
import subprocess
import sys

import httpx
import psycopg
import pytest
from django.db import connection

from tests.faults.support import subprocess_env
from tests.live_server import ROOT, live_server

pytestmark = pytest.mark.faults


@pytest.mark.django_db
def test_the_products_connections_carry_both_timeouts_and_no_jit():
    with connection.cursor() as cursor:
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        idle = cursor.fetchone()[0]
        cursor.execute("SHOW statement_timeout")
        statement = cursor.fetchone()[0]
        # And no JIT: compiling the 5,000-task board's card statement cost ~15x its run.
        cursor.execute("SHOW jit")
        jit = cursor.fetchone()[0]
    assert (idle, statement, jit) == ("1min", "30s", "off")


def _api(server, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{server.url}/api/v1/projects/faults",
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )


def test_a_foreign_idle_transaction_holding_a_task_does_not_stall_claims(database):
    foreign = psycopg.connect(database.database_url)  # not ours: no timeout applies to it
    foreign.execute("SELECT txid_current()")
    foreign.execute("SELECT id FROM boards_task WHERE key = 'task-1' FOR UPDATE")
    try:
        with live_server(name="idle-foreign", database_url=database.database_url) as server:
            first = _api(server, database.keys["coder-1"]).post(
                "/tasks/claim-next", json={"base_commit": "base0001"}
            )
            second = _api(server, database.keys["coder-2"]).post(
                "/tasks/claim-next", json={"base_commit": "base0001"}
            )
    finally:
        foreign.rollback()
        foreign.close()
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    # task-1 is the better task (created first) but locked: skipped, not waited for.
    assert first.json()["task"]["key"] == "task-2"
    assert second.json()["task"] is None


# Our own code, hung inside a transaction with task-1's row locked. It prints when it has the
# lock, then hangs until the test wakes it (a line on its stdin, once the claim has answered:
# a fixed sleep had to outlast a claim on a loaded machine), and prints what became of its
# connection.
HUNG = """
import sys
import django
django.setup()
from django.db import DatabaseError, transaction
from boards.models import Task
try:
    with transaction.atomic():
        Task.objects.select_for_update().get(key="task-1")
        print("locked", flush=True)
        sys.stdin.readline()
        print("woke", flush=True)
        Task.objects.count()
    print("still connected", flush=True)
except DatabaseError as exc:
    print("ended:", str(exc).splitlines()[0], flush=True)
"""


def test_our_connection_idle_in_a_transaction_is_ended_and_the_claim_goes_through(database):
    env = subprocess_env(database.database_url)
    env["DB_IDLE_IN_TRANSACTION_TIMEOUT"] = "1"
    with live_server(name="idle-ours", database_url=database.database_url) as server:
        api = _api(server, database.keys["coder-1"])
        hung = subprocess.Popen(
            [sys.executable, "-c", HUNG],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert hung.stdout.readline().strip() == "locked"
            answer = api.post("/tasks/task-1/claim", json={"base_commit": "base0001"})
            # The claim did not wait for the hung code to wake (it is woken only now):
            # PostgreSQL had ended its session (and its lock) after one idle second.
            answered_while_it_slept = hung.poll() is None and not _has_output(hung)
            rest = hung.communicate(input="wake\n", timeout=60)[0]
        finally:
            if hung.poll() is None:
                hung.kill()
    assert answer.status_code == 200, answer.text
    assert answer.json()["task"]["assigned_to"] == "coder-1"
    assert answered_while_it_slept
    lines = rest.splitlines()
    assert lines[0] == "woke" and lines[1].startswith("ended:"), rest
    assert "idle-in-transaction timeout" in lines[1], rest


def _has_output(process: subprocess.Popen) -> bool:
    return bool(select.select([process.stdout], [], [], 0)[0])
