"""The live board: render time and transition-to-browser latency (SPEC §7, §11; bench/BOARD.md).

    .venv/bin/python bench/board.py [--quick] [--json] [--keep-db]

Creates its own throwaway PostgreSQL database (`liza_bench_board`, dropped at the end) and uses
Redis database 13 with a channel prefix of its own (`LIZA_BENCH_BOARD_DB` and
`LIZA_BENCH_BOARD_REDIS` choose others: two runs on one machine must not share them), then
measures:

(a) render  server time of the board view (`boards.board.web.board.board`, in-process,
RequestFactory)
            at 100 / 500 / 2,000 / 5,000 tasks of the open sprint, next to the bare SQL
            (psycopg, prepared) fetching the same rows: the cards the board shows (per-column
            limit), their waiting-on dependency keys, their open reviews, and the per-column
            counts. Tasks spread evenly over the eight non-terminal states (every task is a
            card until a column reaches its limit), each depends on its predecessor, every
            READY_FOR_REVIEW task has an open review claim.
(b) live    transition-to-browser latency for 100 and 500 connected websockets at 5 events/s:
            a real daphne subprocess with REDIS_URL, clients in a separate process (asyncio +
            `websockets`), transitions (DRAFT → UNCLAIMED, `task_finalize`) made through the
            services in this process. Latency = client receive time − commit time (stamped by
            the first on_commit callback, right after COMMIT), correlated by task key; every
            client must see every sequence number. Next to it, the same clients against a bare
            relay written here: a `websockets` server subscribed to one Redis channel that
            forwards each message (published at the same rate, same size) to every client.
            `--layer memory`: the embedded default's in-memory layer instead (no REDIS_URL for
            the server; the transitions made inside it by bench/embedded_asgi.py, the only
            place that layer is reachable from). `--server` picks daphne, granian-1w, uvicorn
            (one process each) or granian-2w; each run reports the server's CPU per event.

Everything is bounded: fixed run lengths, timeouts on every wait, subprocesses killed at exit.
The `--client-worker` and `--bare-server` modes are this script's own subprocesses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PYTHON = sys.executable
HOST = "127.0.0.1"
PG_BASE = os.environ.get("LIZA_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
# Overridable so that two people (or helpers) benchmarking on one machine do not drop each
# other's database or flush each other's Redis.
DB_NAME = os.environ.get("LIZA_BENCH_BOARD_DB", "liza_bench_board")
REDIS_URL = os.environ.get("LIZA_BENCH_BOARD_REDIS", "redis://127.0.0.1:6379/13")
SIZES = (100, 500, 2000, 5000)
CLIENTS = (100, 500)
RATE = 5.0  # events per second
NON_TERMINAL = (
    "DRAFT",
    "UNCLAIMED",
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "INTEGRATION_FAILED",
    "BLOCKED",
)


def log(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


# ---------------------------------------------------------------------------------------------
# database and Django
# ---------------------------------------------------------------------------------------------


def create_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def drop_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


def server_env(prefix: str, *, redis: bool = True) -> dict[str, str]:
    """The servers' environment; without `redis`, the embedded default's in-memory layer."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return {
        **env,
        "DATABASE_URL": f"{PG_BASE}/{DB_NAME}",
        **({"REDIS_URL": REDIS_URL} if redis else {}),
        # bench/settings.py: board broadcasts on channel names of their own.
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "LIZA_BENCH_CHANNEL_PREFIX": prefix,
        "LOG_LEVEL": "ERROR",
        "PYTHONPATH": str(ROOT),
    }


