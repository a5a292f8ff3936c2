"""A server worker killed mid-request (issue #14, fault 1).

The production server (granian, two workers, a dead one respawned; README "Production") on a
private PostgreSQL. A coder's claim, sent with an Idempotency-Key, is caught at one of two
moments and its worker is SIGKILLed there:

* before commit: the test holds the task's row lock, so the claim waits inside its
  transaction — the kill must leave nothing written (not the claim, not the key's record);
* after commit: the test makes PostgreSQL wait for a synchronous standby that does not exist
  (`synchronous_standby_names`), so the claim's COMMIT is durable but unanswered — the kill
  must lose nothing.

Either way the coder's retry with the same key gets a consistent answer and the claim is
applied exactly once; the server keeps answering and replaces its worker; the project still
passes every invariant. If the coder never comes back, its lease is reclaimed later: the
watcher takes it once it is dead and another coder takes the task over.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

from agents.client.http import Client
from tests.faults.support import django_run
from tests.live_server import live_server

pytestmark = pytest.mark.faults

CLAIM = {"base_commit": "base0001"}

# The state the kill may have left, read in SQL: the claim's events, the task, the key's record.
STATE = """
SELECT
    (SELECT count(*) FROM boards_event e JOIN boards_task t ON t.id = e.task_id
      WHERE t.key = 'task-1' AND e.action = 'claimed'),
    (SELECT status FROM boards_task WHERE key = 'task-1'),
    (SELECT assigned_to FROM boards_task WHERE key = 'task-1'),
    (SELECT count(*) FROM agents_idempotentrequest)
"""

# Later, with coder-1 gone for good: a sweep after its lease died, then coder-2's takeover.
RECLAIM = """
import json
from datetime import timedelta
import django
django.setup()
from agents.models import Agent
from boards.models import Event, Project, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.tasks import task_claim
from boards.watch.services.watch import watch_sweep

project = Project.objects.get(slug="faults")
task = Task.objects.get(project=project, key="task-1")
config = config_of(project)
later = task.lease_expires + timedelta(seconds=config.lease_grace + config.retry_backoff[0] + 1)
sweep = watch_sweep(project=project, now=later)
coder = Agent.objects.get(project=project, agent_id="coder-2")
task = task_claim(task=Task.objects.get(pk=task.pk), agent=coder, now=later, base_commit="b2")
print(json.dumps({
    "actions": sweep.actions,
    "expired": Event.objects.filter(task=task, action="lease_expired").count(),
    "status": task.status,
    "assigned_to": task.assigned_to,
}))
"""

VALIDATE = """
import django
django.setup()
from django.core.management import call_command
call_command("liza_validate", project="faults")
"""


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _workers(server) -> set[int]:
    """The granian worker processes: descendants of the server holding a database socket."""
    return {pid for pid in _descendants(server.process.pid) if _sockets(pid)}


def _sockets(pid: int) -> set[str]:
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return set()
    links = set()
    for fd in fds:
        try:
            links.add(os.readlink(fd))
        except OSError:
            continue
    return {link for link in links if link.startswith("socket:[")}


def _process_with_local_port(server, port: int) -> int:
    """The server process owning the TCP connection whose local port is `port` (the client
    side of a PostgreSQL session: pg_stat_activity.client_port)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    for pid in _descendants(server.process.pid):
        if _sockets(pid) & inodes:
            return pid
    raise AssertionError(f"no server process holds the connection from port {port}")


def _replayed(answer) -> bool:
    return {k.lower(): v for k, v in answer.headers.items()}.get("idempotent-replayed") == "true"


