"""Insights server time at 5,000 tasks and 50,000 events (issue #13; bench/README.md "Insights").

    .venv/bin/python bench/insights.py [--quick] [--json] [--keep-db] [--profile]

Creates its own throwaway PostgreSQL database (`liza_bench_insights`, dropped at the end),
seeds one project with 5,000 tasks over 30 days whose histories add up to exactly 50,000
events (created → finalized → claimed → review claims, rejections and resubmissions →
approved → merged, a fifth of the tasks stopping on the way, some blocked; every event with
its board snapshot, as `audit.record_event` writes them) and 600 alerts, then measures, in
process with RequestFactory (server time: the view function, rendering included):

  page      `/p/<slug>/insights/` over the 30 days (every event in the period)
  sprint    the same for a sprint planned with half the tasks
  csv:<c>   `?format=csv&chart=<c>` for each chart
  selector  `boards.insights.selectors.insights.insights` alone (no tables, SVG or template)
  flow statement  `_flow_sql`'s one statement alone, run by psycopg; and the statement it
            replaced (`FORMER_FLOW_SQL`), the "before" in the same run
  bare SQL  the baseline, in the same run: psycopg fetching the same state history and running
            the same per-agent GROUP BY, no Python work on the rows (the floor of any
            implementation that reads the log)

Each row gives wall p50 and best, this process's CPU and PostgreSQL's (DB CPU: the backends'
CPU from /proc, comparable across runs where wall times swing with the machine's load).
The seed ends with VACUUM ANALYZE: autovacuum does as much to an append-only table soon after
a burst, and the state history's index-only scan needs the visibility map it sets.

Target (issue #13): page ≤ 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PG_BASE = os.environ.get("LIZA_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = "liza_bench_insights"
TASKS = 5_000
EVENTS = 50_000
DAYS = 30
ALERTS = 600
TARGET_MS = 300
CODERS = [f"coder-{i}" for i in range(1, 7)]
REVIEWERS = ["code-reviewer-1", "code-reviewer-2"]


def log(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def database(action: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_BASE}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        if action == "create":
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def setup_django() -> None:
    os.environ.update(
        DATABASE_URL=f"{PG_BASE}/{DB_NAME}",
        DJANGO_SETTINGS_MODULE="bench.settings",
        LOG_LEVEL="ERROR",
    )
    os.environ.pop("REDIS_URL", None)  # the pages publish nothing; no Redis needed
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def walk(rng: random.Random) -> list[tuple[str, str]]:
    """One task's (action, to_status) history; "" = no transition (a review claim)."""
    steps = [("created", "DRAFT"), ("finalized", "UNCLAIMED"), ("claimed", "CLAIMED")]
    if rng.random() < 0.05:
        return [*steps, ("blocked", "BLOCKED")]
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        steps += [
            ("ready_for_review", "READY_FOR_REVIEW"),
            ("review_claimed", ""),
            ("rejected", "REJECTED"),
            ("claimed", "CLAIMED"),
        ]
    steps += [
        ("ready_for_review", "READY_FOR_REVIEW"),
        ("review_claimed", ""),
        ("approved", "APPROVED"),
        ("merged", "MERGED"),
    ]
    if rng.random() < 0.2:  # still on its way at the end
        steps = steps[: rng.randrange(1, len(steps))]
    return steps