def setup_django(prefix: str) -> None:
    os.environ.update(server_env(prefix))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_project(slug: str):
    """A project with a planner, three coders, an admin, a goal and an open sprint."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from agents.services import agent_register
    from boards.coordination.services.goals import goal_create
    from boards.coordination.services.projects import membership_set, project_create
    from boards.coordination.services.sprints import sprint_create

    now = timezone.now() - timedelta(minutes=1)
    project = project_create(slug=slug, name=slug, now=now)
    planner = agent_register(project=project, agent_id="planner-1", role="planner", now=now)
    for i in (1, 2, 3):
        agent_register(project=project, agent_id=f"coder-{i}", role="coder", now=now)
    agent_register(project=project, agent_id="code-reviewer-1", role="code_reviewer", now=now)
    user = get_user_model().objects.create_user(f"admin-{slug}", password="bench-pw")
    from boards.coordination.services.actors import SYSTEM

    membership_set(project=project, user=user, role="admin", actor=SYSTEM, now=now)
    goal = goal_create(project=project, actor=planner, description="Benchmark", now=now)
    sprint = sprint_create(project=project, actor=planner, goal=goal, now=now)
    return project, planner, user, sprint


def bulk_tasks(project, sprint, count: int) -> None:
    """`count` sprint tasks over the non-terminal states, chained dependencies, open reviews."""
    import itertools

    from django.utils import timezone

    from boards.coordination.models.tasks import Review, Task

    now = timezone.now()
    states = itertools.cycle(NON_TERMINAL)
    tasks = []
    for i in range(count):
        status = next(states)
        fields: dict[str, Any] = {}
        if status in ("CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED", "INTEGRATION_FAILED"):
            fields = {
                "assigned_to": f"coder-{i % 3 + 1}",
                "worktree": f".worktrees/t-{i}",
                "base_commit": "bench0001",
                "iteration": 1 + i % 3,
            }
        if status == "CLAIMED":
            fields["lease_expires"] = now + timedelta(minutes=30)
        if status in ("READY_FOR_REVIEW", "REJECTED", "APPROVED"):
            fields["review_commit"] = f"{i:08x}"
        if status == "REJECTED":
            fields.update(rejection_reason="Needs tests", review_cycles_current=1)
        if status == "BLOCKED":
            fields.update(blocked_reason="The spec is silent on retries", blocked_questions=["?"])
        tasks.append(
            Task(
                project=project,
                goal=sprint.goal,
                key=f"t-{i}",
                description=f"Benchmark task {i}: implement the retry policy for endpoint {i}",
                status=status,
                priority=1 + i % 5,
                created=now + timedelta(microseconds=i),
                spec_ref=f"specs/t-{i}.md",
                done_when="the endpoint retries",
                **fields,
            )
        )
    rows = Task.objects.bulk_create(tasks, batch_size=1000)
    planned = sprint.planned.through
    planned.objects.bulk_create((planned(sprint=sprint, task=t) for t in rows), batch_size=2000)
    deps = Task.depends_on.through
    deps.objects.bulk_create(
        (deps(from_task=t, to_task=prev) for prev, t in itertools.pairwise(rows)), batch_size=2000
    )
    Review.objects.bulk_create(
        (
            Review(
                project=project,
                task=t,
                reviewer="code-reviewer-1",
                review_commit=t.review_commit,
                claimed_at=now,
                lease_expires=now + timedelta(minutes=30),
            )
            for t in rows
            if t.status == "READY_FOR_REVIEW"
        ),
        batch_size=2000,
    )
    # A history like a real project's (the header's sprint metrics read it): five events each.
    from boards.coordination.models.records import Event

    # With their transitions: a card's age in its state is read from the last one.
    history = (
        ("created", "", "DRAFT"),
        ("finalized", "DRAFT", "UNCLAIMED"),
        ("claimed", "UNCLAIMED", "CLAIMED"),
        ("ready_for_review", "CLAIMED", "READY_FOR_REVIEW"),
        ("approved", "READY_FOR_REVIEW", "APPROVED"),
    )
    Event.objects.bulk_create(
        (
            Event(
                project=project,
                task=t,
                timestamp=now + timedelta(seconds=n),
                actor_kind="agent",
                actor_id="coder-1",
                action=action,
                from_status=before,
                to_status=after,
                detail=f"{t.key} {action}",
            )
            for t in rows
            for n, (action, before, after) in enumerate(history)
        ),
        batch_size=5000,
    )
    # Fresh bulk-loaded tables have no statistics yet; autovacuum would gather them soon.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE boards_task, boards_task_depends_on, boards_review")
        cursor.execute("ANALYZE boards_sprint_planned, boards_event")


# ---------------------------------------------------------------------------------------------
# (a) render time next to bare SQL
# ---------------------------------------------------------------------------------------------

BARE_SQL = """
WITH scoped AS (
    SELECT t.* FROM boards_task t
    WHERE t.project_id = %(project)s
      AND (t.id IN (SELECT task_id FROM boards_sprint_planned WHERE sprint_id = %(sprint)s)
           OR t.id IN (SELECT task_id FROM boards_sprint_stretch WHERE sprint_id = %(sprint)s))
), ranked AS (
    SELECT s.*, row_number() OVER (
        PARTITION BY s.status ORDER BY s.priority, s.created, s.id) AS rank
    FROM scoped s WHERE s.status <> ALL(%(terminal)s)
)
SELECT r.id, r.key, r.description, r.status, r.priority, r.criticality, r.assigned_to,
       r.lease_expires, r.iteration, r.max_iterations, r.review_cycles_current,
       r.max_review_cycles, r.blocked_reason, r.integration_fix, r.handoff_pending,
       (SELECT array_agg(d.key ORDER BY d.key)
          FROM boards_task_depends_on e JOIN boards_task d ON d.id = e.to_task_id
         WHERE e.from_task_id = r.id AND d.status <> 'MERGED') AS waiting_on,
       (SELECT array_agg(v.reviewer) FROM boards_review v
         WHERE v.task_id = r.id AND v.closed_at IS NULL AND v.verdict = ''
           AND v.lease_expires > now()) AS reviewing_by,
       (SELECT min(v.lease_expires) FROM boards_review v
         WHERE v.task_id = r.id AND v.closed_at IS NULL AND v.verdict = ''
           AND v.lease_expires > now()) AS review_lease
