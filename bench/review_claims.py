"""Review claim-next per second and latency, against the same work in raw SQL (issue 26).

    .venv/bin/python bench/review_claims.py [--quick] [--json] [--db-name NAME]

Creates its own throwaway PostgreSQL database (`--db-name`, default `liza_bench_reviews`, next
to DATABASE_URL's), migrates it, and for each level of concurrent reviewers (1, 4, 16) measures,
alternated in the same minutes (`--rounds`):

  raw+       the baseline: a review claim in raw SQL, psycopg, one connection per worker thread:
             lock the reviewer, the pause and checkpoint check, the first READY_FOR_REVIEW task
             with no open review `FOR UPDATE SKIP LOCKED`, insert the review, the reviewer
             REVIEWING with its heartbeat and lease, insert the `review_claimed` event
  service    boards.coordination.services.review_claims.review_claim_next in-process, one thread
             and one Django connection per reviewer

Every claim uses a fresh reviewer (one holding a review gets it back), every run its own project
of standard tasks (one approval: one review each). After each run the database is checked: no
task with two open reviews, one `review_claimed` event per review, every reported claim
committed. Prints a table with service/raw+ (the ratio to compare: the machine is shared), or
one JSON object with `--json`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.claims import (  # noqa: E402 (the path above first)
    Run,
    _slices,
    bench_env,
    claim_loop,
    copy_tasks_and_agents,
    create_database,
    drop_database,
    pg_server,
    raw_loop,
    run_threads,
)

LEVELS = (1, 4, 16)
# Review claims/s no mode reaches here; tasks and reviewers are sized from it.
CEILING = {"raw+": 4000, "service": 1200}
COMMIT = "bench0001"

RAW_LOCK_AGENT = "SELECT status FROM agents_agent WHERE id = %s FOR UPDATE"
RAW_STOPPED = """
SELECT p.paused_at IS NOT NULL OR EXISTS (
    SELECT 1 FROM boards_sprint s WHERE s.project_id = p.id AND s.status = 'CHECKPOINT')
FROM boards_project p WHERE p.id = %s
"""
RAW_PICK = """
SELECT t.id, t.key FROM boards_task t
WHERE t.project_id = %s AND t.status = 'READY_FOR_REVIEW' AND t.assigned_to <> %s
  AND NOT EXISTS (SELECT 1 FROM boards_review r WHERE r.task_id = t.id AND r.closed_at IS NULL)
  AND NOT t.id = ANY(%s)
ORDER BY t.priority, t.created, t.id
LIMIT 1 FOR UPDATE SKIP LOCKED
"""
# A review claim writes no task row, so the pick's snapshot may miss a review committed since:
# asked again in a statement of its own once the task is locked (as liza_review_claim_v1 does).
RAW_TAKEN = "SELECT EXISTS (SELECT 1 FROM boards_review WHERE task_id = %s AND closed_at IS NULL)"
RAW_REVIEW = """
INSERT INTO boards_review (project_id, task_id, reviewer, review_commit, claimed_at,
                           lease_expires, verdict, reason)
VALUES (%s, %s, %s, %s, %s, %s, '', '')
"""
RAW_AGENT = """
UPDATE agents_agent SET status = 'REVIEWING', heartbeat = %s,
    lease_expires = greatest(lease_expires, %s) WHERE id = %s
"""
RAW_EVENT = """
INSERT INTO boards_event (project_id, task_id, timestamp, actor_kind, actor_id, action,
    from_status, to_status, outcome, detail, data, board)
