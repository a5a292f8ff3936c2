"""Claims per second and latency, from raw SQL to the HTTP API (SPEC §11, the benchmark issue).

    .venv/bin/python bench/claims.py [--quick] [--json]

Creates its own throwaway PostgreSQL database (`liza_bench` next to DATABASE_URL's, default
postgres://postgres@127.0.0.1:5432), migrates it, and for 1, 4, 16 and 64 concurrent agents
measures claims/s and p50/p99 latency of:

  raw        the baseline: `SELECT … FOR UPDATE SKIP LOCKED` + `UPDATE boards_task`, psycopg,
             one connection per worker thread, prepared statements
  raw+       the same claim with the writes and checks the protocol needs, still raw SQL:
             lock the agent, one-task-per-coder check, pause/checkpoint check, pick, update
             the task, update the agent, insert the Event
  service    boards.coordination.services.tasks.task_claim_next in-process, one thread and one
  Django
             connection per agent
  http       POST …/tasks/claim-next against a real ASGI server subprocess on 127.0.0.1,
             load from a separate client process (bench/http_load.py)

Every claim uses a fresh coder (a coder holds one task at a time, seed 000), every level its
own project and queue. After each level the database is checked for double claims: one
`claimed` Event per task, as many CLAIMED tasks as successful claims, no coder holding two.

The full run first compares ASGI servers (daphne, uvicorn, gunicorn+uvicorn workers, granian)
on the same workload at 16 agents, then measures every level with the fastest. Everything is
bounded: each level runs for a fixed time, subprocesses are killed at the end, the database is
dropped (`--keep-db` keeps it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PYTHON = sys.executable
HOST = "127.0.0.1"
APP = "liza_site.asgi:application"
BASE_COMMIT = "bench0001"
LEVELS = (1, 4, 16, 64)
# Claims/s no mode reaches here; queues and agent pools are sized from it so none runs dry.
CEILING = {"raw": 8000, "raw+": 5000, "service": 1500, "http": 2500}

# Each ASGI server as the product would run it on this 2-core machine.
SERVERS: dict[str, list[str]] = {
    "daphne": ["-m", "daphne", "-b", HOST, "-p", "{port}", "-v", "0", APP],
    "uvicorn": [
        "-m", "uvicorn", APP, "--host", HOST, "--port", "{port}", "--no-access-log",
        "--log-level", "warning", "--loop", "uvloop", "--http", "httptools", "--lifespan", "off",
        # bench/http_drain.py's clients pause between requests: a connection closed under a
        # client reusing it would fail that request.
        "--timeout-keep-alive", "300",
    ],
    "uvicorn-2w": [
        "-m", "uvicorn", APP, "--host", HOST, "--port", "{port}", "--no-access-log",
        "--log-level", "warning", "--loop", "uvloop", "--http", "httptools", "--lifespan", "off",
        "--workers", "2", "--timeout-keep-alive", "300",
    ],
    "gunicorn-uvicorn-2w": [
        "-m", "gunicorn", APP, "-k", "uvicorn.workers.UvicornWorker", "-w", "2",
        "-b", f"{HOST}:{{port}}", "--log-level", "warning",
    ],
    "granian": [
        "-m", "granian", "--interface", "asginl", "--host", HOST, "--port", "{port}",
        "--workers", "1", "--log-level", "warning", "--no-access-log", APP,
    ],
    "granian-2w": [
        "-m", "granian", "--interface", "asginl", "--host", HOST, "--port", "{port}",
        "--workers", "2", "--log-level", "warning", "--no-access-log", APP,
    ],
    "granian-4w": [
        "-m", "granian", "--interface", "asginl", "--host", HOST, "--port", "{port}",
        "--workers", "4", "--log-level", "warning", "--no-access-log", APP,
    ],
}  # fmt: skip
# The measured winner (bench/README.md); --quick uses it without comparing.
DEFAULT_SERVER = "granian-2w"


def server_available(name: str) -> bool:
    """Is the server's module installed (`pip install -e '.[bench]'` brings them all)?"""
    import importlib.util

    args = SERVERS[name]
    modules = [args[1]] + (["uvicorn"] if "uvicorn.workers.UvicornWorker" in args else [])
    return all(importlib.util.find_spec(m) is not None for m in modules)


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    mode: str
    agents: int
    claims: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)
    exhausted: int = 0
    verified: dict[str, Any] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def rate(self) -> float:
        return self.claims / self.elapsed if self.elapsed else 0.0

    def pct(self, q: int) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "agents": self.agents,
            "claims": self.claims,
            "seconds": round(self.elapsed, 3),
            "claims_per_s": round(self.rate, 1),
            "p50_ms": round(self.pct(50), 2),
            "p99_ms": round(self.pct(99), 2),
            "errors": self.errors,
            "error_samples": self.samples,
            "workers_out_of_agents": self.exhausted,
            "verified": self.verified,
            "cpu_ms_per_claim": self.cpu,
            "loadavg_before_after": self.load,
        }


# ---------------------------------------------------------------------------------------------
# database: create, migrate, seed, verify
# ---------------------------------------------------------------------------------------------