FROM ranked r WHERE r.rank <= %(limit)s
ORDER BY r.priority, r.created, r.id
"""
COUNTS_SQL = "SELECT status, count(*) FROM boards_task WHERE project_id = %(project)s AND id IN (SELECT task_id FROM boards_sprint_planned WHERE sprint_id = %(sprint)s) GROUP BY status"  # noqa: E501


def time_render(sizes: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    import psycopg
    from django.core.cache import cache as shared_cache
    from django.test import RequestFactory

    from boards import protocol as p
    from boards.board.live import fragments
    from boards.board.live.render import render_changes
    from boards.board.selectors.board import COLUMN_CARD_LIMIT
    from boards.board.web import board as views
    from boards.coordination.outbox import AGENT, SPRINT, TASK

    factory = RequestFactory()
    rows = []
    raw = psycopg.connect(f"{PG_BASE}/{DB_NAME}", autocommit=True, prepare_threshold=0)
    for size in sizes:
        project, _planner, user, sprint = make_project(f"render-{size}")
        bulk_tasks(project, sprint, size)

        # Advisory WIP limits on some columns (issue #13): the marking path runs too.
        from django.utils import timezone

        from boards.coordination.services.projects import config_update

        config_update(
            project=project,
            actor=user,
            now=timezone.now(),
            wip_limits={"CLAIMED": 3, "READY_FOR_REVIEW": 5, "BLOCKED": 2},
        )

        def view(project=project, user=user, query=""):
            request = factory.get(f"/p/{project.slug}/{query}")
            request.user = user
            response = views.board(request, slug=project.slug)
            assert response.status_code == 200
            return response

        # Cold: no card fragment anywhere yet (this process's copies and the shared cache).
        fragments.forget_local()
        shared_cache.clear()
        t0 = time.perf_counter()
        html = view().content.decode()
        cold_ms = (time.perf_counter() - t0) * 1000
        # Another process's render: the fragments in the shared cache, none in this process.
        fragments.forget_local()
        t0 = time.perf_counter()
        view()
        shared_ms = (time.perf_counter() - t0) * 1000
        cards = html.count('<article class="card')
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as counted:
            view()
        view_ms, cpu_ms = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            view()
            view_ms.append((time.perf_counter() - t0) * 1000)
            cpu_ms.append((time.process_time() - c0) * 1000)

        # Swimlanes (issue #13): the same board grouped by assignee, then by sprint.
        lanes_ms: dict[str, list[float]] = {"assignee": [], "sprint": []}
        for by, times in lanes_ms.items():
            view(query=f"?lanes={by}")
            for _ in range(repeats):
                t0 = time.perf_counter()
                view(query=f"?lanes={by}")
                times.append((time.perf_counter() - t0) * 1000)

        params = {
            "project": project.pk,
            "sprint": sprint.pk,
            "terminal": sorted(p.TERMINAL_TASK_STATES),
            "limit": COLUMN_CARD_LIMIT,
        }
        fetched = raw.execute(BARE_SQL, params).fetchall()
        assert len(fetched) == cards, (len(fetched), cards)
        sql_ms = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            raw.execute(BARE_SQL, params).fetchall()
            raw.execute(COUNTS_SQL, params).fetchall()
            sql_ms.append((time.perf_counter() - t0) * 1000)

        # What a websocket process spends rendering one transition for every board it serves.
        from agents.models import Agent
        from boards.coordination.models.tasks import Task

        task = Task.objects.filter(project=project, status="CLAIMED").first()
        agent = Agent.objects.get(project=project, agent_id="coder-1")
        changes = [
            {"kind": TASK, "id": task.pk},
            {"kind": AGENT, "id": agent.pk},
            {"kind": SPRINT, "id": project.pk},
        ]
        event_ms = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            render_changes(project.pk, changes)
            event_ms.append((time.perf_counter() - t0) * 1000)

        row = {
            "tasks": size,
            "cards": cards,
            "view_ms_p50": round(statistics.median(view_ms), 2),
            "view_ms_min": round(min(view_ms), 2),
            "view_ms_cold": round(cold_ms, 2),
            "view_ms_shared": round(shared_ms, 2),
            "view_cpu_ms_p50": round(statistics.median(cpu_ms), 2),
            "sql_ms_p50": round(statistics.median(sql_ms), 2),
            "sql_ms_min": round(min(sql_ms), 2),
            "ratio": round(statistics.median(view_ms) / statistics.median(sql_ms), 1),
            "event_render_ms_p50": round(statistics.median(event_ms), 2),
            "lanes_assignee_ms_p50": round(statistics.median(lanes_ms["assignee"]), 2),
            "lanes_sprint_ms_p50": round(statistics.median(lanes_ms["sprint"]), 2),
            "html_kb": round(len(html) / 1024),
            "queries": len(counted.captured_queries),
        }
        log("render", row)
        rows.append(row)
    raw.close()
    return rows


# ---------------------------------------------------------------------------------------------
# (b) transition-to-browser latency
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {port} after {timeout} s")


@contextlib.contextmanager
def subprocess_running(cmd: list[str], env: dict[str, str], name: str) -> Iterator[Any]:
    logfile = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed below)
        "w+", prefix=f"bench-board-{name}-", suffix=".log"
    )
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        logfile.seek(0)
        tail = logfile.read()[-2000:]
        if tail.strip():
            log(f"--- {name} log (tail) ---\n{tail}")
        logfile.close()


class Clients:
    """The client process: N websockets; reports what each one received and when."""

    def __init__(self, spec: dict[str, Any], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, str(Path(__file__).resolve()), "--client-worker"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.append(line)

    def _wait_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self._lines:
                if line.startswith(prefix):
                    return line[len(prefix) :].strip()
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise TimeoutError(f"client worker: no {prefix!r} within {timeout} s")

    def ready(self, timeout: float = 300) -> dict[str, Any]:
        return json.loads(self._wait_line("READY ", timeout))

    def finish(self, last_seq: int, timeout: float = 30) -> dict[str, Any]:
        self.proc.stdin.write(f"LAST {last_seq}\n")
        self.proc.stdin.flush()
        return json.loads(self._wait_line("RESULT ", timeout))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def session_cpu_s(session: int) -> float:
    """CPU seconds (user + system) of every process in a session: a server and its workers
    (each server is started in a session of its own)."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:  # fields after the name: state, ppid, pgrp, session
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def summarize(
    result: dict[str, Any], stamps: dict[str, float], first_seq: int, last_seq: int
) -> dict[str, Any]:
    latencies = []
    lost = 0
    expected = set(range(first_seq, last_seq + 1))
    for client in result["clients"]:
        seen = {seq for seq, _, _ in client}
        lost += len(expected - seen)
        for _seq, key, received in client:
            if key in stamps:
                latencies.append((received - stamps[key]) * 1000)
    return {
        "events": len(stamps),
        "deliveries": len(latencies),
        "p50_ms": round(pct(latencies, 50), 1),
        "p99_ms": round(pct(latencies, 99), 1),
        "max_ms": round(max(latencies), 1) if latencies else None,
        "lost": lost,
        "connect_s": result["connect_s"],
    }


