"""Open-loop load generator for `bench/fleet.py`: a fleet of agents on a fixed schedule.

Runs in its own process (the bench starts it), one asyncio loop on uvloop. Every agent
heartbeats once per `interval`, the fleet's beats spread evenly over it (each agent its own
phase); every coder claims once per `claim_every` (its first claim at a random phase) and submits
the task it got `hold` seconds after the claim was due. Open loop: a request goes out when it is
due whether or not earlier ones have come back, and its latency is counted from when it was
due, not from when it was sent, so a server falling behind shows as latency instead of
quietly lowering the rate (no coordinated omission).

Modes: `http` — the agents' own requests (heartbeat, claim-next, request-review, each with
its agent's key) on keep-alive connections, at most `conns` open, to a real server; `raw` — the
baseline: the same schedule as hand-written SQL (a heartbeat's UPDATE of the agent row and of
the task it holds, as bench/heartbeats.py's raw mode; claims.py's raw pick and claim; the
submit an UPDATE), psycopg, `conns` connections.

Requests are sent with the raw HTTP/1.1 client of bench/http_load.py, not httpx: ~50 µs a
request leaves the two shared cores to the server (measured: its CPU is in the output).

The generator's own lag — how late the loop handed a due request on — is measured apart
from latency, so a late generator cannot pass for a slow server. Only requests due in the
window after `warmup` count. Writes `start` and `end` lines on stdout as the window opens and
closes (the bench samples the server's CPU then), then one JSON object.

Input: a JSON spec file (argv[1]).
"""

from __future__ import annotations

import asyncio
import heapq
import json
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.http_load import _read_response, run_from_spec

BEAT, CLAIM, SUBMIT = "heartbeat", "claim", "submit"
TIMEOUT = 30.0  # seconds a request may take before it counts as an error


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": round(ordered[-1], 2)}


class Http:
    """A bounded pool of keep-alive connections to the server; a request waits for one."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.host, self.port = spec["host"], spec["port"]
        self.limit, self.opened = spec["conns"], 0
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.waiters: asyncio.Queue = asyncio.Queue()

    async def _connection(self):
        if self.idle:
            return self.idle.pop()
        if self.opened < self.limit:
            self.opened += 1
            try:
                return await asyncio.open_connection(self.host, self.port)
            except OSError:
                self.opened -= 1
                raise
        return await self.waiters.get()

    def _give_back(self, conn) -> None:
        if not self.waiters._getters:  # type: ignore[attr-defined]  # nobody waiting
            self.idle.append(conn)
        else:
            self.waiters.put_nowait(conn)

    async def post(self, path: str, key: str, body: bytes) -> tuple[int, bytes]:
        try:
            return await self._post(path, key, body)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if getattr(exc, "partial", b""):
                raise
            # The server closed an idle keep-alive connection as it was reused (granian's idle
            # timeout): sent again on a new one (not another idle one, which may be closed too),
            # as an HTTP client's pool does.
            return await self._post(path, key, body, fresh=True)

    async def _post(
        self, path: str, key: str, body: bytes, *, fresh: bool = False
    ) -> tuple[int, bytes]:
        if fresh:
            self.opened += 1
            reader, writer = await asyncio.open_connection(self.host, self.port)
        else:
            reader, writer = await self._connection()
        request = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            f"Content-Length: {len(body)}\r\nAuthorization: Bearer {key}\r\n\r\n"
        ).encode() + body
        try:
            writer.write(request)
            status, answer, close = await asyncio.wait_for(_read_response(reader), TIMEOUT)
        except BaseException:
            writer.close()
            self.opened -= 1
            raise
        if close:
            writer.close()
            self.opened -= 1
        else:
            self._give_back((reader, writer))
        return status, answer


class HttpFleet:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.http = Http(spec)

    async def start(self) -> None:
        pass

    async def beat(self, agent: dict[str, Any], held: Any) -> tuple[int, Any]:
        # What a supervisor sends while its agent runs (agents/client/liverun.py).
        body = json.dumps({"progress_at": datetime.now(UTC).isoformat()}).encode()
        status, _ = await self.http.post(f"{agent['base']}/agents/heartbeat", agent["key"], body)
        return status, None

    async def claim(self, agent: dict[str, Any]) -> tuple[int, Any]:
        body = b'{"base_commit": "bench0001"}'
        status, answer = await self.http.post(
            f"{agent['base']}/tasks/claim-next", agent["key"], body
        )
        task = json.loads(answer).get("task") if status == 200 else None
        return status, task["key"] if task else None

    async def submit(self, agent: dict[str, Any], held: Any) -> tuple[int, Any]:
        body = b'{"review_commit": "c0ffee01", "tree_clean": true}'
        path = f"{agent['base']}/tasks/{held}/request-review"
        status, _ = await self.http.post(path, agent["key"], body)
        return status, None


RAW_BEAT = (
    "UPDATE agents_agent SET heartbeat = now(), lease_expires = now() + interval '300 seconds' "
    "WHERE id = %s"
)
RAW_TASK_LEASE = (
    "UPDATE boards_task SET lease_expires = now() + interval '300 seconds' WHERE id = %s"
)
RAW_PICK = """
SELECT id FROM boards_task WHERE project_id = %s AND status = 'UNCLAIMED'
ORDER BY priority, created, id LIMIT 1 FOR UPDATE SKIP LOCKED
"""
RAW_CLAIM = """
UPDATE boards_task SET status = 'CLAIMED', assigned_to = %s, worktree = '.worktrees/' || key,
  base_commit = 'bench0001', iteration = 1, lease_expires = now() + interval '300 seconds',
  updated = now() WHERE id = %s
