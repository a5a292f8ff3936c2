"""A fleet of agents on one box, open loop: heartbeats every 30 s plus their claims (issue 26).

    .venv/bin/python bench/fleet.py [--quick] [--json] [--agents 2500,5000,10000]

The issue's target: "10,000 agents heartbeating every 30 s + their claims: sustained on one
box, p99 ≤ 50 ms". For each fleet size it seeds, in its own throwaway database
(`liza_bench_fleet`, dropped at the end), `agents` agents over `agents / per-project` projects
(each agent with its own key; three coders to one code reviewer) and a queue of UNCLAIMED tasks
in each project deep enough that no claim of the run finds it empty. Then, against the
production command (`serving`: granian, 2 workers, psycopg pool of 8 each, Redis), the load
generator (bench/fleet_load.py, its own process) drives an open-loop schedule:

* every agent heartbeats once per `--interval` (30 s) with its key, as its supervisor does
  (POST …/agents/heartbeat with `progress_at`), the fleet's beats spread evenly: agents /
  interval per second;
* every coder claims once per `--claim-every` (300 s: a coder's task takes minutes; its first
  claim at a random phase), then submits the task it got (request-review) `--hold` seconds
  later (60 s), holding it — and heartbeating its task lease too — meanwhile. Submitting (not
  releasing: that is a planner's or an admin's move) keeps every claim a fresh claim-next and
  the queue is sized so it never drains within the run.

Latency counts from when a request was due, so queueing shows; requests due in the warm-up
(`--warmup`) are sent but not counted. Reported per kind: offered and achieved rate, p50 / p99 /
max, errors; the server's CPU per request (every worker, from /proc) and PostgreSQL's; the
generator's lag (how late it handed a due request on) and CPU, since it shares the two cores;
the key cache's hit rate (`/metrics`' liza_keycache_lookups, summed over workers); the load
average. The baseline, in the same run: the same schedule as hand-written SQL (`raw`: a
heartbeat's UPDATEs as bench/heartbeats.py's raw mode, claims.py's raw pick and claim).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.claims import (  # noqa: E402 - after the path set-up above
    DEFAULT_SERVER,
    HOST,
    PYTHON,
    _busy_cpu,
    bench_env,
    bench_key,
    copy_tasks_and_agents,
    create_database,
    drop_database,
    insert_bench_keys,
    pg_server,
    process_cpu,
    server_available,
    serving,
)

TARGET_P99_MS = 50
METRICS_TOKEN = "bench-fleet-metrics"
KINDS = ("heartbeat", "claim", "submit")


def seed(level: int, agents: int, per_project: int, tasks_each: int) -> list[dict[str, Any]]:
    """`agents` agents over projects of `per_project` (three coders to a code reviewer, each
    with a key, registered: IDLE with a lease) and `tasks_each` UNCLAIMED tasks a project.

    One agent of each role and one task are made by the services (every default theirs), then
    copied with INSERT … SELECT generate_series, as bench/claims.py seeds; keys are stored as
    `agent_key_issue` stores them (claims.Seeded.key)."""
    from django.db import connection
    from django.utils import timezone

    from agents.services import agent_register
    from boards.coordination.models.tasks import Task
    from boards.coordination.services.projects import project_create

    now, out = timezone.now(), []
    projects = max(1, -(-agents // per_project))
    for p in range(projects):
        count = min(per_project, agents - p * per_project)
        reviewers = max(1, count // 4)
        slug = f"fleet-{level}-{p}"
        project = project_create(slug=slug, name=slug, now=now)
        task = Task.objects.create(
            project=project, key="t-0", description="fleet task", status="UNCLAIMED",
            created=now, spec_ref="fleet.md", done_when="submitted",
        )  # fmt: skip
        coder = agent_register(project=project, agent_id="coder-999999", role="coder", now=now)
        reviewer = agent_register(
            project=project, agent_id="code-reviewer-999999", role="code_reviewer", now=now
        )
        with connection.cursor() as cur:
            copy_tasks_and_agents(cur, task.pk, tasks_each, coder.pk, count - reviewers, "coder-")
            copy_tasks_and_agents(cur, task.pk, 1, reviewer.pk, reviewers, "code-reviewer-")
            insert_bench_keys(cur, project.pk, now)
            cur.execute(
                "SELECT id, agent_id, role FROM agents_agent WHERE project_id = %s", [project.pk]
            )
            rows = cur.fetchall()
        base = f"/api/v1/projects/{slug}"
        out.extend(
            {
                "pk": pk, "id": agent_id, "coder": role == "coder", "project_id": project.pk,
                "base": base, "key": bench_key(pk),
            }
            for pk, agent_id, role in rows
        )  # fmt: skip
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    return out


def pg_cpu(db_name: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend connected to `db_name` (from /proc), by pid."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                line = fh.read().decode(errors="replace")
            if not line.startswith("postgres:") or f" {db_name} " not in line:
                continue
            found[int(pid)] = process_cpu(int(pid))
        except OSError:
            continue
    return found


def keycache_counts(port: int | None) -> dict[str, float]:
    """liza_keycache_lookups by outcome, summed over the server's workers (None: no server,
    or a product without the counter)."""
    if port is None:
        return {}
    request = urllib.request.Request(
        f"http://{HOST}:{port}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    try:
        text = urllib.request.urlopen(request, timeout=30).read().decode()
    except OSError:
        return {}
    found = re.findall(r'^liza_keycache_lookups_total\{outcome="(\w+)"\} (\S+)$', text, re.M)
    return {outcome: float(value) for outcome, value in found}


def row_writes() -> dict[str, int]:
    """Rows updated so far per table (pg_stat_user_tables: flushed by each backend within ~1 s)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute(
            "SELECT relname, n_tup_upd FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [["agents_agent", "agents_agentkey", "boards_task"]],
        )
        return dict(cur.fetchall())