class InProcess:
    """Transitions made here, published through Redis (`--layer redis`): the stamp is an
    `on_commit` callback registered before the service's own, so it runs right after COMMIT."""

    def __init__(self, project, planner, port: int) -> None:
        self.project, self.planner = project, planner

    def sequence(self) -> int:
        from boards.coordination.outbox import current_sequence

        return current_sequence(self.project.pk)

    def finalize(self, key: str) -> tuple[float, int, float]:
        from django.db import transaction
        from django.utils import timezone

        from boards.coordination.models.tasks import Task
        from boards.coordination.services.tasks import task_finalize

        task = Task.objects.get(project=self.project, key=key)
        stamp: list[float] = []
        begin = time.perf_counter()
        with transaction.atomic():
            # Registered first, so it runs first after COMMIT, before the publish.
            transaction.on_commit(lambda: stamp.append(time.time()))
            task_finalize(task=task, actor=self.planner, now=timezone.now())
        return stamp[0], self.sequence(), (time.perf_counter() - begin) * 1000

    def close(self) -> None:
        pass


class InServer:
    """Transitions made inside the server process (`--layer memory`, the embedded default):
    its in-memory layer is reachable from nowhere else. bench/embedded_asgi.py runs the same
    service and stamps the commit the same way; its answer carries the stamp."""

    def __init__(self, project, planner, port: int) -> None:
        import httpx

        self.project = project
        self.http = httpx.Client(base_url=f"http://{HOST}:{port}", timeout=30)

    def sequence(self) -> int | None:
        return None  # the server's own counter: read from each transition's answer

    def finalize(self, key: str) -> tuple[float, int, float]:
        from bench.embedded_asgi import PATH

        answer = self.http.post(PATH, params={"project": self.project.pk, "key": key})
        answer.raise_for_status()
        body = answer.json()
        return body["committed"], body["seq"], body["service_ms"]

    def close(self) -> None:
        self.http.close()