def seed(project, sprint, now) -> dict[str, int]:
    from boards.coordination.models.records import Alert, Event
    from boards.coordination.models.tasks import Task

    rng = random.Random(13)
    first = now - timedelta(days=DAYS)
    walks = [walk(rng) for _ in range(TASKS)]
    # Exactly EVENTS events: pad with review claims (events without a transition), or trim.
    total = sum(len(w) for w in walks)
    i = 0
    while total < EVENTS:
        w = walks[i % TASKS]
        if len(w) > 3:
            w.insert(3, ("review_claimed", ""))
            total += 1
        i += 1
    while total > EVENTS:
        w = walks[i % TASKS]
        if len(w) > 2:
            w.pop()
            total -= 1
        i += 1
    tasks = Task.objects.bulk_create(
        (
            Task(
                project=project,
                goal=sprint.goal,
                key=f"t-{n}",
                description=f"Benchmark task {n}",
                status=w[-1][1] or "READY_FOR_REVIEW",
                created=first + timedelta(seconds=n * DAYS * 86_400 * 0.8 / TASKS),
                spec_ref=f"specs/t-{n}.md",
                done_when="done",
            )
            for n, w in enumerate(walks)
        ),
        batch_size=2000,
    )
    planned = sprint.planned.through
    planned.objects.bulk_create(
        (planned(sprint=sprint, task=t) for t in tasks[::2]), batch_size=2000
    )
    events = []
    for task, w in zip(tasks, walks, strict=True):
        at, status, coder, rejections = task.created, "DRAFT", rng.choice(CODERS), 0
        for action, to_status in w:
            actor = {
                "created": "planner-1",
                "finalized": "planner-1",
                "claimed": coder,
                "ready_for_review": coder,
                "blocked": coder,
            }.get(action, rng.choice(REVIEWERS))
            rejections += action == "rejected"
            status = to_status or status
            events.append(
                Event(
                    project=project,
                    task=task,
                    timestamp=at,
                    actor_kind="agent",
                    actor_id=actor,
                    action=action,
                    from_status="",
                    to_status=to_status,
                    detail=f"{task.key} {action}",
                    board={
                        "status": status,
                        "assigned_to": coder if action not in ("created", "finalized") else "",
                        "priority": 3,
                        "review_cycles_total": rejections,
                        "review_cycles_current": rejections,
                    },
                )
            )
            at += timedelta(minutes=rng.randrange(10, 360))
    Event.objects.bulk_create(events, batch_size=5000)
    levels = ("info", "warning", "critical")
    Alert.objects.bulk_create(
        (
            Alert(
                project=project,
                type="stalled",
                level=levels[n % 3],
                subject=f"t-{n}",
                message=f"t-{n} stalled",
                created=first + timedelta(hours=n * DAYS * 24 / ALERTS),
                resolved_at=first + timedelta(hours=n * DAYS * 24 / ALERTS + 1),
            )
            for n in range(ALERTS)
        ),
        batch_size=2000,
    )
    from django.db import connection

    with connection.cursor() as cursor:
        # VACUUM too: the event table only grows, so autovacuum's insert threshold vacuums it
        # within minutes of a burst, setting the visibility map that the insights' index-only
        # scan of the state history relies on; a bulk load just made has none yet.
        cursor.execute(
            "VACUUM ANALYZE boards_task, boards_event, boards_alert, boards_sprint_planned"
        )
    return {"tasks": len(tasks), "events": len(events), "alerts": ALERTS}


BARE_HISTORY = """
SELECT task_id, timestamp, to_status,
       CASE WHEN to_status = 'APPROVED' THEN board ->> 'assigned_to' END,
       CASE WHEN to_status = 'APPROVED' THEN board ->> 'review_cycles_total' END
FROM boards_event
WHERE project_id = %(project)s AND task_id IS NOT NULL AND outcome = 'applied'
  AND timestamp <= %(end)s AND to_status <> ''
ORDER BY task_id, timestamp, id
"""
# The flow statement before this session's rework (boards.insights.selectors.insights `FLOW_SQL` at
# f96d5f6), its state history inlined: the "before" of the "flow statement" rows, in the same run.
FORMER_FLOW_SQL = """
WITH h AS (
    SELECT task_id, id, to_status, EXTRACT(EPOCH FROM timestamp)::float8 AS at, timestamp AS ts,
           CASE WHEN to_status = 'APPROVED' THEN board ->> 'assigned_to' END AS assignee,
           CASE WHEN to_status = 'APPROVED' THEN board ->> 'review_cycles_total' END AS rejections
    FROM boards_event
    WHERE project_id = %s AND task_id IS NOT NULL AND outcome = 'applied'
      AND timestamp <= %s AND to_status <> ''
),
marked AS (
    SELECT *, LAG(to_status) OVER w AS prev,
           -- The first claim so far: at a merge, the task's first (nothing follows MERGED).
           min(at) FILTER (WHERE to_status = %s) OVER w AS first_claim
    FROM h WINDOW w AS (PARTITION BY task_id ORDER BY at, id)
),
stays AS (
    SELECT task_id, to_status AS state, at AS entered,
           LEAD(at) OVER (PARTITION BY task_id ORDER BY at, id) AS left_at
    FROM marked WHERE prev IS DISTINCT FROM to_status
),
samples AS (SELECT %s::float8[] AS a, %s::int AS n),
bounds AS (
    SELECT state,
           width_bucket(entered, a) - COALESCE(a[width_bucket(entered, a)] = entered, false)::int
               AS lo,
           CASE WHEN left_at IS NULL THEN n ELSE
           width_bucket(left_at, a) - COALESCE(a[width_bucket(left_at, a)] = left_at, false)::int
           END AS hi
    FROM stays, samples
),
durations AS (
    SELECT task_id, state, COALESCE(left_at, %s) - entered AS seconds, entered,
           left_at IS NULL AS ongoing
    FROM stays WHERE state = ANY(%s) AND (left_at IS NULL OR left_at >= %s)
),
ranked AS (
    -- One sort: the rank from the top (ties share it, so every stay tied for the last of the
    -- SLOWEST comes along for Python to order by key) and the position from the bottom.
    SELECT *, count(*) OVER (PARTITION BY state) - row_number() OVER top AS asc_rank,
           rank() OVER top AS desc_rank, count(*) OVER (PARTITION BY state) AS n
    FROM durations WINDOW top AS (PARTITION BY state ORDER BY seconds DESC)
)
SELECT 'cfd' AS part, state, lo, hi, count(*), NULL::float8, NULL::float8, NULL::text,
       NULL::bool, NULL::bigint, NULL::float8
FROM bounds WHERE lo < hi GROUP BY state, lo, hi
UNION ALL
SELECT 'stay', state, asc_rank, desc_rank, n, seconds, entered, COALESCE(t.key, '?'), ongoing,
       NULL, NULL
FROM ranked LEFT JOIN boards_task t ON t.id = ranked.task_id
WHERE desc_rank <= %s
   OR asc_rank IN ((n - 1) * 50 / 100, (n - 1) * 50 / 100 + 1,
                   (n - 1) * 90 / 100, (n - 1) * 90 / 100 + 1)
UNION ALL
SELECT 'event', h.to_status, (h.ts AT TIME ZONE 'UTC')::date - %s::date,
       h.rejections::int, NULL,
       h.at - t.created, h.at - h.first_claim, h.assignee, NULL, h.task_id, h.at
FROM marked h LEFT JOIN (
    SELECT id, EXTRACT(EPOCH FROM created)::float8 AS created FROM boards_task
) t ON t.id = h.task_id
WHERE h.at >= %s AND (h.to_status = %s OR (h.to_status = %s AND h.rejections IS NOT NULL))
ORDER BY 1, 10, 11
"""


