"""A whole queue drained through the agent REST API of a real ASGI server (SPEC §6, §11).

    .venv/bin/python bench/http_drain.py                      # 1,000 tasks, 32 coders
    .venv/bin/python bench/http_drain.py --tasks 200 --coders 8
    .venv/bin/python bench/http_drain.py --json               # one JSON object

Each coder is a client thread with its own key, next to a reviewer thread-mate with its own
key. A coder holds one task at a time and, after requesting review, waits (WAITING) until the
verdict (seed 000 agent machine), so the loop is the protocol's own: claim-next →
request-review → review claim → verdict APPROVED → claim-next … until claim-next answers
`task: null`. Every few rounds the waiting coder also tries to claim a second task, which the
server must refuse.

Checked afterwards, from the database: one `claimed` Event per task, every task APPROVED after
exactly one review round, no coder ever holding two tasks, no refused attempt but the probes,
and no response outside the expected ones. The exit code is 0 only if every check holds.

Creates its own throwaway database (`liza_bench_drain` next to DATABASE_URL's server, default
postgres://postgres@127.0.0.1:5432), dropped at the end (`--keep-db` keeps it); board
broadcasts go to Redis database 9 under a channel prefix of its own when Redis answers, else to
the in-memory layer. Bounded: the drain stops at `--deadline` seconds (a coder still draining
then is a failure), each request has its own timeout, the server is killed at the end.

tests/concurrency/test_http_drain.py runs the same drain, CI-sized, in the test suite.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TASKS = 1000
CODERS = 32
PROBE_EVERY = 8  # a waiting coder tries a second claim every 8th round
DEADLINE_S = 300.0  # the whole drain; each request also has its own timeout
REQUEST_TIMEOUT_S = 30.0
BASE_COMMIT = "base0001"


@dataclass(frozen=True)
class Pair:
    """A coder and its reviewer thread-mate, with their API keys."""

    coder_id: str
    coder_key: str
    reviewer_key: str


def queue(project, *, tasks: int, coders: int, now: datetime) -> tuple[list[str], list[Pair]]:
    """`tasks` UNCLAIMED tasks (priorities 1–5), `coders` coders and as many reviewers, each
    with an API key; all through the services, as a planner and an admin would make them."""
    from django.db import transaction

    from agents.services import agent_key_issue, agent_register
    from boards.coordination.models.tasks import Task
    from boards.coordination.services.actors import SYSTEM
    from boards.coordination.services.tasks import task_create, task_finalize

    def register(agent_id: str, role: str):
        return agent_register(project=project, agent_id=agent_id, role=role, now=now)

    keys = [f"task-{i:04d}" for i in range(tasks)]
    with transaction.atomic():  # one commit for the whole queue
        planner = register("planner-1", "planner")
        for i, key in enumerate(keys):
            task_create(
                project=project, actor=planner, key=key, description=f"Drain {key}",
                priority=1 + i % 5, spec_ref=f"specs/{key}.md", done_when="claimed once",
                now=now,
            )  # fmt: skip
            task_finalize(task=Task.objects.get(project=project, key=key), actor=planner, now=now)
    pairs = []
    for i in range(1, coders + 1):
        coder = register(f"coder-{i}", "coder")
        reviewer = register(f"code-reviewer-{i}", "code_reviewer")
        pairs.append(
            Pair(
                coder.agent_id,
                agent_key_issue(actor=SYSTEM, agent=coder, now=now)[1],
                agent_key_issue(actor=SYSTEM, agent=reviewer, now=now)[1],
            )
        )
    return keys, pairs


@dataclass
class Drain:
    """What the clients saw."""

    claims: list[tuple[str, str]] = field(default_factory=list)  # (coder, task key)
    probes: Counter = field(default_factory=Counter)  # refused second claims, per coder
    unexpected: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    elapsed: float = 0.0
    hung: bool = False

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())


def drain(
    url: str,
    slug: str,
    pairs: list[Pair],
    *,
    deadline_s: float = DEADLINE_S,
    probe_every: int = PROBE_EVERY,
) -> Drain:
    """Every coder (with its reviewer) loops until claim-next answers `task: null`, all
    released together; returns what they saw. Transport errors are recorded, not raised."""
    import httpx

    out = Drain()
    lock = threading.Lock()
    barrier = threading.Barrier(len(pairs), timeout=60)
    deadline = time.monotonic() + deadline_s
    base = f"{url}/api/v1/projects/{slug}"

    def drive(pair: Pair) -> None:
        coder_id = pair.coder_id

        def client(key: str) -> httpx.Client:
            return httpx.Client(
                base_url=base,
                headers={"Authorization": f"Bearer {key}"},
                timeout=REQUEST_TIMEOUT_S,
            )

        def post(http: httpx.Client, kind: str, path: str, body: dict | None = None):
            started = time.perf_counter()
            response = http.post(path, json=body)
            elapsed = time.perf_counter() - started
            with lock:
                out.latencies[kind].append(elapsed)
            return response

        def expect(response: httpx.Response, status: int, code: str | None = None) -> bool:
            body = response.json() if response.content else {}
            if response.status_code == status and (
                code is None or body.get("error", {}).get("code") == code
            ):
                return True
            with lock:
                out.unexpected.append(
                    f"{coder_id} {response.request.method} {response.request.url.path} → "
                    f"{response.status_code} {response.text[:300]}"
                )
            return False

        with client(pair.coder_key) as coder, client(pair.reviewer_key) as reviewer:
            barrier.wait()
            rounds = 0
            while time.monotonic() < deadline:
                r = post(coder, "claim-next", "/tasks/claim-next", {"base_commit": BASE_COMMIT})
                if not expect(r, 200):
                    return
                task = r.json()["task"]
                if task is None:
                    return
                if (task["status"], task["assigned_to"]) != ("CLAIMED", coder_id):
                    with lock:
                        out.unexpected.append(f"{coder_id} got {task['key']} as {task}")
                    return
                key = task["key"]
                with lock:
                    out.claims.append((coder_id, key))
                commit = f"{coder_id}-{rounds:04d}"
                r = post(
                    coder, "request-review", f"/tasks/{key}/request-review",
                    {"review_commit": commit, "tree_clean": True},
                )  # fmt: skip
                if not expect(r, 200) or r.json()["task"]["status"] != "READY_FOR_REVIEW":
                    return
                if rounds % probe_every == 0:
                    # WAITING for the verdict: a second claim must be refused.
                    r = post(coder, "probe", "/tasks/claim-next", {"base_commit": BASE_COMMIT})
                    if not expect(r, 409, "conflict"):
                        return
                    with lock:
                        out.probes[coder_id] += 1
                r = post(reviewer, "review-claim", f"/tasks/{key}/review/claim")
                if not expect(r, 201):
                    return
                r = post(
                    reviewer, "verdict", f"/tasks/{key}/verdict",
                    {"verdict": "APPROVED", "review_commit": commit, "reason": "Looks right"},
                )  # fmt: skip
                if not expect(r, 200) or r.json()["task"]["status"] != "APPROVED":
                    return
                rounds += 1
            with lock:
                out.unexpected.append(f"{coder_id} still draining after {deadline_s:g} s")

    def guarded(pair: Pair) -> None:
        try:
            drive(pair)
        except Exception as exc:  # a transport error is a failure too, not a thread warning
            with lock:
                out.unexpected.append(f"{pair.coder_id}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=guarded, args=(pair,), daemon=True) for pair in pairs]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 60)
    out.elapsed = time.monotonic() - started
    out.hung = any(t.is_alive() for t in threads)
    return out


def check(project, result: Drain, keys: list[str], coders: int) -> dict[str, int]:
    """Every way the drain can be wrong, counted from the clients' view and the database; all
    zero when it is right (tests/concurrency/test_http_drain.py asserts each one itself)."""
    from django.db.models import Count

    from boards.coordination.models.records import Event
    from boards.coordination.models.tasks import Task

    claimed = Counter(key for _, key in result.claims)
    events = dict(
        Event.objects.filter(project=project, action="claimed")
        .values("task__key")
        .annotate(n=Count("id"))
        .values_list("task__key", "n")
    )
    submitted = Counter(
        Event.objects.filter(project=project, action="ready_for_review").values_list(
            "task__key", flat=True
        )
    )
    refused = Counter(
        Event.objects.filter(project=project, outcome="rejected").values_list("actor_id", "action")
    )
    probes = {(coder, "claim_failed"): n for coder, n in result.probes.items()}
    approved_at = dict(
        Event.objects.filter(project=project, action="approved", to_status="APPROVED").values_list(
            "task_id", "id"
        )
    )
    held = defaultdict(list)
    for event_id, coder, task_id in Event.objects.filter(
        project=project, action="claimed", outcome="applied"
    ).values_list("id", "actor_id", "task_id"):
        held[coder].append((event_id, approved_at.get(task_id, float("inf"))))
    overlapping = sum(
        any(b[0] < a[1] for a, b in itertools.pairwise(sorted(spans))) for spans in held.values()
    )
    return {
        "unexpected_responses": len(result.unexpected) + int(result.hung),
        "double_claims": sum(n - 1 for n in claimed.values() if n > 1)
        + sum(n - 1 for n in events.values() if n > 1),
        "tasks_never_claimed": len(set(keys) - set(claimed)),
        "tasks_without_one_claimed_event": sum(events.get(key, 0) != 1 for key in keys),
        "tasks_not_approved": Task.objects.filter(project=project)
        .exclude(status="APPROVED")
        .count(),
        "tasks_not_one_review_round": sum(submitted.get(key, 0) != 1 for key in keys),
        "refusals_other_than_probes": sum((refused - Counter(probes)).values())
        + sum((Counter(probes) - refused).values()),
        "coders_holding_two_tasks": overlapping,
        "coders_left_out": coders - len(held),
    }


def _ms(values: list[float], q: int) -> float:
    if len(values) < 2:
        return round(values[0] * 1000, 1) if values else float("nan")
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000, 1)


def summary(result: Drain, findings: dict[str, int], **about: Any) -> dict[str, Any]:
    return {
        **about,
        "seconds": round(result.elapsed, 2),
        "tasks_drained": len(result.claims),
        "requests": result.requests,
        "requests_per_s": round(result.requests / result.elapsed, 1) if result.elapsed else 0.0,
        "tasks_per_s": round(len(result.claims) / result.elapsed, 1) if result.elapsed else 0.0,
        "probes_refused": sum(result.probes.values()),
        "latency_ms": {
            kind: {"count": len(v), "p50": _ms(v, 50), "p99": _ms(v, 99)}
            for kind, v in sorted(result.latencies.items())
        },
        "checks": findings,
        "ok": not any(findings.values()),
        "unexpected_samples": result.unexpected[:10],
    }


def print_table(row: dict[str, Any]) -> None:
    print(
        "| tasks | coders | server | seconds | requests | requests/s | tasks/s | double claims "
        "| all checks |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---|")
    print(
        f"| {row['tasks']} | {row['coders']} | {row['server']} | {row['seconds']} "
        f"| {row['requests']} | {row['requests_per_s']} | {row['tasks_per_s']} "
        f"| {row['checks']['double_claims']} | {'pass' if row['ok'] else 'FAIL'} |"
    )
    print()
    print("| request | count | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for kind, lat in row["latency_ms"].items():
        print(f"| {kind} | {lat['count']} | {lat['p50']} | {lat['p99']} |")
    failed = {name: n for name, n in row["checks"].items() if n}
    if failed:
        print(f"\nFAILED checks: {failed}")
        for sample in row["unexpected_samples"]:
            print(f"  {sample}")


def main(argv: list[str] | None = None) -> int:
    from bench.claims import (
        SERVERS,
        bench_env,
        create_database,
        drop_database,
        pg_server,
        server_available,
        serving,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--coders", type=int, default=CODERS)
    parser.add_argument(
        "--server", default=None, help=f"ASGI server ({', '.join(SERVERS)}; default uvicorn)"
    )
    parser.add_argument(
        "--pool", type=int, default=0, help="psycopg pool per server process (0: none, the product)"
    )
    parser.add_argument("--deadline", type=float, default=DEADLINE_S, help="seconds, at most")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-redis", action="store_true", help="in-memory channel layer")
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--db-name", default="liza_bench_drain")
    args = parser.parse_args(argv)

    server_name = args.server or next(
        name for name in ("uvicorn", "daphne") if server_available(name)
    )
    if server_name not in SERVERS or not server_available(server_name):
        parser.error(f"server {server_name!r} is unknown or not installed")
    base = pg_server()
    db_url = create_database(base, args.db_name)
    env = bench_env(db_url, channel_prefix="liza-bench-drain", no_redis=args.no_redis)
    if args.pool:
        env["LIZA_BENCH_POOL"] = str(args.pool)
    else:
        env.pop("LIZA_BENCH_POOL", None)
    os.environ.clear()
    os.environ.update(env)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from boards.coordination.services.projects import project_create

    try:
        call_command("migrate", verbosity=0)
        now = timezone.now()
        project = project_create(slug="drain", name="Drain", now=now)
        if not args.json:
            print(f"Queueing {args.tasks} tasks for {args.coders} coders...", flush=True)
        keys, pairs = queue(project, tasks=args.tasks, coders=args.coders, now=now)
        connection.close()  # the server's connections only, while it drains
        with serving(server_name, env) as server:
            if not args.json:
                print(f"Draining through {server_name}, {args.deadline:g} s at most...", flush=True)
            url = f"http://127.0.0.1:{server.port}"
            result = drain(url, project.slug, pairs, deadline_s=args.deadline)
        findings = check(project, result, keys, args.coders)
        row = summary(
            result,
            findings,
            tasks=args.tasks,
            coders=args.coders,
            server=server_name,
            pool_per_server_process=args.pool,
            channel_layer="redis" if "REDIS_URL" in env else "in-memory",
            loadavg_at_end=os.getloadavg(),
        )
        if args.json:
            print(json.dumps(row, indent=2))
        else:
            print()
            print_table(row)
        return 0 if row["ok"] else 1
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(base, args.db_name)


if __name__ == "__main__":
    sys.exit(main())