def run_live(
    n_clients: int, duration: float, port: int, prefix: str, *, server: int, memory: bool = False
) -> dict[str, Any]:
    """The product: transitions through the services at RATE per second, to N open boards."""
    from django.test import Client
    from django.utils import timezone

    from boards.coordination.services.tasks import task_create

    project, planner, user, _sprint = make_project(f"live-{n_clients}")
    count = int(duration * RATE)
    now = timezone.now()
    for i in ["warm-up", *range(count)]:
        task_create(
            project=project,
            actor=planner,
            key=f"ev-{i}",
            description=f"Event {i}",
            now=now,
            spec_ref="specs/ev.md",
            done_when="done",
            sprint_scope="planned",
        )
    web = Client()
    web.force_login(user)
    cookie = f"sessionid={web.cookies['sessionid'].value}"
    clients = Clients(
        {
            "url": f"ws://{HOST}:{port}/ws/p/{project.slug}/",
            "origin": f"http://{HOST}:{port}",
            "cookie": cookie,
            "n": n_clients,
        },
        server_env(prefix, redis=not memory),
    )
    transitions = (InServer if memory else InProcess)(project, planner, port)
    try:
        ready = clients.ready()
        hello = transitions.sequence()
        if hello is None:
            hello = ready["hello_seqs"][0]
        assert all(seq == hello for seq in ready["hello_seqs"]), ready["hello_seqs"][:5]
        # One untimed event first: the server's first render of a project compiles templates.
        _, warm_seq, _ = transitions.finalize("ev-warm-up")
        time.sleep(1.0)
        first_seq = warm_seq + 1
        stamps: dict[str, float] = {}
        service_ms = []
        last_seq = warm_seq
        cpu0 = session_cpu_s(server)
        t0 = time.perf_counter()
        for i in range(count):
            delay = t0 + i / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            key = f"ev-{i}"
            stamps[key], last_seq, took = transitions.finalize(key)
            service_ms.append(took)
        last_seq = transitions.sequence() or last_seq
        result = clients.finish(last_seq)
        cpu = session_cpu_s(server) - cpu0
    finally:
        clients.close()
        transitions.close()
    summary = summarize(result, stamps, first_seq, last_seq)
    summary["transition_ms_p50"] = round(statistics.median(service_ms), 2)
    # The server's CPU per event (the fan-out, and with `--layer memory` the transition too),
    # from the first timed event until every client has the last: steadier than wall times
    # on a shared machine.
    summary["server_cpu_ms_per_event"] = round(cpu * 1000 / count, 1)
    return summary