BARE_AGENTS = """
SELECT action, actor_id, board ->> 'assigned_to', data ->> 'agent', count(*)
FROM boards_event
WHERE project_id = %(project)s AND outcome = 'applied'
  AND timestamp BETWEEN %(start)s AND %(end)s
  AND action IN ('claimed', 'reassigned', 'approved', 'rejected', 'blocked', 'lease_expired')
GROUP BY 1, 2, 3, 4
"""


# PostgreSQL backends whose CPU `timed` adds up (this process's Django connection and the raw
# psycopg one): read from /proc, so only for a server on this machine. Wall times swing 2x with
# the other sessions on the 2 shared cores; CPU times hardly move.
BACKENDS: list[int] = []


def backends_cpu_ms() -> float | None:
    total = 0.0
    for pid in BACKENDS:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return total


def timed(fn, repeats: int) -> dict[str, float | None]:
    wall, cpu = [], []
    db0 = backends_cpu_ms()
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    db1 = backends_cpu_ms()
    return {
        "p50_ms": round(statistics.median(wall), 1),
        "best_ms": round(min(wall), 1),
        "cpu_ms": round(statistics.median(cpu), 1),
        # The clock ticks in 10 ms: a mean over the repeats, not a median.
        "db_cpu_ms": None if db0 is None or db1 is None else round((db1 - db0) / repeats, 1),
    }