def _wait_for_backend(admin: psycopg.Connection, condition: str) -> int:
    """The client port of the one session of the product waiting as `condition` says."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        rows = admin.execute(
            "SELECT client_port FROM pg_stat_activity WHERE datname = 'liza_faults'"
            f" AND pid <> pg_backend_pid() AND {condition}"
        ).fetchall()
        if rows:
            assert len(rows) == 1, rows
            return rows[0][0]
        time.sleep(0.02)
    raise AssertionError(f"no session came to wait on {condition}")


def _wait_gone(admin: psycopg.Connection, port: int) -> None:
    deadline = time.monotonic() + 20
    while admin.execute("SELECT 1 FROM pg_stat_activity WHERE client_port = %s", [port]).fetchone():
        assert time.monotonic() < deadline, "the killed worker's session never ended"
        time.sleep(0.05)


@pytest.mark.parametrize("moment", ["before commit", "after commit"])
def test_a_worker_killed_mid_claim_loses_nothing_and_the_retry_is_consistent(database, moment):
    env = {"DB_POOL_MAX_SIZE": "4"}
    with live_server(
        name="worker-kill", server="granian", database_url=database.database_url, env=env
    ) as server:
        api = httpx.Client(
            base_url=f"{server.url}/api/v1/projects/faults",
            headers={"Authorization": f"Bearer {database.keys['coder-1']}"},
            timeout=60,
        )
        assert api.post("/agents/heartbeat", json={}).status_code == 200
        workers = _workers(server)
        key = {"Idempotency-Key": str(uuid.uuid4())}
        admin = psycopg.connect(database.database_url, autocommit=True)
        holder = None
        if moment == "before commit":
            holder = psycopg.connect(database.database_url)
            holder.execute("SELECT id FROM boards_task WHERE key = 'task-1' FOR UPDATE")
            waiting = "wait_event_type = 'Lock'"
        else:
            admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'liza_no_such_standby'")
            admin.execute("SELECT pg_reload_conf()")
            waiting = "wait_event = 'SyncRep'"

        outcome: dict[str, object] = {}

        def claim() -> None:
            try:
                outcome["answer"] = api.post("/tasks/task-1/claim", json=CLAIM, headers=key)
            except httpx.HTTPError as exc:
                outcome["error"] = exc

        sender = threading.Thread(target=claim)
        sender.start()
        port = _wait_for_backend(admin, waiting)
        victim = _process_with_local_port(server, port)
        assert victim in workers
        os.kill(victim, signal.SIGKILL)
        sender.join(30)
        assert "answer" not in outcome, outcome  # the coder got no answer
        assert isinstance(outcome["error"], httpx.TransportError), outcome

        if holder is not None:
            holder.rollback()
            holder.close()
        else:
            admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
            admin.execute("SELECT pg_reload_conf()")
        _wait_gone(admin, port)

        claimed, status, assigned_to, keys = admin.execute(STATE).fetchone()
        if moment == "before commit":
            # Rolled back whole: no claim, no lease, no remembered key.
            assert (claimed, status, assigned_to, keys) == (0, "UNCLAIMED", "", 0)
        else:
            # Committed whole: the claim and the key's stored answer.
            assert (claimed, status, assigned_to, keys) == (1, "CLAIMED", "coder-1", 1)

        # The coder retries as `liza` does: the same Idempotency-Key, and a refused or broken
        # connection tried again with backoff (the address can refuse for a moment while
        # granian replaces its worker).
        with Client(server.url, "faults", database.keys["coder-1"], retries=6) as coder:
            same = {"json": CLAIM, "idempotency_key": key["Idempotency-Key"]}
            retry = coder.request("POST", "tasks/task-1/claim", **same)
            again = coder.request("POST", "tasks/task-1/claim", **same)
        assert (retry.status, again.status) == (200, 200)
        assert retry.body == again.body
        assert (retry.body["task"]["status"], retry.body["task"]["assigned_to"]) == (
            "CLAIMED",
            "coder-1",
        )
        assert _replayed(again)
        if moment == "after commit":  # the retry found the answer the kill cut off
            assert _replayed(retry)
        assert admin.execute(STATE).fetchone()[:3] == (1, "CLAIMED", "coder-1")

        # The server goes on, and its dead worker is replaced.
        deadline = time.monotonic() + 30
        while len(_workers(server) - {victim}) < 2:
            assert time.monotonic() < deadline, "granian did not replace the killed worker"
            time.sleep(0.2)
        for _ in range(4):  # whichever worker answers
            assert api.post("/agents/heartbeat", json={}).status_code == 200
        admin.close()
        assert "VALID" in django_run(database.database_url, VALIDATE)

    # Had coder-1 died with its worker, its lease would be reclaimed later.
    reclaimed = json.loads(django_run(database.database_url, RECLAIM).splitlines()[-1])
    assert reclaimed["expired"] == 1 and any("coder-1" in a for a in reclaimed["actions"])
    assert (reclaimed["status"], reclaimed["assigned_to"]) == ("CLAIMED", "coder-2")