def run_bare(n_clients: int, duration: float, payload: dict[str, Any], prefix: str) -> dict:
    """The baseline: a minimal websockets relay subscribed to one Redis channel."""
    import redis

    port = free_port()
    channel = f"{prefix}-bare"
    env = server_env(prefix)
    cmd = [PYTHON, str(Path(__file__).resolve()), "--bare-server", str(port), channel]
    with subprocess_running(cmd, env, "bare") as proc:
        wait_port(port, proc, 30)
        clients = Clients(
            {"url": f"ws://{HOST}:{port}/", "origin": None, "cookie": None, "n": n_clients}, env
        )
        r = redis.Redis.from_url(REDIS_URL)
        try:
            clients.ready()
            while r.pubsub_numsub(channel)[0][1] < 1:  # the relay's subscription is in place
                time.sleep(0.01)
            count = int(duration * RATE)
            stamps: dict[str, float] = {}
            cpu0 = session_cpu_s(proc.pid)
            t0 = time.perf_counter()
            for i in range(count):
                delay = t0 + i / RATE - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                key = f"ev-{i}"
                body = json.dumps({**payload, "seq": i + 1, "key": key})
                stamps[key] = time.time()
                r.publish(channel, body)
            result = clients.finish(count)
            cpu = session_cpu_s(proc.pid) - cpu0
        finally:
            clients.close()
            r.close()
    summary = summarize(result, stamps, 1, count)
    summary["server_cpu_ms_per_event"] = round(cpu * 1000 / count, 1)
    return summary


def sample_payload(n_clients: int) -> dict[str, Any]:
    """A real rendered message of the live run's size, to relay in the baseline."""
    from asgiref.sync import async_to_sync

    from boards.board.live.consumers import rendered
    from boards.coordination.models.projects import Project
    from boards.coordination.models.tasks import Task

    project = Project.objects.get(slug=f"live-{n_clients}")
    task = Task.objects.filter(project=project).first()
    message = {
        "type": "board.event",
        "project_id": project.pk,
        "seq": 10**9,
        "changes": [{"kind": "task", "id": task.pk}, {"kind": "sprint", "id": project.pk}],
    }
    return async_to_sync(rendered)(message)


# ---------------------------------------------------------------------------------------------
# subprocess modes
# ---------------------------------------------------------------------------------------------