def measure(repeats: int, profile: bool = False) -> dict[str, Any]:
    import psycopg
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from agents.services import agent_register
    from boards.coordination.services.actors import SYSTEM
    from boards.coordination.services.goals import goal_create
    from boards.coordination.services.projects import membership_set, project_create
    from boards.coordination.services.sprints import sprint_create
    from boards.insights.selectors.insights import SLOWEST, Period, _flow_sql, insights
    from boards.insights.web.insights import insights_page
    from boards.protocol import NON_TERMINAL_TASK_STATES

    now = timezone.now()
    start = now - timedelta(days=DAYS + 1)
    project = project_create(slug="insights", name="Insights", now=start)
    planner = agent_register(project=project, agent_id="planner-1", role="planner", now=start)
    for agent_id in CODERS:
        agent_register(project=project, agent_id=agent_id, role="coder", now=start)
    for agent_id in REVIEWERS:
        agent_register(project=project, agent_id=agent_id, role="code_reviewer", now=start)
    user = get_user_model().objects.create_user("bench-viewer", password="bench-pw")
    membership_set(project=project, user=user, role="viewer", actor=SYSTEM, now=start)
    goal = goal_create(project=project, actor=planner, description="Benchmark", now=start)
    sprint = sprint_create(project=project, actor=planner, goal=goal, now=start)
    t0 = time.perf_counter()
    seeded = seed(project, sprint, now)
    log(f"seeded {seeded} in {time.perf_counter() - t0:.1f} s")

    factory = RequestFactory()
    first_day = (now - timedelta(days=DAYS)).date().isoformat()
    period_query = {"from": first_day}

    def view(**query):
        def run():
            request = factory.get(f"/p/{project.slug}/insights/", {**period_query, **query})
            request.user = user
            response = insights_page(request, slug=project.slug)
            assert response.status_code == 200, response.status_code
            return response

        return run

    page = view()()
    BACKENDS.append(connection.connection.info.backend_pid)
    html = page.content.decode()
    assert html.count('class="chart-svg"') == 6
    with CaptureQueriesContext(connection) as queries:
        view()()
    rows: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "seeded": seeded,
        "queries": len(queries),
        "html_kb": round(len(html) / 1024),
        "rows": rows,
    }
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(view())
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    rows.append({"what": "page (30 days)", **timed(view(), repeats)})
    rows.append(
        {"what": "page, sprint (2,500 tasks)", **timed(view(sprint=sprint.sprint_id), repeats)}
    )
    for chart in ("cfd", "time_in_state", "slowest", "throughput", "lead_cycle",
                  "review_rounds", "agents", "alerts"):  # fmt: skip
        rows.append({"what": f"csv: {chart}", **timed(view(format="csv", chart=chart), repeats)})
    period = Period(now - timedelta(days=DAYS, hours=now.hour), now)
    rows.append(
        {
            "what": "selector alone",
            **timed(lambda: insights(project=project, period=period), repeats),
        }
    )
    raw = psycopg.connect(f"{PG_BASE}/{DB_NAME}", autocommit=True)
    BACKENDS.append(raw.info.backend_pid)
    # The flow statement alone, now and before (bench/README.md "Insights"), run by psycopg.
    statements: list[tuple[str, Any]] = []

    def capture(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        _flow_sql(project, period)
    flow_sql, flow_params = statements[-1]
    samples = [moment.timestamp() for moment in period.samples()]
    start_s, end_s = period.start.timestamp(), period.end.timestamp()
    former_params = [
        project.pk, period.end, "CLAIMED", samples, len(samples), end_s,
        list(NON_TERMINAL_TASK_STATES), start_s, SLOWEST, period.days[0], start_s, "MERGED",
        "APPROVED",
    ]  # fmt: skip
    rows.append(
        {
            "what": "flow statement",
            **timed(lambda: raw.execute(flow_sql, flow_params).fetchall(), repeats),
        }
    )
    rows.append(
        {
            "what": "flow statement, former (before)",
            **timed(lambda: raw.execute(FORMER_FLOW_SQL, former_params).fetchall(), repeats),
        }
    )
    params = {"project": project.pk, "start": period.start, "end": period.end}
    fetched = raw.execute(BARE_HISTORY, params).fetchall()

    def bare():
        raw.execute(BARE_HISTORY, params).fetchall()
        raw.execute(BARE_AGENTS, params).fetchall()

    rows.append({"what": "bare SQL (history + agents)", **timed(bare, repeats)})
    raw.close()
    base = rows[-1]["p50_ms"]
    for row in rows:
        row["ratio"] = round(row["p50_ms"] / base, 1) if base else None
    result["history_rows"] = len(fetched)
    result["target_ms"] = TARGET_MS
    result["page_met"] = rows[0]["p50_ms"] <= TARGET_MS
    return result


def print_table(result: dict[str, Any]) -> None:
    s = result["seeded"]
    print(
        f"\nInsights server time: {s['tasks']:,} tasks, {s['events']:,} events "
        f"({result['history_rows']:,} transitions), {s['alerts']} alerts; "
        f"{result['queries']} queries per page, {result['html_kb']} KB of HTML"
    )
    print(
        "(wall p50 / best of the repeats; CPU = this process; DB CPU = PostgreSQL's, mean;"
        " ratio = p50 / bare SQL p50)"
    )
    print(f"{'what':<32} {'p50 ms':>8} {'best':>7} {'CPU ms':>7} {'DB CPU':>7} {'ratio':>6}")
    for r in result["rows"]:
        db = "-" if r["db_cpu_ms"] is None else r["db_cpu_ms"]
        print(
            f"{r['what']:<32} {r['p50_ms']:>8} {r['best_ms']:>7} {r['cpu_ms']:>7} {db:>7}"
            f" {r['ratio']:>6}"
        )
    verdict = "met" if result["page_met"] else "NOT met"
    print(f"\ntarget: page ≤ {result['target_ms']} ms — {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 repeats instead of 20")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile one page to stderr")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    database("create")
    try:
        setup_django()
        result = measure(5 if args.quick else 20, profile=args.profile)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            database("drop")
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    result["load"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