VALUES (%s, %s, %s, 'agent', %s, 'review_claimed', '', '', 'applied', %s, %s, '{}')
"""


@dataclass
class Seeded:
    project_id: int
    agents: list[tuple[int, str]]  # (pk, agent_id), in id order


def seed(slug: str, *, tasks: int, reviewers: int) -> Seeded:
    """A project with `tasks` standard tasks READY_FOR_REVIEW (coded by coder-0) and
    `reviewers` IDLE code reviewers, one row of each made by the ORM, then copied."""
    from django.db import connection
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.tasks import Task
    from boards.coordination.services.projects import project_create

    now = timezone.now()
    project = project_create(slug=slug, name=slug, now=now)
    Agent.objects.create(project=project, agent_id="coder-0", role="coder", status="WAITING")
    template = Task.objects.create(
        project=project,
        key="t-0",
        description="benchmark task",
        status="READY_FOR_REVIEW",
        assigned_to="coder-0",
        review_commit=COMMIT,
        created=now,
        spec_ref="bench.md",
        done_when="reviewed",
    )
    reviewer = Agent.objects.create(
        project=project, agent_id="code-reviewer-0", role="code_reviewer", status="IDLE"
    )
    with connection.cursor() as cur:
        copy_tasks_and_agents(cur, template.pk, tasks, reviewer.pk, reviewers, "code-reviewer-")
        cur.execute("ANALYZE boards_task")
        cur.execute("ANALYZE agents_agent")
        cur.execute(
            "SELECT id, agent_id FROM agents_agent WHERE project_id = %s AND role = %s ORDER BY id",
            [project.pk, "code_reviewer"],
        )
        rows = cur.fetchall()
    return Seeded(project.pk, rows)


def verify(run: Run, seeded: Seeded, claimed: list[Any]) -> None:
    """No task with two open reviews, one event per review, every reported claim committed."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*), count(DISTINCT task_id), count(DISTINCT reviewer) "
            "FROM boards_review WHERE project_id = %s AND closed_at IS NULL",
            [seeded.project_id],
        )
        reviews, tasks, reviewers = cur.fetchone()
        cur.execute(
            "SELECT count(*), count(DISTINCT task_id) FROM boards_event "
            "WHERE project_id = %s AND action = 'review_claimed'",
            [seeded.project_id],
        )
        events, tasks_with_event = cur.fetchone()
    found = {
        "reported_claims": len(claimed),
        "distinct_tasks_reported": len(set(claimed)),
        "open_reviews": reviews,
        "reviewers_holding": reviewers,
        "review_claimed_events": events,
        "double_claims": (len(claimed) - len(set(claimed))) + (reviews - tasks),
    }
    found["ok"] = (
        len(claimed) == len(set(claimed)) == reviews == tasks == reviewers
        and events == tasks_with_event == reviews
    )
    run.verified = found


def raw_claim(conn, project_id, pk, agent_id, now, lease) -> int | None:
    """raw+'s review claim, in the caller's transaction (`claims.raw_loop`)."""
    from psycopg.types.json import Jsonb

    conn.execute(RAW_LOCK_AGENT, (pk,))
    if conn.execute(RAW_STOPPED, (project_id,)).fetchone()[0]:
        raise RuntimeError("project stopped")
    passed: list[int] = []
    while row := conn.execute(RAW_PICK, (project_id, agent_id, passed)).fetchone():
        if not conn.execute(RAW_TAKEN, (row[0],)).fetchone()[0]:
            break
        passed.append(row[0])
    if row is None:
        return None
    conn.execute(RAW_REVIEW, (project_id, row[0], agent_id, COMMIT, now, lease))
    conn.execute(RAW_AGENT, (now, lease, pk))
    conn.execute(
        RAW_EVENT,
        (project_id, row[0], now, agent_id, f"reviewing {row[1]} at {COMMIT}",
         Jsonb({"commit": COMMIT})),
    )  # fmt: skip
    return row[0]


def raw_worker(arg, barrier, clock, out) -> None:
    """One psycopg connection; each reviewer claims one review in one transaction."""
    raw_loop(arg, barrier, clock, out, raw_claim)


def service_worker(arg, barrier, clock, out) -> None:
    """review_claim_next in this thread, on this thread's own Django connection."""
    from boards.coordination.services.review_claims import review_claim_next

    def claim(project, agent, now) -> int | None:
        review = review_claim_next(project=project, agent=agent, now=now)
        return None if review is None else review.task_id

    claim_loop(arg, barrier, clock, out, claim)


class Bench:
    def __init__(self, args: argparse.Namespace, db_url: str) -> None:
        self.args = args
        self.db_url = db_url
        self.duration = args.duration or (1.5 if args.quick else 5.0)
        self.counter = 0

    def level(self, mode: str, agents: int) -> Run:
        from django.db import connection

        self.counter += 1
        total = (int(CEILING[mode] * self.duration / agents * 1.5) + 20) * agents
        seeded = seed(
            f"bench-review-{self.counter}-{mode.replace('+', 'full')}-{agents}",
            tasks=total,
            reviewers=total,
        )
        connection.close()
        run = Run(mode, agents, load=(round(os.getloadavg()[0], 2), 0.0))
        # This process's CPU (the service's Python, or psycopg's client side for raw+): less
        # at the mercy of the shared machine's load than claims/s.
        cpu = time.process_time()
        if mode == "raw+":
            chunks = _slices(seeded.agents, agents)
            args = [(self.db_url, seeded.project_id, chunk) for chunk in chunks]
            claimed = run_threads(run, self.duration, args, raw_worker)
        else:
            chunks = _slices([pk for pk, _ in seeded.agents], agents)
            args = [(seeded.project_id, chunk) for chunk in chunks]
            claimed = run_threads(run, self.duration, args, service_worker)
        cpu = time.process_time() - cpu
        run.load = (run.load[0], round(os.getloadavg()[0], 2))
        if run.claims:
            run.cpu = {"process": round(cpu / run.claims * 1000, 3)}
        verify(run, seeded, claimed)
        if not self.args.json:
            v = run.verified
            print(
                f"  {mode:>8} {agents:>3} reviewers: {run.rate:8.1f} claims/s  "
                f"p50 {run.pct(50):7.2f} ms  p99 {run.pct(99):7.2f} ms  "
                f"CPU {run.cpu.get('process', float('nan')):6.2f} ms/claim  "
                f"errors {sum(run.errors.values())}  double claims {v['double_claims']}"
                f"{'' if v['ok'] else '  VERIFY FAILED ' + json.dumps(v)}"
                f"  load {run.load[0]}→{run.load[1]}",
                flush=True,
            )
        return run