async def client_worker(spec: dict[str, Any]) -> None:
    from websockets.asyncio.client import connect

    n = spec["n"]
    headers = {"Cookie": spec["cookie"]} if spec["cookie"] else {}
    raw: list[list[tuple[float, str]]] = [[] for _ in range(n)]
    hellos: list[int | None] = [None] * n
    connected = asyncio.Event()
    done = asyncio.Event()
    count = 0
    gate = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        nonlocal count
        async with gate:
            ws = await connect(
                spec["url"],
                additional_headers=headers,
                origin=spec["origin"],
                open_timeout=120,
                ping_interval=None,
                max_size=2**24,
            )
            hellos[i] = json.loads(await ws.recv())["seq"]
        count += 1
        if count == n:
            connected.set()
        try:
            async for message in ws:
                # Stamp first, parse after the run: the client's own work must not add latency.
                raw[i].append((time.time(), message))
                if done.is_set():
                    break
        finally:
            await ws.close()

    t0 = time.perf_counter()
    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await asyncio.wait_for(connected.wait(), 290)
    connect_s = round(time.perf_counter() - t0, 2)
    print("READY " + json.dumps({"hello_seqs": hellos}), flush=True)

    loop = asyncio.get_running_loop()
    line = await loop.run_in_executor(None, sys.stdin.readline)
    last = int(line.split()[1])

    def last_seen(i: int) -> bool:
        return any(f'"seq": {last},' in m or f'"seq":{last},' in m for _, m in raw[i][-3:])

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(last_seen(i) for i in range(n)):
        await asyncio.sleep(0.05)
    done.set()
    for task in tasks:
        task.cancel()
    clients = []
    for messages in raw:
        seen = []
        for received, text in messages:
            message = json.loads(text)
            if message.get("type") != "changes":
                continue
            key = message.get("key") or next(
                (c["task"]["key"] for c in message["changes"] if c["type"] == "task.changed"),
                None,
            )
            seen.append((message["seq"], key, received))
        clients.append(seen)
    print("RESULT " + json.dumps({"clients": clients, "connect_s": connect_s}), flush=True)


async def bare_server(port: int, channel: str) -> None:
    import redis.asyncio as aioredis
    from websockets.asyncio.server import broadcast, serve

    clients: set[Any] = set()

    async def handler(ws) -> None:
        clients.add(ws)
        try:
            await ws.send('{"type": "hello", "seq": 0}')
            await ws.wait_closed()
        finally:
            clients.discard(ws)

    r = aioredis.Redis.from_url(REDIS_URL)
    pubsub = r.pubsub()
    await pubsub.subscribe(channel)
    async with serve(handler, HOST, port, ping_interval=None, max_size=2**24):
        async for message in pubsub.listen():
            if message["type"] == "message":
                broadcast(clients, message["data"].decode())


def run_async(coro) -> None:
    try:
        import uvloop

        uvloop.run(coro)
    except ImportError:
        asyncio.run(coro)


# ---------------------------------------------------------------------------------------------


def print_tables(result: dict[str, Any]) -> None:
    print("\n(a) board render, server time (view function) vs bare SQL of the same rows")
    print("(wall p50 / best of the repeats; CPU = this process only; cold = no card fragment")
    print("cached anywhere; shared = the fragments in the shared cache, none in this process)")
    print(
        f"{'tasks':>6} {'cards':>6} {'view ms':>9} {'best':>7} {'CPU ms':>7} {'cold ms':>8} "
        f"{'shared':>7} {'SQL ms':>7} {'best':>6} {'ratio':>6} {'event ms':>9} {'queries':>8}"
    )
    for r in result["render"]:
        print(
            f"{r['tasks']:>6} {r['cards']:>6} {r['view_ms_p50']:>9} {r['view_ms_min']:>7} "
            f"{r['view_cpu_ms_p50']:>7} {r['view_ms_cold']:>8} {r.get('view_ms_shared', '-'):>7} "
            f"{r['sql_ms_p50']:>7} {r['sql_ms_min']:>6} {r['ratio']:>6} "
            f"{r['event_render_ms_p50']:>9} {r.get('queries', '-'):>8}"
        )
    layer = "the in-memory layer" if result.get("layer") == "memory" else "Redis"
    print(
        f"\n(b) transition → browser latency at {RATE:g} events/s, {result.get('server')}, {layer}"
    )
    print(f"{'clients':>7} {'server':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'lost':>5}")
    for r in result["live"]:
        for name in ("liza", "bare"):
            s = r[name]
            print(
                f"{r['clients']:>7} {name:>7} {s['p50_ms']:>8} {s['p99_ms']:>8} "
                f"{s['max_ms']:>8} {s['lost']:>5}"
            )


