"""Heartbeats per second, latency and HOT share, from a raw UPDATE to the HTTP API (issue #14).

    .venv/bin/python bench/heartbeats.py [--quick] [--json] [--agents 16] [--server granian-2w]

A deployment of many projects is heartbeat-bound (10,000 agents at the default 60 s interval
is ~170 requests/s before any claim), so a heartbeat must be cheap for the database too: its
UPDATEs should be HOT (heap-only: no index entry written, the new row version on the same
page). Half the agents are coders holding a CLAIMED task (a heartbeat extends the agent and the
task lease), half are reviewers holding a review lease (the agent and the review). Modes:

  raw      the baseline: the same rows' lease columns updated by hand-written SQL, psycopg, one
           transaction per heartbeat, one connection per agent thread
  service  agents.services.agent_heartbeat in-process, one thread and Django connection each
  http     POST …/agents/heartbeat against a real ASGI server subprocess (bench/http_load.py
           repeating each agent's request), as an agent's supervisor sends it
  service-unprepared, http-unprepared
           the same with DB_PREPARED_STATEMENTS=0: the hot statement parsed and planned at every
           call, as before it was prepared (docs/decisions.md)

For each mode: heartbeats/s, p50/p99 ms, the ratio to raw, the database's CPU per heartbeat
(the mode's PostgreSQL backends, from /proc), and the share of the mode's row
updates on agents_agent, boards_task and boards_review that PostgreSQL made HOT
(pg_stat_user_tables, read once every connection of the mode has closed, so its counters are
flushed). Creates its own throwaway database (`liza_bench_hb`), dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.claims import (  # noqa: E402 - after the path set-up above
    DEFAULT_SERVER,
    HOST,
    Run,
    _busy_cpu,
    bench_env,
    create_database,
    drive_load,
    drop_database,
    pg_server,
    process_cpu,
    run_threads,
    server_available,
    serving,
)
from bench.fleet import pg_cpu  # noqa: E402 - after the path set-up above

TABLES = ("agents_agent", "boards_task", "boards_review")
TARGET = {"rate": 1500, "p99_ms": 20, "hot_pct": 95}


def seed(slug: str, agents: int) -> list[dict[str, Any]]:
    """`agents` heartbeating agents through the services: coders holding a CLAIMED task and
    reviewers holding a review lease (on tasks submitted by other coders), each with a key."""
    from django.utils import timezone

    from agents.services import agent_key_issue, agent_register
    from boards.coordination.services import reviews, tasks
    from boards.coordination.services.actors import SYSTEM
    from boards.coordination.services.goals import goal_create
    from boards.coordination.services.projects import project_create

    now = timezone.now()
    project = project_create(slug=slug, name=slug, now=now)
    planner = agent_register(project=project, agent_id="planner-1", role="planner", now=now)
    goal_create(project=project, actor=planner, description="Heartbeats", now=now)

    def task(key: str):
        tasks.task_create(
            project=project, actor=planner, key=key, description=key, spec_ref="hb.md",
            done_when="beats", now=now,
        )  # fmt: skip
        from boards.coordination.models.tasks import Task

        return tasks.task_finalize(
            task=Task.objects.get(project=project, key=key), actor=planner, now=now
        )

    out = []
    for i in range(1, agents + 1):
        if i % 2:
            coder = agent_register(project=project, agent_id=f"coder-{i}", role="coder", now=now)
            held = tasks.task_claim(task=task(f"t-{i}"), agent=coder, now=now, base_commit="b0")
            agent, table = coder, "boards_task"
            row = held.pk
        else:
            submitter = agent_register(
                project=project, agent_id=f"coder-{i}", role="coder", now=now
            )
            t = tasks.task_claim(task=task(f"t-{i}"), agent=submitter, now=now, base_commit="b0")
            t = tasks.task_submit_for_review(task=t, agent=submitter, review_commit="c0", now=now)
            agent = agent_register(
                project=project, agent_id=f"code-reviewer-{i}", role="code_reviewer", now=now
            )
            review = reviews.review_claim(task=t, agent=agent, now=now)
            table, row = "boards_review", review.pk
        out.append(
            {
                "agent": agent.pk,
                "table": table,
                "row": row,
                "key": agent_key_issue(actor=SYSTEM, agent=agent, now=now)[1],
            }
        )
    return out


def update_counts() -> dict[str, tuple[int, int]]:
    """(updates, HOT updates) per table, from a fresh statistics snapshot."""
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
            "WHERE relname = ANY(%s)",
            [list(TABLES)],
        ).fetchall()
    return {name: (upd, hot) for name, upd, hot in rows}


def hot_share(before: dict[str, tuple[int, int]]) -> dict[str, Any]:
    time.sleep(1.5)  # a closing backend flushes its counters; give the last ones a moment
    after = update_counts()
    share: dict[str, Any] = {}
    total = hot = 0
    for table in TABLES:
        upd = after.get(table, (0, 0))[0] - before.get(table, (0, 0))[0]
        h = after.get(table, (0, 0))[1] - before.get(table, (0, 0))[1]
        total, hot = total + upd, hot + h
        share[table] = round(100 * h / upd, 1) if upd else None
    share["all"] = round(100 * hot / total, 1) if total else None
    return share


def raw_worker(arg: dict[str, Any], barrier, clock, out) -> None:
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        barrier.wait()
        cpu0 = process_cpu(conn.info.backend_pid)
        while (t0 := time.perf_counter()) < clock["deadline"]:
            with conn.transaction():
                conn.execute(
                    "UPDATE agents_agent SET heartbeat = now(), "
                    "lease_expires = now() + interval '30 minutes' WHERE id = %s",
                    [arg["agent"]],
                    prepare=True,
                )
                conn.execute(
                    f"UPDATE {arg['table']} SET lease_expires = now() + interval '30 minutes' "
                    "WHERE id = %s",
                    [arg["row"]],
                    prepare=True,
                )
            t1 = time.perf_counter()
            out["latencies"].append((t1 - t0) * 1000)
            out["end"] = t1
        arg["db_cpu"].append(process_cpu(conn.info.backend_pid) - cpu0)


def service_worker(arg: dict[str, Any], barrier, clock, out) -> None:
    from django.db import connection
    from django.utils import timezone

    from agents.models import Agent
    from agents.services import agent_heartbeat

    try:
        agent = Agent.objects.get(pk=arg["agent"])
        pid = connection.connection.info.backend_pid
        barrier.wait()
        cpu0 = process_cpu(pid)
        while (t0 := time.perf_counter()) < clock["deadline"]:
            agent = agent_heartbeat(agent=agent, now=timezone.now()).agent
            t1 = time.perf_counter()
            out["latencies"].append((t1 - t0) * 1000)
            out["end"] = t1
        arg["db_cpu"].append(process_cpu(pid) - cpu0)
    finally:
        connection.close()


def run_http(
    run: Run, server, slug: str, seeded: list[dict[str, Any]], duration: float, db_name: str
) -> float:
    """Drive the server; the CPU its database backends spent meanwhile (seconds)."""
    spec = {
        "host": HOST,
        "port": server.port,
        "path": f"/api/v1/projects/{slug}/agents/heartbeat",
        "duration": duration,
        "repeat": True,
        "body": "{}",
        "keys": [[s["key"]] for s in seeded],
    }
    # The server's CPU (every worker process) per heartbeat: steadier than the rate on a
    # shared machine, whose other processes take what the server does not.
    before, busy_before, db_before = server.cpu(), _busy_cpu(), pg_cpu(db_name)
    drive_load(run, spec, duration)
    # The server's pool keeps its connections: every backend that worked is still there.
    db = sum(cpu - db_before.get(pid, 0.0) for pid, cpu in pg_cpu(db_name).items())
    if run.claims:
        run.cpu = {
            "server": round((server.cpu() - before) / run.claims * 1000, 3),
            "machine": round((_busy_cpu() - busy_before) / run.claims * 1000, 3),
        }
    return db


def measure(mode: str, args, env: dict[str, str], counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    slug = f"hb-{counter[0]}-{mode}"
    seeded = seed(slug, args.agents)
    run = Run(mode, args.agents, load=(round(os.getloadavg()[0], 2), 0.0))
    before = update_counts()
    kind, unprepared = mode.removesuffix("-unprepared"), mode.endswith("-unprepared")
    if kind == "http":
        server_env = dict(env, LIZA_BENCH_POOL=str(args.pool))
        if unprepared:
            server_env["DB_PREPARED_STATEMENTS"] = "0"
        with serving(args.server, server_env) as server:
            db_cpu = run_http(run, server, slug, seeded, args.duration, args.db_name)
    else:
        from django.db import connections

        # Every thread's connection reads this one dict when it connects.
        options = connections["default"].settings_dict["OPTIONS"]
        threshold = options.get("prepare_threshold")
        if unprepared:
            options.pop("prepare_threshold", None)
        spent: list[float] = []
        worker = raw_worker if kind == "raw" else service_worker
        try:
            run_threads(run, args.duration, [dict(s, db_cpu=spent) for s in seeded], worker)
        finally:
            options["prepare_threshold"] = threshold
        db_cpu = sum(spent)
    row = {k: v for k, v in run.summary().items() if "claim" not in k and k != "verified"}
    row["heartbeats"], row["rate"] = run.claims, round(run.rate, 1)
    row["cpu_ms_per_heartbeat"] = dict(run.cpu or {})
    if run.claims:
        row["cpu_ms_per_heartbeat"]["database"] = round(db_cpu / run.claims * 1000, 3)
    row["hot_pct"] = hot_share(before)
    return row


def profile(requests: int, agents: int, top: int) -> dict[str, Any]:
    """Python function calls and CPU per heartbeat request, in-process: the whole Django
    request through the test client (so through boards/api/hot.py), `requests` of them over
    `agents` seeded agents (half coders holding a task, half reviewers holding a review).

    Calls per request are the same on a busy machine as on an idle one; CPU per request is
    measured without the profiler (its own overhead would dominate it), as claims.py does.
    """
    import cProfile
    import io
    import pstats

    from django.test import Client

    seeded = seed("hb-profile", agents)
    client = Client(HTTP_HOST=HOST)
    path = "/api/v1/projects/hb-profile/agents/heartbeat"

    def beat(i: int) -> None:
        response = client.post(
            path,
            {"context_percent": 40},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {seeded[i % len(seeded)]['key']}",
        )
        assert response.status_code == 200, response.content

    for i in range(2 * len(seeded)):  # warm: imports, the key cache, prepared plans
        beat(i)
    cpu0 = time.process_time()
    for i in range(requests):
        beat(i)
    cpu = (time.process_time() - cpu0) / requests * 1000
    prof = cProfile.Profile()
    prof.enable()
    for i in range(requests):
        beat(i)
    prof.disable()
    stats = pstats.Stats(prof)
    calls = sum(v[1] for v in stats.stats.values())  # type: ignore[attr-defined]
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return {
        "requests": requests,
        "python_calls_per_request": round(calls / requests),
        "cpu_ms_per_request": round(cpu, 3),
        "top": out.getvalue(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1.5 s a mode instead of 5 s")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--duration", type=float)
    parser.add_argument("--modes", default="raw,service,http")
    parser.add_argument("--server", default=DEFAULT_SERVER)
    parser.add_argument("--pool", type=int, default=8, help="psycopg pool per server process")
    parser.add_argument("--no-redis", action="store_true", help="in-memory channel layer")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--db-name", default="liza_bench_hb")
    parser.add_argument("--profile", type=int, metavar="N", help="profile N requests instead")
    parser.add_argument("--top", type=int, default=30, help="profile rows to print")
    args = parser.parse_args(argv)
    args.duration = args.duration or (1.5 if args.quick else 5.0)
    if not server_available(args.server):
        args.server = "daphne"

    base, name = pg_server(), args.db_name
    env = bench_env(create_database(base, name), channel_prefix="liza-bench-hb",
                    no_redis=args.no_redis)  # fmt: skip
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", verbosity=0)
        if args.profile:
            found = profile(args.profile, args.agents, args.top)
            print(json.dumps(found, indent=2) if args.json else found.pop("top") + str(found))
            return 0
        counter = [0]
        rows = [measure(m, args, env, counter) for m in args.modes.split(",") if m]
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, name)
    raw = next((r for r in rows if r["mode"] == "raw"), None)
    for r in rows:
        r["ratio_to_raw"] = round(r["rate"] / raw["rate"], 3) if raw and raw["rate"] else None
    result = {
        "agents": args.agents,
        "seconds_per_mode": args.duration,
        "server": args.server,
        "pool_per_server_process": args.pool,
        "targets": TARGET,
        "modes": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"heartbeats, {args.agents} agents, {args.duration:g} s a mode, http via {args.server}")
    print(
        "| mode | heartbeats/s | p50 ms | p99 ms | ÷ raw | HOT % (agent/task/review/all) "
        "| server CPU ms / heartbeat | database CPU ms / heartbeat | errors |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---|")
    for r in rows:
        hot = r["hot_pct"]
        shares = "/".join(str(hot[t]) for t in (*TABLES, "all"))
        cpu = r["cpu_ms_per_heartbeat"]
        print(
            f"| {r['mode']} | {r['rate']:.0f} | {r['p50_ms']} | {r['p99_ms']} | "
            f"{r['ratio_to_raw'] or '-'} | {shares} | {cpu.get('server', '-')} | "
            f"{cpu.get('database', '-')} | {r['errors'] or 0} |"
        )
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda a: print(f"worker failed: {a.exc_value!r}", file=sys.stderr)
    sys.exit(main())