def _merged(runs: list[Run]) -> dict[str, Any]:
    """Rounds of one mode and level as one: their claims and seconds summed, the latencies
    pooled, the double claims added up."""
    one = Run(runs[0].mode, runs[0].agents)
    cpu = sum(r.cpu.get("process", 0) * r.claims for r in runs)
    for run in runs:
        one.claims += run.claims
        one.elapsed += run.elapsed
        one.latencies += run.latencies
        for k, v in run.errors.items():
            one.errors[k] = one.errors.get(k, 0) + v
    one.verified = {
        "double_claims": sum(r.verified["double_claims"] for r in runs),
        "ok": all(r.verified["ok"] for r in runs),
    }
    one.load = (runs[0].load[0], runs[-1].load[1])
    if one.claims:
        one.cpu = {"process": round(cpu / one.claims, 3)}
    return one.summary()


def print_table(levels: list[dict[str, Any]]) -> None:
    print(
        "\n| reviewers | raw+ claims/s (p50/p99 ms) | service claims/s (p50/p99) | "
        "service/raw+ | service CPU ms/claim | double claims |\n|---|---|---|---|---|---|"
    )
    for row in levels:
        cells = [
            f"{row[m]['claims_per_s']:.0f} ({row[m]['p50_ms']:.1f}/{row[m]['p99_ms']:.1f})"
            for m in ("raw+", "service")
        ]
        doubles = sum(row[m]["verified"]["double_claims"] for m in ("raw+", "service"))
        print(
            f"| {row['agents']} | {' | '.join(cells)} | {row['service/raw+']:.0%} | "
            f"{row['service']['cpu_ms_per_claim'].get('process', float('nan')):.1f} | {doubles} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs, one round")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--duration", type=float, help="seconds per run")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--rounds", type=int, help="alternated rounds per level (default 3)")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--db-name", default="liza_bench_reviews")
    args = parser.parse_args(argv)

    base = pg_server()
    started = time.monotonic()
    db_url = create_database(base, args.db_name)
    env = bench_env(db_url, channel_prefix="liza-bench-reviews", no_redis=False)
    os.environ.clear()
    os.environ.update(env)

    import django

    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", verbosity=0)
        bench = Bench(args, db_url)
        rounds = args.rounds or (1 if args.quick else 3)
        bench.level("service", 4)  # warm up: imports, the first statements prepared
        result: dict[str, Any] = {
            "machine": {"cores": os.cpu_count(), "loadavg_at_start": os.getloadavg()},
            "seconds_per_run": bench.duration,
            "rounds": rounds,
            "levels": [],
        }
        for agents in (int(x) for x in args.levels.split(",")):
            runs: dict[str, list[Run]] = {"raw+": [], "service": []}
            for n in range(rounds):
                for mode in sorted(runs, reverse=bool(n % 2)):  # alternated
                    runs[mode].append(bench.level(mode, agents))
            row: dict[str, Any] = {"agents": agents}
            row.update({mode: _merged(done) for mode, done in runs.items()})
            full = row["raw+"]["claims_per_s"] or float("nan")
            row["service/raw+"] = row["service"]["claims_per_s"] / full
            result["levels"].append(row)
        result["seconds"] = round(time.monotonic() - started, 1)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_table(result["levels"])
        ok = all(row[m]["verified"]["ok"] for row in result["levels"] for m in ("raw+", "service"))
        return 0 if ok else 1
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, args.db_name)


if __name__ == "__main__":
    raise SystemExit(main())