APP = "liza_site.asgi:application"
# `--layer memory`: the product's application plus the bench's route that makes a transition
# inside the server, where the in-memory layer lives (bench/embedded_asgi.py).
MEMORY_APP = "bench.embedded_asgi:application"

SERVERS = {
    # The embedded default (`bash .ci/serve`): one process.
    "daphne": lambda port, app: [
        PYTHON, "-m", "daphne", "-b", HOST, "-p", str(port), "-v", "0", app,
    ],
    # The production command (README "Production"): two worker processes on the Redis layer.
    "granian-2w": lambda port, app: [
        PYTHON, "-m", "granian", "--interface", "asginl", "--host", HOST, "--port", str(port),
        "--workers", "2", "--log-level", "warning", "--no-access-log", app,
    ],
    # Single-process candidates for the embedded default (the in-memory layer needs one process).
    "granian-1w": lambda port, app: [
        PYTHON, "-m", "granian", "--interface", "asginl", "--host", HOST, "--port", str(port),
        "--workers", "1", "--log-level", "warning", "--no-access-log", app,
    ],
    "uvicorn": lambda port, app: [
        PYTHON, "-m", "uvicorn", "--host", HOST, "--port", str(port), "--ws", "websockets",
        "--log-level", "error", "--no-access-log", app,
    ],
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (within a minute)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--only", choices=["render", "live"], default=None)
    parser.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--duration", type=float, default=None, help="seconds per live run")
    parser.add_argument("--server", choices=sorted(SERVERS), default="daphne")
    parser.add_argument(
        "--layer",
        choices=["redis", "memory"],
        default="redis",
        help="the channel layer of the live run's server: Redis (transitions made here), or "
        "the embedded default's in-memory layer (transitions made in the server)",
    )
    parser.add_argument("--client-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-server", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.client_worker:
        run_async(client_worker(json.loads(sys.stdin.readline())))
        return 0
    if args.bare_server:
        run_async(bare_server(int(args.bare_server[0]), args.bare_server[1]))
        return 0

    import redis

    started = time.perf_counter()
    prefix = f"liza-bench-board-{uuid.uuid4().hex[:8]}"
    repeats = 5 if args.quick else 25
    duration = args.duration or (4.0 if args.quick else 20.0)
    redis.Redis.from_url(REDIS_URL).flushdb()
    create_database()
    result: dict[str, Any] = {
        "quick": args.quick,
        "rate_per_s": RATE,
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        setup_django(prefix)
        log(f"database ready in {time.perf_counter() - started:.1f} s")
        if args.only in (None, "render"):
            result["render"] = time_render(tuple(args.sizes), repeats)
        if args.only in (None, "live"):
            port = free_port()
            memory = args.layer == "memory"
            server = SERVERS[args.server](port, MEMORY_APP if memory else APP)
            result["server"] = args.server
            result["layer"] = args.layer
            result["live"] = []
            env = server_env(prefix, redis=not memory)
            with subprocess_running(server, env, args.server) as proc:
                wait_port(port, proc, 60)
                for n in args.clients:
                    liza = run_live(n, duration, port, prefix, server=proc.pid, memory=memory)
                    log("live", n, liza)
                    result["live"].append({"clients": n, "liza": liza})
            payload = sample_payload(args.clients[0])
            for row in result["live"]:
                row["bare"] = run_bare(row["clients"], duration, payload, prefix)
                log("bare", row["clients"], row["bare"])
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database()
        redis.Redis.from_url(REDIS_URL).flushdb()
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result))
    else:
        result.setdefault("render", [])
        result.setdefault("live", [])
        print_tables(result)
        print(
            f"\nelapsed {result['elapsed_s']} s; load average before {result['load_before']}, "
            f"after {result['load_after']} (2 cores)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