def create_database(base: str, name: str) -> str:
    import psycopg

    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def drop_database(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def redis_reachable(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
        return True
    except Exception:
        return False


def pg_server() -> str:
    """DATABASE_URL's server part: each benchmark makes a throwaway database of its own there."""
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
    if base.count("/") > 2:  # a full URL: keep only the server part
        base = base.rsplit("/", 1)[0]
    return base


def bench_env(db_url: str, *, channel_prefix: str, no_redis: bool) -> dict[str, str]:
    """The environment this process and its servers run under: bench settings on the throwaway
    database, board broadcasts, rate limits and the key cache's counter on Redis database 9
    (`LIZA_BENCH_REDIS` names another: two benches sharing one would count each other's
    requests and bump each other's key counter) under their own prefix when Redis answers,
    else the in-memory layer."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=db_url,
        DJANGO_SETTINGS_MODULE="bench.settings",
        PYTHONPATH=str(ROOT),
        LIZA_BENCH_CHANNEL_PREFIX=channel_prefix,
    )
    redis_url = os.environ.get("LIZA_BENCH_REDIS", "redis://127.0.0.1:6379/9")
    if not no_redis and redis_reachable(redis_url):
        env["REDIS_URL"] = redis_url
    else:
        env.pop("REDIS_URL", None)
    return env


@dataclass
class Seeded:
    project_id: int
    slug: str
    agents: list[tuple[int, str]]  # (pk, agent_id), in id order

    def key(self, pk: int) -> str:
        return bench_key(pk)


def bench_key(agent_pk: int) -> str:
    """The plain key `insert_bench_keys` stored for the agent row `agent_pk`."""
    return f"liza_{agent_pk:012x}_bench-secret-{agent_pk}"


def insert_bench_keys(cur, project_pk: int, now) -> None:
    """A key for every agent of the project, in one statement (issuing them through the
    service hashes and writes one at a time): `bench_key(pk)`, its prefix and digest as
    `AgentKey` stores them."""
    cur.execute(
        "INSERT INTO agents_agentkey "
        "(agent_id, project_id, prefix, key_hash, label, created, last_used_at) "
        "SELECT a.id, a.project_id, lpad(to_hex(a.id), 12, '0'), "
        "encode(sha256(convert_to('liza_' || lpad(to_hex(a.id), 12, '0') "
        "|| '_bench-secret-' || a.id, 'UTF8')), 'hex'), 'bench', %s, %s "
        "FROM agents_agent a WHERE a.project_id = %s",
        [now, now, project_pk],
    )


def _quoted(columns: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def copy_tasks_and_agents(cur, task_pk: int, tasks: int, agent_pk: int, agents: int, ids: str):
    """The template task copied to `tasks` tasks (keys t-1…) and the template agent to `agents`
    agents (`ids` + 1…), in two statements: a bench's queue seeded in seconds."""
    from agents.models import Agent
    from boards.coordination.models.tasks import Task

    task_cols = [f.column for f in Task._meta.concrete_fields if f.column not in ("id", "key")]
    agent_cols = [
        f.column for f in Agent._meta.concrete_fields if f.column not in ("id", "agent_id")
    ]
    # Distinct creation times, as tasks written one by one have (ties would make PostgreSQL
    # sort the whole queue by id on every pick).
    copied = ", ".join(
        "\"created\" + g * interval '1 millisecond'" if c == "created" else f'"{c}"'
        for c in task_cols
    )
    cur.execute(
        f"INSERT INTO boards_task ({_quoted(task_cols)}, key) "
        f"SELECT {copied}, 't-' || g FROM boards_task, "
        "generate_series(1, %s) g WHERE boards_task.id = %s",
        [tasks - 1, task_pk],
    )
    cur.execute(
        f"INSERT INTO agents_agent ({_quoted(agent_cols)}, agent_id) "
        f"SELECT {_quoted(agent_cols)}, %s || g FROM agents_agent, "
        "generate_series(1, %s) g WHERE agents_agent.id = %s",
        [ids, agents - 1, agent_pk],
    )


def seed(slug: str, *, tasks: int, agents: int, keys: bool) -> Seeded:
    """A project with `tasks` UNCLAIMED tasks, `agents` coders and, for HTTP, one key each.

    One row of each kind is made by the ORM (so every default is Django's), then copied with
    INSERT … SELECT generate_series: tens of thousands of rows in well under a second. Keys are
    stored exactly as `agent_key_issue` stores them (prefix + SHA-256 of the whole key), with
    last_used_at set so the once-a-minute bookkeeping write does not fire on the first use.
    """
    from django.db import connection
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.tasks import Task
    from boards.coordination.services.projects import project_create

    now = timezone.now()
    project = project_create(slug=slug, name=slug, now=now)
    template = Task.objects.create(
        project=project,
        key="t-0",
        description="benchmark task",
        status="UNCLAIMED",
        created=now,
        spec_ref="bench.md",
        done_when="claimed",
    )
    agent_template = Agent.objects.create(project=project, agent_id="coder-0", role="coder")
    with connection.cursor() as cur:
        copy_tasks_and_agents(cur, template.pk, tasks, agent_template.pk, agents, "coder-")
        if keys:
            insert_bench_keys(cur, project.pk, now)
        cur.execute("ANALYZE boards_task")
        cur.execute("ANALYZE agents_agent")
        cur.execute(
            "SELECT id, agent_id FROM agents_agent WHERE project_id = %s ORDER BY id",
            [project.pk],
        )
        rows = cur.fetchall()
    return Seeded(project.pk, slug, rows)


def verify(run: Run, seeded: Seeded, claimed: list[Any], *, events: bool) -> None:
    """No task claimed twice, no coder holding two, every reported claim really committed."""
    from django.db import connection

    pid = seeded.project_id
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), count(DISTINCT assigned_to) FROM boards_task "
            "WHERE project_id = %s AND status = 'CLAIMED'",
            [pid],
        )
        claimed_rows, holders = cur.fetchone()
        cur.execute(
            "SELECT count(*), count(DISTINCT task_id) FROM boards_event "
            "WHERE project_id = %s AND action = 'claimed'",
            [pid],
        )
        claim_events, tasks_with_event = cur.fetchone()
    distinct_reported = len(set(claimed))
    checks = {
        "reported_claims": len(claimed),
        "distinct_tasks_reported": distinct_reported,
        "claimed_rows": claimed_rows,
        "coders_holding": holders,
    }
    ok = len(claimed) == distinct_reported == claimed_rows == holders
    if events:
        checks["claimed_events"] = claim_events
        checks["tasks_with_claimed_event"] = tasks_with_event
        ok = ok and claim_events == tasks_with_event == claimed_rows
    checks["double_claims"] = (len(claimed) - distinct_reported) + (
        claim_events - tasks_with_event if events else 0
    )
    checks["ok"] = ok
    run.verified = checks