"""
RAW_SUBMIT = (
    "UPDATE boards_task SET status = 'READY_FOR_REVIEW', review_commit = 'c0ffee01', "
    "updated = now() WHERE id = %s"
)


class RawFleet:
    """The baseline: the schedule's work as hand-written SQL on `conns` connections."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.url, self.size = spec["database_url"], spec["conns"]
        self.pool: asyncio.Queue = asyncio.Queue()

    async def start(self) -> None:
        import psycopg

        for _ in range(self.size):
            self.pool.put_nowait(await psycopg.AsyncConnection.connect(self.url, autocommit=True))

    async def _run(self, statements: list[tuple[str, list[Any]]]) -> None:
        conn = await self.pool.get()
        try:
            async with conn.transaction():
                for sql, params in statements:
                    await conn.execute(sql, params, prepare=True)
        finally:
            self.pool.put_nowait(conn)

    async def beat(self, agent: dict[str, Any], held: Any) -> tuple[int, Any]:
        statements = [(RAW_BEAT, [agent["pk"]])]
        if held is not None:
            statements.append((RAW_TASK_LEASE, [held]))
        await self._run(statements)
        return 200, None

    async def claim(self, agent: dict[str, Any]) -> tuple[int, Any]:
        conn = await self.pool.get()
        try:
            async with conn.transaction():
                cur = await conn.execute(RAW_PICK, [agent["project_id"]], prepare=True)
                row = await cur.fetchone()
                if row is not None:
                    await conn.execute(RAW_CLAIM, [agent["id"], row[0]], prepare=True)
        finally:
            self.pool.put_nowait(conn)
        return 200, row[0] if row is not None else None

    async def submit(self, agent: dict[str, Any], held: Any) -> tuple[int, Any]:
        await self._run([(RAW_SUBMIT, [held])])
        return 200, None