def sample(server, port: int | None, db_name: str) -> dict[str, Any]:
    return {
        "writes": row_writes(),
        "t": time.perf_counter(),
        "server": server.cpu() if server is not None else 0.0,
        "pg": pg_cpu(db_name),
        "busy": _busy_cpu(),
        "load": os.getloadavg()[0],
        "keycache": keycache_counts(port),
    }


def drive(spec: dict[str, Any], server, db_name: str) -> dict[str, Any]:
    """Run the generator on `spec`; sample the server, PostgreSQL and the machine as its
    measured window opens and closes."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(spec, fh)
    port = spec.get("port")
    marks: dict[str, dict[str, Any]] = {}
    proc = subprocess.Popen(
        [PYTHON, str(ROOT / "bench" / "fleet_load.py"), fh.name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        result = None
        for line in proc.stdout:
            word = line.strip()
            if word in ("start", "end"):
                marks[word] = sample(server, port, db_name)
            elif word.startswith("{"):
                result = json.loads(word)
        proc.wait(60)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0 or result is None:
        raise RuntimeError(f"load generator failed: {proc.stderr.read()[-2000:]}")
    gen_cpu = result["generator"]
    before, after = marks["start"], marks["end"]
    ok = sum(result["kinds"][k]["ok"] for k in KINDS)
    wall = after["t"] - before["t"]
    # Per backend: one that ended in the window (the previous mode's server's pool closing)
    # would otherwise take its whole past CPU off the sum.
    pg = sum(cpu - before["pg"].get(pid, 0.0) for pid, cpu in after["pg"].items())
    server_cpu = after["server"] - before["server"]
    hits = after["keycache"].get("hit", 0) - before["keycache"].get("hit", 0)
    misses = after["keycache"].get("miss", 0) - before["keycache"].get("miss", 0)
    result["cpu"] = {
        "server_ms_per_request": round(server_cpu / ok * 1000, 3) if ok else None,
        "server_pct_of_2_cores": round(100 * server_cpu / wall / 2, 1),
        "postgres_ms_per_request": round(pg / ok * 1000, 3) if ok else None,
        "machine_pct_busy": round(100 * (after["busy"] - before["busy"]) / wall / 2, 1),
        "generator_pct_of_core": gen_cpu["cpu_pct_of_core"],
    }
    result["keycache_hit_pct"] = round(100 * hits / (hits + misses), 1) if hits + misses else None
    result["load"] = [round(before["load"], 2), round(after["load"], 2)]
    beats = result["kinds"]["heartbeat"]["ok"]
    result["row_updates_per_heartbeat"] = {
        table: round((after["writes"].get(table, 0) - count) / beats, 3) if beats else None
        for table, count in before["writes"].items()
    }
    return result


def measure(args, env: dict[str, str], db_url: str, db_name: str, level: int) -> dict[str, Any]:
    coders = level - level // 4
    claims = coders * (args.warmup + args.duration) / args.claim_every if args.claim_every else 0
    projects = max(1, -(-level // args.per_project))
    # Both modes draw on the same queue (http first, then raw): 1.25× each run's claims.
    tasks_each = int(claims * 2.5 / projects) + 50
    started = time.monotonic()
    agents = seed(level, level, args.per_project, tasks_each)
    spec = {
        "agents": agents,
        "interval": args.interval,
        "claim_every": args.claim_every,
        "hold": args.hold,
        "warmup": args.warmup,
        "duration": args.duration,
        "host": HOST,
    }
    row: dict[str, Any] = {
        "agents": level,
        "projects": projects,
        "seed_s": round(time.monotonic() - started, 1),
        "tasks_per_project": tasks_each,
    }
    for mode in args.modes.split(","):
        if mode == "raw":
            raw_spec = dict(spec, mode="raw", database_url=db_url, conns=args.raw_conns)
            row["raw"] = drive(raw_spec, None, db_name)
        else:
            metrics_dir = tempfile.mkdtemp(prefix="liza-fleet-metrics-")
            server_env = dict(
                env,
                LIZA_BENCH_POOL=str(args.pool),
                PROMETHEUS_MULTIPROC_DIR=metrics_dir,
                LIZA_METRICS_TOKEN=METRICS_TOKEN,
            )
            with serving(args.server, server_env) as server:
                http_spec = dict(spec, mode="http", port=server.port, conns=args.conns)
                row["http"] = drive(http_spec, server, db_name)
            subprocess.run(["rm", "-rf", metrics_dir], check=False)
    return row


def print_table(rows: list[dict[str, Any]], args) -> None:
    print(
        f"\nfleet, open loop: heartbeat every {args.interval:g} s, a coder's claim every "
        f"{args.claim_every:g} s (submitted {args.hold:g} s later), {args.duration:g} s measured "
        f"after {args.warmup:g} s of warm-up, http via {args.server}"
    )
    print(
        "| agents | mode | heartbeats/s offered → achieved | p50 / p99 / max ms | "
        "claims/s → | claim p50 / p99 / max ms | submit p99 ms | errors | server CPU ms/req "
        "(% of 2 cores) | PG CPU ms/req | key cache hits | key rows written / beat "
        "| generator lag p99 ms, CPU % | load |"
    )
    print("|---:|---|---|---|---|---|---:|---|---|---:|---:|---:|---|---|")
    for row in rows:
        for mode in ("http", "raw"):
            r = row.get(mode)
            if r is None:
                continue
            k, c, g = r["kinds"], r["cpu"], r["generator"]
            b, cl, s = k["heartbeat"], k["claim"], k["submit"]
            errors = {f"{kind}:{e}": n for kind in KINDS for e, n in k[kind]["errors"].items()}
            hits = r["keycache_hit_pct"]
            key_writes = r["row_updates_per_heartbeat"].get("agents_agentkey")
            print(
                f"| {row['agents']} | {mode} | {b['offered_per_s']} → {b['achieved_per_s']} | "
                f"{b['p50_ms']} / {b['p99_ms']} / {b['max_ms']} | "
                f"{cl['offered_per_s']} → {cl['achieved_per_s']} | "
                f"{cl['p50_ms']} / {cl['p99_ms']} / {cl['max_ms']} | {s['p99_ms']} | "
                f"{errors or 0} | {c['server_ms_per_request']} ({c['server_pct_of_2_cores']} %) | "
                f"{c['postgres_ms_per_request']} | {'-' if hits is None else f'{hits} %'} | "
                f"{key_writes} | "
                f"{g['lag']['p99_ms']}, {g['cpu_pct_of_core']} | {r['load'][0]}–{r['load'][1]} |"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 s measured after 10 s warm-up")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--agents", default="10000", help="fleet sizes, comma-separated")
    parser.add_argument("--per-project", type=int, default=500, help="agents a project")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between beats")
    parser.add_argument("--claim-every", type=float, default=300.0, help="a coder's claims")
    parser.add_argument("--hold", type=float, help="claim to submit, s (default 60; quick 15)")
    parser.add_argument("--duration", type=float, help="measured seconds (default 120)")
    parser.add_argument("--warmup", type=float, help="seconds sent, not counted (default 30)")
    parser.add_argument("--modes", default="http,raw")
    parser.add_argument("--server", default=DEFAULT_SERVER)
    parser.add_argument("--pool", type=int, default=8, help="psycopg pool per server process")
    parser.add_argument("--conns", type=int, default=256, help="generator's HTTP connections")
    parser.add_argument("--raw-conns", type=int, default=16, help="the baseline's connections")
    parser.add_argument("--no-redis", action="store_true", help="in-memory channel layer")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--db-name", default="liza_bench_fleet")
    args = parser.parse_args(argv)
    args.duration = args.duration or (30.0 if args.quick else 120.0)
    args.hold = args.hold if args.hold is not None else (15.0 if args.quick else 60.0)
    args.warmup = args.warmup if args.warmup is not None else (10.0 if args.quick else 30.0)
    if not server_available(args.server):
        args.server = "daphne"

    base, name = pg_server(), args.db_name
    db_url = create_database(base, name)
    env = bench_env(db_url, channel_prefix="liza-bench-fleet", no_redis=args.no_redis)
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    rows = []
    try:
        call_command("migrate", verbosity=0)
        for level in (int(x) for x in args.agents.split(",")):
            rows.append(measure(args, env, db_url, name, level))
            if not args.json:
                print_table(rows[-1:], args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, name)
    result = {
        "target_p99_ms": TARGET_P99_MS,
        "interval_s": args.interval,
        "claim_every_s": args.claim_every,
        "hold_s": args.hold,
        "warmup_s": args.warmup,
        "duration_s": args.duration,
        "server": args.server,
        "pool_per_server_process": args.pool,
        "channel_layer": "redis" if "REDIS_URL" in env else "in-memory",
        "levels": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(rows, args)
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda a: print(f"failed: {a.exc_value!r}", file=sys.stderr)
    sys.exit(main())