# ---------------------------------------------------------------------------------------------
# in-process modes: worker threads
# ---------------------------------------------------------------------------------------------


def _slices(items: list[Any], n: int) -> list[list[Any]]:
    size = len(items) // n
    return [items[i * size : (i + 1) * size] for i in range(n)]


def run_threads(
    run: Run,
    duration: float,
    worker_args: list[Any],
    worker: Callable[..., None],
) -> list[Any]:
    """Start one thread per agent; all start claiming at once and stop at the deadline."""
    n = len(worker_args)
    barrier = threading.Barrier(n + 1, timeout=60)
    clock: dict[str, float] = {}
    outs = [
        {"latencies": [], "claimed": [], "errors": {}, "samples": [], "end": 0.0, "exhausted": 0}
        for _ in range(n)
    ]
    threads = [
        threading.Thread(target=worker, args=(arg, barrier, clock, out), daemon=True)
        for arg, out in zip(worker_args, outs, strict=True)
    ]
    for t in threads:
        t.start()
    clock["start"] = time.perf_counter()
    clock["deadline"] = clock["start"] + duration
    barrier.wait()
    for t in threads:
        t.join(duration + 120)
        if t.is_alive():
            raise RuntimeError(f"{run.mode}: a worker did not stop")
    claimed: list[Any] = []
    for out in outs:
        run.latencies.extend(out["latencies"])
        claimed.extend(out["claimed"])
        run.exhausted += out["exhausted"]
        for k, v in out["errors"].items():
            run.errors[k] = run.errors.get(k, 0) + v
        run.samples.extend(out["samples"][: max(0, 5 - len(run.samples))])
    run.claims = len(run.latencies)
    run.elapsed = max(o["end"] for o in outs) - clock["start"] if run.claims else 0.0
    return claimed


def _error(out: dict[str, Any], exc: BaseException) -> None:
    name = getattr(exc, "code", None) or type(exc).__name__
    out["errors"][name] = out["errors"].get(name, 0) + 1
    if len(out["samples"]) < 3:
        out["samples"].append(f"{type(exc).__name__}: {exc}"[:300])


RAW_PICK = """
SELECT t.id FROM boards_task t
WHERE t.project_id = %s AND t.status = 'UNCLAIMED'
  AND NOT EXISTS (
    SELECT 1 FROM boards_task_depends_on d JOIN boards_task dt ON dt.id = d.to_task_id
    WHERE d.from_task_id = t.id AND dt.status <> 'MERGED')
ORDER BY t.priority, t.created, t.id
LIMIT 1
FOR UPDATE OF t SKIP LOCKED
"""
RAW_CLAIM = """
UPDATE boards_task SET status = 'CLAIMED', assigned_to = %s, worktree = '.worktrees/' || key,
  base_commit = %s, iteration = 1, review_cycles_current = 0, lease_expires = %s, updated = %s
WHERE id = %s
"""
RAW_LOCK_AGENT = "SELECT status FROM agents_agent WHERE id = %s FOR UPDATE"
RAW_HOLDS = """
SELECT 1 FROM boards_task WHERE project_id = %s AND assigned_to = %s
  AND status IN ('CLAIMED', 'READY_FOR_REVIEW', 'REJECTED') LIMIT 1
"""
RAW_STOPPED = """
SELECT p.paused_at IS NOT NULL OR EXISTS (
  SELECT 1 FROM boards_sprint s WHERE s.project_id = p.id AND s.status = 'CHECKPOINT')
FROM boards_project p WHERE p.id = %s
"""
RAW_AGENT = """
UPDATE agents_agent SET status = 'WORKING', current_task_id = %s, lease_expires = %s,
  heartbeat = %s, iterations_total = iterations_total + 1
WHERE id = %s
"""
RAW_EVENT = """
INSERT INTO boards_event (project_id, task_id, timestamp, actor_kind, actor_id, action,
  from_status, to_status, outcome, detail, data)
VALUES (%s, %s, %s, 'agent', %s, 'claimed', 'UNCLAIMED', 'CLAIMED', 'applied', %s, %s)
"""