class Schedule:
    """Every due request, in time order: (due s, sequence, kind, agent index)."""

    def __init__(self, spec: dict[str, Any], rng: random.Random) -> None:
        agents, interval = spec["agents"], spec["interval"]
        self.heap: list[tuple[float, int, str, int]] = []
        self.seq = 0
        order = list(range(len(agents)))
        rng.shuffle(order)  # projects and roles interleaved over the interval
        for slot, index in enumerate(order):
            self.push(slot * interval / len(agents), BEAT, index)
        for index, agent in enumerate(agents):
            if agent["coder"] and spec["claim_every"]:
                self.push(rng.uniform(0, spec["claim_every"]), CLAIM, index)

    def push(self, due: float, kind: str, index: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (due, self.seq, kind, index))


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    fleet = HttpFleet(spec) if spec["mode"] == "http" else RawFleet(spec)
    await fleet.start()
    agents, rng = spec["agents"], random.Random(spec.get("seed", 1))
    schedule = Schedule(spec, rng)
    warmup, end = spec["warmup"], spec["warmup"] + spec["duration"]
    held: dict[int, Any] = {}
    kinds = (BEAT, CLAIM, SUBMIT)
    found: dict[str, Any] = {
        k: {"due": 0, "ok": 0, "latencies": [], "errors": {}, "samples": [], "empty": 0}
        for k in kinds
    }
    lags: list[float] = []
    pending: set[asyncio.Task] = set()
    t0 = time.perf_counter()

    def measured(due: float) -> bool:
        return warmup <= due < end

    async def one(due: float, kind: str, index: int) -> None:
        agent, out = agents[index], found[kind]
        try:
            if kind == BEAT:
                status, answer = await fleet.beat(agent, held.get(index))
            elif kind == CLAIM:
                status, answer = await fleet.claim(agent)
            else:
                status, answer = await fleet.submit(agent, held.pop(index))
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
            status, answer = type(exc).__name__, None
        done = time.perf_counter() - t0
        if kind == CLAIM and status == 200 and answer is not None:
            held[index] = answer
            schedule.push(due + spec["hold"], SUBMIT, index)
        if kind == CLAIM and due + spec["claim_every"] < end:
            schedule.push(due + spec["claim_every"], CLAIM, index)
        if not measured(due):
            return
        if status == 200:
            out["ok"] += 1
            out["latencies"].append((done - due) * 1000)
            out["empty"] += kind == CLAIM and answer is None
        else:
            out["errors"][str(status)] = out["errors"].get(str(status), 0) + 1

    print("ready", flush=True)
    cpu_window = wall_window = None
    started = False
    while schedule.heap:
        due, _, kind, index = schedule.heap[0]
        if due >= end:
            break
        now = time.perf_counter() - t0
        if due > now:
            await asyncio.sleep(due - now)
            continue
        heapq.heappop(schedule.heap)
        if not started and due >= warmup:
            started = True
            print("start", flush=True)
            cpu_window, wall_window = time.process_time(), time.perf_counter()
        if measured(due):
            found[kind]["due"] += 1
            lags.append((now - due) * 1000)
        if kind == BEAT:  # beats repeat every interval: pushed again as each is handed on
            schedule.push(due + spec["interval"], BEAT, index)
        task = asyncio.create_task(one(due, kind, index))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.sleep(max(0.0, end - (time.perf_counter() - t0)))
    cpu = time.process_time() - (cpu_window or 0.0)
    wall = time.perf_counter() - (wall_window or t0)
    # What is still out at the end was due in the window: it gets until TIMEOUT, then counts
    # as an error.
    left = len(pending)
    if pending:
        await asyncio.wait(pending, timeout=TIMEOUT + 5)
    print("end", flush=True)
    return summary(found, lags, spec, cpu=cpu, wall=wall, outstanding=left, fleet=fleet)


def summary(found, lags, spec, *, cpu: float, wall: float, outstanding: int, fleet) -> dict:
    """Per kind its rates and latency percentiles; the generator's lag and CPU."""
    requests = sum(out["due"] for out in found.values())
    for out in found.values():
        # Due in the window and still unanswered after TIMEOUT past its end: an error, not
        # silently left out of the achieved rate.
        unfinished = out["due"] - out["ok"] - sum(out["errors"].values())
        if unfinished > 0:
            out["errors"]["unfinished"] = unfinished
        out.update(percentiles(out.pop("latencies")))
        out["offered_per_s"] = round(out["due"] / spec["duration"], 1)
        out["achieved_per_s"] = round(out["ok"] / spec["duration"], 1)
    return {
        "kinds": found,
        "outstanding_at_end": outstanding,
        "generator": {
            "lag": percentiles(lags),
            "cpu_s": round(cpu, 2),
            "cpu_pct_of_core": round(100 * cpu / wall, 1) if wall else None,
            "cpu_ms_per_request": round(cpu / requests * 1000, 3) if requests else None,
        },
        "connections_opened": getattr(getattr(fleet, "http", None), "opened", spec["conns"]),
    }


if __name__ == "__main__":
    run_from_spec(run)
