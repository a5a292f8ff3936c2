"""What one watcher sweep costs (issue #11): milliseconds and queries for one project of 2,000
tasks and for 200 projects of 50 tasks, with the growth per project.

    .venv/bin/python bench/watch.py [--json] [--rounds 5]

Creates its own throwaway database (`liza_bench_watch`, next to DATABASE_URL's server), seeds
the projects with `bench/claims.py`'s seeder (UNCLAIMED tasks and idle coders, copied in SQL),
then claims a fifth of each project's tasks through the service so leases, events and agents
are live, and times `watch_sweep` over every project as `manage.py liza_watch` does. A quiet
sweep (nothing due) is the common case and the one measured; the first round, which raises the
alerts, is reported apart. Baseline in the same run: the same sweep over one empty project.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.claims import bench_env, create_database, drop_database, pg_server, seed  # noqa: E402

SHAPES = {"1 x 2000": (1, 2000), "200 x 50": (200, 50), "baseline: 1 x 0": (1, 0)}


def _populate(prefix: str, projects: int, tasks: int) -> list[Any]:
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.projects import Project
    from boards.coordination.models.tasks import Task
    from boards.coordination.services.tasks import task_claim

    made = []
    for n in range(projects):
        slug = f"{prefix}-{n}"
        if tasks:
            seeded = seed(slug, tasks=tasks, agents=max(1, tasks // 5), keys=False)
            project = Project.objects.get(pk=seeded.project_id)
            now = timezone.now()
            for agent in Agent.objects.filter(project=project).order_by("pk")[: tasks // 5]:
                task = Task.objects.filter(project=project, status="UNCLAIMED").order_by("pk")[0]
                task_claim(task=task, agent=agent, now=now, base_commit="bench0001")
        else:
            from boards.coordination.services.projects import project_create

            project = project_create(slug=slug, name=slug, now=timezone.now())
        made.append(project)
    return made


def _sweep_all(projects: list[Any]) -> tuple[float, int]:
    from django.db import connection
    from django.utils import timezone

    from boards.watch.services.watch import watch_sweep

    count = 0

    def counted(execute, sql, params, many, context):
        nonlocal count
        count += 1
        return execute(sql, params, many, context)

    now = timezone.now()
    with connection.execute_wrapper(counted):
        started = time.perf_counter()
        for project in projects:
            watch_sweep(project=project, now=now)
        elapsed = time.perf_counter() - started
    return elapsed * 1000, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=5, help="quiet sweeps measured per shape")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args(argv)

    base = pg_server()
    name = "liza_bench_watch"
    db_url = create_database(base, name)
    env = bench_env(db_url, channel_prefix="liza-bench-watch", no_redis=True)
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    results: dict[str, Any] = {"machine": {"cores": os.cpu_count(), "load": os.getloadavg()}}
    try:
        call_command("migrate", verbosity=0)
        rows = []
        for label, (projects, tasks) in SHAPES.items():
            made = _populate(label.split(":")[0].replace(" ", ""), projects, tasks)
            first_ms, first_queries = _sweep_all(made)  # raises the alerts
            quiet = [_sweep_all(made) for _ in range(args.rounds)]
            ms = statistics.median(q[0] for q in quiet)
            rows.append(
                {
                    "shape": label,
                    "projects": projects,
                    "tasks_per_project": tasks,
                    "first_sweep_ms": round(first_ms, 1),
                    "first_sweep_queries": first_queries,
                    "quiet_sweep_ms_median": round(ms, 1),
                    "quiet_sweep_queries": quiet[-1][1],
                    "ms_per_project": round(ms / projects, 2),
                    "queries_per_project": round(quiet[-1][1] / projects, 1),
                }
            )
        results["sweeps"] = rows
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, name)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        "| shape | first sweep ms (queries) | quiet sweep ms, median | queries | ms / project "
        "| queries / project |\n|---|---:|---:|---:|---:|---:|"
    )
    for r in results["sweeps"]:
        print(
            f"| {r['shape']} | {r['first_sweep_ms']} ({r['first_sweep_queries']}) | "
            f"{r['quiet_sweep_ms_median']} | {r['quiet_sweep_queries']} | "
            f"{r['ms_per_project']} | {r['queries_per_project']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