def raw_worker(full: bool) -> Callable[..., None]:
    """One psycopg connection per worker; `full` adds the protocol's checks and writes."""
    from psycopg.types.json import Jsonb

    def claim(conn, project_id, pk, agent_id, now, lease) -> int | None:
        if full:
            conn.execute(RAW_LOCK_AGENT, (pk,))
            if conn.execute(RAW_HOLDS, (project_id, agent_id)).fetchone():
                raise RuntimeError(f"{agent_id} already holds a task")
            if conn.execute(RAW_STOPPED, (project_id,)).fetchone()[0]:
                raise RuntimeError("project stopped")
        row = conn.execute(RAW_PICK, (project_id,)).fetchone()
        if row is None:
            return None
        conn.execute(RAW_CLAIM, (agent_id, BASE_COMMIT, lease, now, row[0]))
        if full:
            conn.execute(RAW_AGENT, (row[0], lease, now, pk))
            conn.execute(
                RAW_EVENT,
                (project_id, row[0], now, agent_id, f"t-{row[0]}: claimed",
                 Jsonb({"iteration": 1})),
            )  # fmt: skip
        return row[0]

    def work(arg, barrier, clock, out) -> None:
        raw_loop(arg, barrier, clock, out, claim)

    return work


def raw_loop(arg, barrier, clock, out, claim) -> None:
    """A raw bench's thread: one psycopg connection; each of its agents claims in one
    transaction, `claim(conn, project_id, agent_pk, agent_id, now, lease)` answering the claimed
    id, or None when there is nothing left (bench/review_claims.py runs it too)."""
    import datetime as dt

    import psycopg

    dsn, project_id, agents = arg
    conn = psycopg.connect(dsn)

    def claim_one(agent) -> int | None:
        pk, agent_id = agent
        now = dt.datetime.now(dt.UTC)
        with conn.transaction():
            return claim(conn, project_id, pk, agent_id, now, now + dt.timedelta(seconds=300))

    try:
        barrier.wait()
        timed_claims(agents, clock, out, claim_one)
    except Exception as exc:
        _error(out, exc)
    finally:
        conn.close()


def timed_claims(agents, clock, out, claim_one, refusals: tuple = ()) -> None:
    """Each of `agents` claims in turn, timed, until the clock's deadline or until nothing is
    left: `claim_one(agent)` answers the claimed id, or None when there is none; a `refusals`
    exception is counted as an error and the next agent goes on."""
    for agent in agents:
        if time.perf_counter() >= clock["deadline"]:
            break
        t0 = time.perf_counter()
        try:
            claimed = claim_one(agent)
        except refusals as exc:
            _error(out, exc)
            continue
        t1 = time.perf_counter()
        if claimed is None:
            break
        out["latencies"].append((t1 - t0) * 1000)
        out["claimed"].append(claimed)
        out["end"] = t1
    else:
        out["exhausted"] += 1


def service_worker(arg, barrier, clock, out) -> None:
    """task_claim_next in this thread, on this thread's own Django connection."""
    from boards.coordination.services.tasks import task_claim_next

    def claim(project, agent, now) -> int | None:
        task = task_claim_next(project=project, agent=agent, now=now, base_commit=BASE_COMMIT)
        return None if task is None else task.pk

    claim_loop(arg, barrier, clock, out, claim)


def claim_loop(arg, barrier, clock, out, claim) -> None:
    """A service bench's thread: `claim(project, agent, now)` (the claimed task's id, or None
    when there is nothing left) for each of its agents in turn, timed, on this thread's own
    Django connection, until the clock's deadline (bench/review_claims.py runs it too)."""
    from django.db import connection
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.projects import Project
    from boards.errors import ProtocolError

    project_id, agent_pks = arg
    try:
        # What a request has before the service runs: the project (with its config) and the
        # authenticated agent.
        project = Project.objects.select_related("config").get(pk=project_id)
        agents = list(Agent.objects.filter(pk__in=agent_pks).order_by("pk"))
        for agent in agents:
            agent.project = project
        barrier.wait()
        timed_claims(
            agents,
            clock,
            out,
            lambda agent: claim(project, agent, timezone.now()),
            refusals=(ProtocolError,),
        )
    except Exception as exc:
        _error(out, exc)
    finally:
        connection.close()


# ---------------------------------------------------------------------------------------------
# HTTP mode: server subprocess + client subprocess
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def process_cpu(pid: int) -> float:
    """CPU seconds (user+system) of the process `pid`, from /proc (OSError once it is gone)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user+system) of a process and its descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid = int(fields[1])
        children.setdefault(ppid, []).append(int(entry))
        stats[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total, stack = 0.0, [pid]
    while stack:
        p = stack.pop()
        total += stats.get(p, 0.0)
        stack.extend(children.get(p, []))
    return total


def _busy_cpu() -> float:
    """Machine-wide busy CPU seconds (all processes, both cores), from /proc/stat."""
    with open("/proc/stat") as fh:
        values = [int(v) for v in fh.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class Server:
    """An ASGI server subprocess serving the product on a free loopback port."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        args = [a.replace("{port}", str(self.port)) for a in SERVERS[name]]
        self.proc = subprocess.Popen(
            [PYTHON, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._wait_ready()
        self._wait_started()

    def _wait_started(self, timeout: float = 90, idle: float = 0.05) -> None:
        """Until every worker has started and answered once. The first answer comes from one
        worker while the others may still be importing the product — 1.5–2 s of CPU each, many
        seconds of wall time on a loaded machine — and a worker's first requests import what
        the product loads lazily: measured, that start-up landed in the run (most of a 5 s
        run's server CPU at load 10, py-spy). So: wait until the server's processes are idle
        (under `idle` CPU seconds per half second), send a burst of requests on new
        connections (each worker takes some), and wait until idle again."""
        deadline = time.monotonic() + timeout

        def settle() -> None:
            last = self.cpu()
            while time.monotonic() < deadline:
                time.sleep(0.5)
                now = self.cpu()
                if now - last < idle:
                    return
                last = now

        def ask(_: int) -> None:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(
                    f"http://{HOST}:{self.port}/api/v1/projects/none/tasks", timeout=30
                )

        settle()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(ask, range(32)))
        settle()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        url = f"http://{HOST}:{self.port}/api/v1/projects/none/tasks"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"{self.name} exited: {err[-2000:]}")
            try:
                urllib.request.urlopen(url, timeout=2)
            except urllib.error.HTTPError:
                return  # 401/404: Django answered
            except OSError:
                time.sleep(0.2)
                continue
            return
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {timeout}s")

    def cpu(self) -> float:
        return _tree_cpu(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.proc.stderr:
            self.proc.stderr.close()


@contextlib.contextmanager
def serving(name: str, env: dict[str, str]) -> Iterator[Server]:
    server = Server(name, env)
    try:
        yield server
    finally:
        server.stop()


def drive_load(run: Run, spec: dict[str, Any], duration: float) -> dict[str, Any]:
    """`bench/http_load.py` on `spec` (a separate process, so the client does not share the
    GIL with anything measured); `run` gets its latencies, errors and samples. Its whole output.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(spec, fh)
    try:
        proc = subprocess.run(
            [PYTHON, str(ROOT / "bench" / "http_load.py"), fh.name],
            capture_output=True,
            timeout=duration + 120,
            check=False,
        )
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"load generator failed: {proc.stderr.decode()[-2000:]}")
    out = json.loads(proc.stdout)
    run.latencies = out["latencies"]
    run.claims = len(run.latencies)
    run.elapsed = out["elapsed"] if run.claims else 0.0
    run.errors = out["errors"]
    run.samples = out["samples"]
    return out


def run_http(
    run: Run, server: Server, seeded: Seeded, agents_per_worker: list[list[int]], duration: float
) -> list[Any]:
    spec = {
        "host": HOST,
        "port": server.port,
        "path": f"/api/v1/projects/{seeded.slug}/tasks/claim-next",
        "duration": duration,
        "keys": [[seeded.key(pk) for pk in pks] for pks in agents_per_worker],
    }
    client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before, busy_before = server.cpu(), _busy_cpu()
    out = drive_load(run, spec, duration)
    server_cpu, busy = server.cpu() - server_before, _busy_cpu() - busy_before
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.exhausted = out["exhausted"]
    client_cpu = (client_after.ru_utime + client_after.ru_stime) - (
        client_before.ru_utime + client_before.ru_stime
    )
    if run.claims:
        run.cpu = {
            "server": round(server_cpu / run.claims * 1000, 3),
            "client": round(client_cpu / run.claims * 1000, 3),
            "machine": round(busy / run.claims * 1000, 3),
        }
    return out["claimed"]


# ---------------------------------------------------------------------------------------------
# orchestration
# ---------------------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, db_url: str, env: dict[str, str]) -> None:
        self.args = args
        self.db_url = db_url
        self.env = env
        self.duration = args.duration or (1.5 if args.quick else 5.0)
        self.counter = 0

    def _sizes(self, mode: str, agents: int) -> tuple[int, int]:
        per_worker = int(CEILING[mode] * self.duration / agents * 1.5) + 20
        return per_worker, per_worker * agents

    def level(self, mode: str, agents: int, server: Server | None = None, label: str = "") -> Run:
        from django.db import connection

        self.counter += 1
        _, total = self._sizes(mode, agents)
        seeded = seed(
            f"bench-{self.counter}-{mode.replace('+', 'full')}-{agents}",
            tasks=total,
            agents=total,
            keys=mode == "http",
        )
        connection.close()
        pks = [pk for pk, _ in seeded.agents]
        run = Run(mode, agents, load=(round(os.getloadavg()[0], 2), 0.0))
        if mode in ("raw", "raw+"):
            by_worker = _slices(seeded.agents, agents)
            args = [(self.db_url, seeded.project_id, chunk) for chunk in by_worker]
            claimed = run_threads(run, self.duration, args, raw_worker(mode == "raw+"))
        elif mode == "service":
            args = [(seeded.project_id, chunk) for chunk in _slices(pks, agents)]
            claimed = run_threads(run, self.duration, args, service_worker)
        else:
            assert server is not None
            claimed = run_http(run, server, seeded, _slices(pks, agents), self.duration)
        run.load = (run.load[0], round(os.getloadavg()[0], 2))
        verify(run, seeded, claimed, events=mode != "raw")
        self.log(run, label)
        return run

    def log(self, run: Run, label: str = "") -> None:
        if self.args.json:
            return
        v = run.verified
        print(
            f"  {label or run.mode:>22} {run.agents:>3} agents: {run.rate:8.1f} claims/s  "
            f"p50 {run.pct(50):7.2f} ms  p99 {run.pct(99):7.2f} ms  "
            f"errors {sum(run.errors.values())}  double claims {v.get('double_claims')}"
            f"{'' if v.get('ok') else '  VERIFY FAILED ' + json.dumps(v)}"
            f"  load {run.load[0]}→{run.load[1]}",
            flush=True,
        )
        if run.samples:
            print(f"      e.g. {run.samples[0]}", flush=True)

    def idle_holder(self, seconds: float, server: Server | None, modes: list[str]) -> dict:
        """Issue #14, fault 4 ("the queue anchor's test"): another client of the database holds
        a transaction open and idle — an xid and a REPEATABLE READ snapshot, so no vacuum may
        remove a row version any claim leaves behind — for `seconds`, while claims at 16 agents
        run round after round. Each round against the same modes measured just before."""
        import psycopg

        chosen = [m for m in ("service", "http") if m in modes]
        before = {
            m: self.level(m, 16, server, label=f"{m}, nothing held").summary() for m in chosen
        }
        # Not one of ours: the product's idle_in_transaction_session_timeout is not set on it.
        holder = psycopg.connect(self.db_url, options="-c idle_in_transaction_session_timeout=0")
        holder.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        holder.execute("SELECT txid_current(), count(*) FROM boards_task")
        started = time.monotonic()
        rounds: list[dict[str, Any]] = []
        try:
            while time.monotonic() - started < seconds:
                held = round(time.monotonic() - started)
                for mode in chosen:
                    run = self.level(mode, 16, server, label=f"{mode}, held {held} s").summary()
                    rounds.append({"mode": mode, "held_s": held, **run})
        finally:
            holder.rollback()
            holder.close()
        summary: dict[str, Any] = {"seconds_held": seconds, "before": before, "rounds": rounds}
        for mode in chosen:
            mine = [r for r in rounds if r["mode"] == mode] or [before[mode]]
            base = before[mode]["claims_per_s"] or float("nan")
            summary[mode] = {
                "before_claims_per_s": before[mode]["claims_per_s"],
                "worst_claims_per_s": min(r["claims_per_s"] for r in mine),
                "last_claims_per_s": mine[-1]["claims_per_s"],
                "worst_ratio": min(r["claims_per_s"] for r in mine) / base,
                # One 1.5 s round is noisy (±25 % here): the median round is the fair figure.
                "median_ratio": statistics.median(r["claims_per_s"] for r in mine) / base,
                "median_p99_ms": statistics.median(r["p99_ms"] for r in mine),
                "worst_p99_ms": max(r["p99_ms"] for r in mine),
                "before_p99_ms": before[mode]["p99_ms"],
            }
        return summary

    def server_env(self, pool: int) -> dict[str, str]:
        env = dict(self.env)
        if pool:
            env["LIZA_BENCH_POOL"] = str(pool)
        else:
            env.pop("LIZA_BENCH_POOL", None)
        return env

    def compare_servers(self, names: list[str], agents: int, rounds: int) -> list[dict[str, Any]]:
        """Every server on the same workload, `rounds` times in rotating order.

        The machine's other load drifts during a run; rotating the order and taking each
        server's median round keeps that drift from favouring whichever server ran first.
        """
        configs = [(name, self.args.pool) for name in names]
        if self.args.pool:
            # What the pool buys: the product's default, a new connection per request.
            configs.append((DEFAULT_SERVER if DEFAULT_SERVER in names else names[0], 0))
        runs: dict[tuple[str, int], list[Run]] = {c: [] for c in configs}
        for r in range(rounds):
            for name, pool in configs[r % len(configs) :] + configs[: r % len(configs)]:
                label = f"{name}{'' if pool else ' (no pool)'}"
                with serving(name, self.server_env(pool)) as server:
                    self.warm_up(server)
                    runs[(name, pool)].append(self.level("http", agents, server, label))
        rows = []
        for (name, pool), done in runs.items():
            median = sorted(done, key=lambda run: run.rate)[len(done) // 2]
            rows.append(
                {
                    "server": name,
                    "pool": pool,
                    "rounds_claims_per_s": [round(run.rate, 1) for run in done],
                    **median.summary(),
                    "verified": {"ok": all(run.verified.get("ok") for run in done)},
                }
            )
        return rows

    def warm_up_service(self) -> None:
        """First claims of a process pay for imports and cold caches: not part of any level."""
        from django.db import connection

        seeded = seed(f"warm-service-{self.counter}", tasks=100, agents=100, keys=False)
        connection.close()
        pks = [pk for pk, _ in seeded.agents]
        run_threads(Run("warm-up", 2), 0.3, [(seeded.project_id, c) for c in _slices(pks, 2)],
                    service_worker)  # fmt: skip

    def warm_up(self, server: Server) -> None:
        """A few claims on a throwaway project: imports, URL resolver, pools, page cache."""
        seeded = seed(f"warm-{server.port}-{self.counter}", tasks=200, agents=200, keys=True)
        run = Run("warm-up", 4)
        run_http(run, server, seeded, _slices([pk for pk, _ in seeded.agents], 4), 0.5)


def targets(levels: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue #14's claim targets on this machine (ratios against raw+ in the same run)."""
    out: dict[str, Any] = {}
    for row in levels:
        if row["agents"] != 16 or "raw+" not in row:
            continue
        full = row["raw+"]["claims_per_s"] or float("nan")
        if "service" in row:
            out["service >= 70% of raw+ at 16"] = row["service"]["claims_per_s"] / full >= 0.7
        if "http" in row:
            out["http >= 40% of raw+ at 16"] = row["http"]["claims_per_s"] / full >= 0.4
            out["http p99 <= 50 ms at 16"] = row["http"]["p99_ms"] <= 50
    return out


def print_servers(rows: list[dict[str, Any]]) -> None:
    print(
        "\n| server | pool | claims/s (median) | p50 ms | p99 ms | server CPU ms/claim | "
        "rounds claims/s |\n|---|---:|---:|---:|---:|---:|---|"
    )
    for r in sorted(rows, key=lambda r: -r["claims_per_s"]):
        cpu = r["cpu_ms_per_claim"].get("server", 0)
        print(
            f"| {r['server']} | {r['pool'] or 'none'} | {r['claims_per_s']:.0f} | "
            f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {cpu:.1f} | "
            f"{', '.join(f'{x:.0f}' for x in r['rounds_claims_per_s'])} |"
        )
    print()


def print_table(levels: list[dict[str, Any]]) -> None:
    head = (
        "| agents | raw claims/s (p50/p99 ms) | raw+ claims/s (p50/p99) | service claims/s "
        "(p50/p99) | http claims/s (p50/p99) | service/raw | service/raw+ | http/raw | "
        "double claims |"
    )
    print(head)
    print("|---:" * (head.count("|") - 1) + "|")
    for row in levels:
        cells = []
        for mode in ("raw", "raw+", "service", "http"):
            r = row[mode]
            cells.append(f"{r['claims_per_s']:.0f} ({r['p50_ms']:.1f}/{r['p99_ms']:.1f})")
        doubles = sum(
            row[m]["verified"]["double_claims"] for m in ("raw", "raw+", "service", "http")
        )
        ok = all(row[m]["verified"]["ok"] for m in ("raw", "raw+", "service", "http"))
        print(
            f"| {row['agents']} | {' | '.join(cells)} | {row['service/raw']:.0%} | "
            f"{row['service/raw+']:.0%} | {row['http/raw']:.0%} | "
            f"{doubles}{'' if ok else ' (VERIFY FAILED)'} |"
        )


# ---------------------------------------------------------------------------------------------
# profile: where a claim's time goes, in numbers that do not depend on the machine's load
# ---------------------------------------------------------------------------------------------


def profile(claims: int, top: int) -> dict[str, Any]:
    """Queries, Python function calls and CPU per claim, in-process (service, and the whole
    Django request through the test client), plus the pick query's plan on a 10,000-task queue.

    Function calls and queries per claim are the same on a busy machine as on an idle one, so
    they show the effect of a change even when wall-clock numbers cannot. CPU per claim is
    measured without the profiler (cProfile's own overhead would dominate it).
    """
    import cProfile
    import io
    import pstats

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.projects import Project
    from boards.coordination.services.tasks import task_claim_next

    def measure(label: str, one: Callable[[int], None], ids: list[int]) -> dict[str, Any]:
        for i in ids[:10]:  # warm: imports, caches, prepared plans
            one(i)
        with CaptureQueriesContext(connection) as ctx:
            one(ids[10])
        sql = [q["sql"] for q in ctx.captured_queries]
        half = (len(ids) + 11) // 2
        cpu0 = time.process_time()
        for i in ids[11:half]:  # unprofiled: this process's CPU per claim
            one(i)
        cpu = (time.process_time() - cpu0) / (half - 11) * 1000
        prof = cProfile.Profile()
        prof.enable()
        for i in ids[half:]:  # profiled: call counts and where the time goes
            one(i)
        prof.disable()
        n = len(ids) - half
        stats = pstats.Stats(prof)
        calls = sum(v[1] for v in stats.stats.values())  # type: ignore[attr-defined]
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
        return {
            "label": label,
            "queries_per_claim": len(sql),
            "queries": [q[:110] for q in sql],
            "python_calls_per_claim": round(calls / n),
            "cpu_ms_per_claim": round(cpu, 3),
            "top": out.getvalue(),
        }

    results: dict[str, Any] = {}
    seeded = seed("profile-service", tasks=claims + 20, agents=claims + 20, keys=False)
    project = Project.objects.select_related("config").get(pk=seeded.project_id)
    agents = {a.pk: a for a in Agent.objects.filter(project=project)}

    def service_claim(pk: int) -> None:
        agent = agents[pk]
        agent.project = project
        task = task_claim_next(project=project, agent=agent, now=timezone.now(), base_commit="b")
        assert task is not None

    results["service"] = measure("service", service_claim, [pk for pk, _ in seeded.agents])

    seeded = seed("profile-http", tasks=claims + 20, agents=claims + 20, keys=True)
    client = Client(HTTP_HOST=HOST)
    path = f"/api/v1/projects/{seeded.slug}/tasks/claim-next"

    def http_claim(pk: int) -> None:
        response = client.post(
            path,
            {"base_commit": "b"},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {seeded.key(pk)}",
        )
        assert response.status_code == 200, response.content

    results["request"] = measure("request", http_claim, [pk for pk, _ in seeded.agents])

    seeded = seed("profile-plan", tasks=10_000, agents=1, keys=False)
    with connection.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + RAW_PICK, [seeded.project_id])
        results["pick_plan"] = [row[0] for row in cur.fetchall()]
        cur.execute("ROLLBACK")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short levels, no server comparison")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--duration", type=float, help="seconds per level")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--modes", default="raw,raw+,service,http")
    parser.add_argument("--server", default=None, help=f"ASGI server ({', '.join(SERVERS)})")
    parser.add_argument(
        "--compare",
        default=None,
        help="servers to compare at 16 agents (default: all; quick: none)",
    )
    parser.add_argument("--rounds", type=int, help="server comparison rounds (default 3)")
    parser.add_argument(
        "--pool", type=int, default=8, help="psycopg pool size per server process (0: none)"
    )
    parser.add_argument("--no-redis", action="store_true", help="in-memory channel layer")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--db-name", default="liza_bench")
    parser.add_argument(
        "--profile", type=int, metavar="N", help="profile N in-process claims instead"
    )
    parser.add_argument("--top", type=int, default=30, help="profile rows to print")
    parser.add_argument(
        "--idle-holder",
        type=float,
        metavar="SECONDS",
        help="then hold another client's transaction idle this long, claims running (fault 4)",
    )
    args = parser.parse_args(argv)

    base = pg_server()
    started = time.monotonic()
    db_url = create_database(base, args.db_name)
    env = bench_env(db_url, channel_prefix="liza-bench", no_redis=args.no_redis)
    os.environ.clear()
    os.environ.update(env)

    import django

    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", verbosity=0)
        if args.profile:
            found = profile(args.profile, args.top)
            if args.json:
                print(json.dumps(found, indent=2))
                return 0
            for part in ("service", "request"):
                r = found[part]
                print(
                    f"{part}: {r['queries_per_claim']} queries, "
                    f"{r['python_calls_per_claim']} Python calls, "
                    f"{r['cpu_ms_per_claim']} ms CPU per claim"
                )
                print("\n".join(f"    {q}" for q in r["queries"]))
                print(r["top"])
            print("pick query plan (10,000 UNCLAIMED tasks):")
            print("\n".join(f"    {line}" for line in found["pick_plan"]))
            return 0
        bench = Bench(args, db_url, env)
        levels = [int(x) for x in args.levels.split(",")]
        modes = [m for m in args.modes.split(",") if m]
        result: dict[str, Any] = {
            "machine": {"cores": os.cpu_count(), "loadavg_at_start": os.getloadavg()},
            "channel_layer": "redis" if "REDIS_URL" in env else "in-memory",
            "seconds_per_level": bench.duration,
            "pool_per_server_process": args.pool,
        }
        server_name = args.server or DEFAULT_SERVER
        if "http" in modes:
            compare = args.compare
            if compare is None:
                compare = "" if args.quick else ",".join(SERVERS)
            names = [n for n in compare.split(",") if n]
            missing = [n for n in names if not server_available(n)]
            if missing and not args.json:
                print(f"not installed, not compared: {', '.join(missing)}")
            names = [n for n in names if n not in missing]
            for fallback in ("uvicorn-2w", "daphne"):  # daphne: a dependency of the product
                if not server_available(server_name):
                    server_name = fallback
            if names:
                if not args.json:
                    print("ASGI servers, 16 agents, claim-next over HTTP:", flush=True)
                rows = bench.compare_servers(names, 16, args.rounds or (1 if args.quick else 3))
                result["servers"] = rows
                if not args.json:
                    print_servers(rows)
                if not args.server:
                    pooled = [r for r in rows if r["pool"] == args.pool and not r["errors"]]
                    server_name = max(pooled, key=lambda r: r["claims_per_s"])["server"]
            result["server"] = server_name
        if not args.json:
            print(f"Levels ({bench.duration:g} s each; http through {server_name}):", flush=True)
        rows_by_level = []
        server_ctx = (
            serving(server_name, bench.server_env(args.pool))
            if "http" in modes
            else contextlib.nullcontext()
        )
        with server_ctx as server:
            if server is not None:
                bench.warm_up(server)
            if "service" in modes:
                bench.warm_up_service()
            for agents in levels:
                row: dict[str, Any] = {"agents": agents}
                for mode in modes:
                    row[mode] = bench.level(mode, agents, server).summary()
                if "raw" in row:
                    raw = row["raw"]["claims_per_s"] or float("nan")
                    for mode in ("service", "http"):
                        if mode in row:
                            row[f"{mode}/raw"] = row[mode]["claims_per_s"] / raw
                if "raw+" in row and "service" in row:
                    row["service/raw+"] = row["service"]["claims_per_s"] / (
                        row["raw+"]["claims_per_s"] or float("nan")
                    )
                rows_by_level.append(row)
            if args.idle_holder:
                if not args.json:
                    print(f"Another client's transaction held idle {args.idle_holder:g} s:")
                result["idle_holder"] = bench.idle_holder(args.idle_holder, server, modes)
        result["levels"] = rows_by_level
        result["targets"] = targets(rows_by_level)
        result["all_verified"] = all(
            row[m]["verified"]["ok"] for row in rows_by_level for m in modes
        ) and all(r["verified"]["ok"] for r in result.get("servers", []))
        result["wall_seconds"] = round(time.monotonic() - started, 1)
        if args.json:
            print(json.dumps(result, indent=2))
        elif set(modes) == {"raw", "raw+", "service", "http"}:
            print()
            print_table(rows_by_level)
            print()
            for name, met in result["targets"].items():
                print(f"  target {name}: {'met' if met else 'NOT met'}")
            print(f"\nall verified: {result['all_verified']}; {result['wall_seconds']} s")
        if "idle_holder" in result and not args.json:
            held = result["idle_holder"]
            print(
                "\n| mode, 16 agents | claims/s before | median round / before | worst / before "
                "| p99 ms before | median round's p99 ms |\n|---|---:|---:|---:|---:|---:|"
            )
            for mode in ("service", "http"):
                if mode in held:
                    h = held[mode]
                    print(
                        f"| {mode} | {h['before_claims_per_s']:.0f} | "
                        f"{h['median_ratio']:.0%} | {h['worst_ratio']:.0%} | "
                        f"{h['before_p99_ms']:.1f} | {h['median_p99_ms']:.1f} |"
                    )
        return 0 if result["all_verified"] else 1
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, args.db_name)


if __name__ == "__main__":
    sys.exit(main())
