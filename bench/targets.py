"""Issue 26's targets in one command: every bench that measures one, one table (issue 26).

    .venv/bin/python bench/targets.py [--quick] [--json] [--baseline TREE] [--only NAME,…]

Runs, one after the other, the benches that hold the issue's targets, each with `--json` in a
process of its own and on its own throwaway database, and prints one row per target: what this
tree measured, its ratio where the target is a ratio, and whether it is met. With `--baseline
TREE` (a checkout of another commit, with its own `.venv`: e.g. `git worktree add --detach
../base <rev>` then `bash ../base/.ci/setup test`) every bench also runs from that tree, the two
alternated bench by bench (which runs first flips each time), so the "before" and "after" columns
come from the same machine and hour; a bench the baseline tree does not have is left empty.

The figures are the benches' own (each bench's section of bench/README.md says what it measures
and how); this only runs them and reads their JSON:

* in-process claim-next ≥ 70 % of raw+, and over HTTP ≥ 40 % with p99 ≤ 50 ms, 16 agents:
  `claims.py --levels 16 --modes raw+,service,http`;
* in-process review claim-next ≥ 70 % of raw+: `review_claims.py --levels 16`;
* HTTP heartbeat ≥ 1,500/s and ≥ 60 % of raw, p99 ≤ 20 ms, ≥ 95 % HOT:
  `heartbeats.py --modes raw,http`;
* board render ≤ 15 ms at 500 cards, ≤ 60 ms at 2,000: `board.py --only render`;
* 500 browsers × 5 events/s, p99 ≤ 150 ms, 0 lost, ≤ 1.5× bare, on the production command and
  on the embedded default: `board.py --only live`, through granian (Redis) and daphne (memory);
* 10,000 agents heartbeating every 30 s + their claims, sustained, p99 ≤ 50 ms: `fleet.py`.

`--quick` passes `--quick` on (each bench's short form; the fleet then tries 2,500 and 5,000
agents, `--fleet-agents` chooses); `--duration S` sets the seconds of each measured run of the
benches that take it (quick runs of 1.5 s are noisy). Exit status: 0 when every bench ran,
verified its claims (0 double claims) and gave every figure, 1 otherwise; a target not met is a
figure, not a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    args: tuple[str, ...]
    timeout_s: int


def benches(quick: bool, fleet_agents: str, duration: float | None) -> list[Bench]:
    # --duration: seconds per measured run of the benches that take it (not render: a number
    # of repeats; not the fleet: its own warm-up and window).
    short = ("--quick",) if quick else ()
    timed = (*short, "--duration", f"{duration:g}") if duration else short
    production = ("--server", "granian-2w")
    return [
        Bench(
            "claims", "claims.py", (*timed, "--levels", "16", "--modes", "raw+,service,http"), 900
        ),
        Bench("review_claims", "review_claims.py", (*timed, "--levels", "16"), 900),
        Bench("heartbeats", "heartbeats.py", (*timed, "--modes", "raw,http"), 600),
        Bench("render", "board.py", (*short, "--only", "render", "--sizes", "500", "2000"), 900),
        Bench("live", "board.py", (*timed, "--only", "live", "--clients", "500", *production), 900),
        Bench(
            "live_embedded",
            "board.py",
            (
                *timed,
                "--only",
                "live",
                "--clients",
                "500",
                "--server",
                "daphne",
                "--layer",
                "memory",
            ),
            900,
        ),
        Bench("fleet", "fleet.py", (*short, "--agents", fleet_agents), 3600),
    ]


def run_bench(tree: Path, bench: Bench) -> dict[str, Any] | None:
    """The bench's JSON as `tree` prints it; None when that tree has no such bench or form of
    it. A bench that fails is an error row (its exit status and the end of its output), not a
    crash."""
    script = tree / "bench" / bench.script
    if not script.exists():
        return None
    python = tree / ".venv" / "bin" / "python"
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(python), str(script), *bench.args, "--json"],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=bench.timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {bench.timeout_s} s"}
    seconds = round(time.monotonic() - started, 1)
    if done.returncode == 2 and "unrecognized arguments" in done.stderr:
        return None  # an older tree's bench without this form (e.g. board.py's --layer)
    # The JSON object is the last thing a bench prints on stdout; anything before it is its
    # progress (some print it there).
    out = done.stdout
    start = out.find("\n{") + 1 if not out.startswith("{") else 0
    try:
        found = json.loads(out[start:])
    except ValueError:
        tail = (done.stdout + done.stderr)[-1500:]
        return {"error": f"exit {done.returncode}, no JSON: {tail}"}
    found["_seconds"] = seconds
    found["_exit"] = done.returncode
    return found


# One reader per bench: its JSON → {target name: (figure, met)}. A reader never raises on an
# older tree's JSON (a baseline may lack a field): a missing figure reads "—", its verdict None.
Figures = dict[str, tuple[str, bool | None]]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _level16(found: dict[str, Any]) -> dict[str, Any]:
    return next((r for r in found.get("levels") or [] if r.get("agents") == 16), {})


def _ratio(row: dict[str, Any], mode: str, base: str) -> float | None:
    num, den = _get(row, mode, "claims_per_s"), _get(row, base, "claims_per_s")
    return num / den if num is not None and den else None


def read_claims(found: dict[str, Any]) -> Figures:
    row = _level16(found)
    service, http = _ratio(row, "service", "raw+"), _ratio(row, "http", "raw+")
    p99 = _get(row, "http", "p99_ms")
    cpu = _get(row, "http", "cpu_ms_per_claim", "server")
    return {
        "in-process claim-next ÷ raw+ (≥ 70 %)": (
            _pct(service),
            None if service is None else service >= 0.7,
        ),
        "HTTP claim-next ÷ raw+ (≥ 40 %)": (
            _pct(http) + (f", {cpu:.1f} ms server CPU" if cpu is not None else ""),
            None if http is None else http >= 0.4,
        ),
        "HTTP claim-next p99 (≤ 50 ms)": (
            "—" if p99 is None else f"{p99:.0f} ms",
            None if p99 is None else p99 <= 50,
        ),
    }


def read_review_claims(found: dict[str, Any]) -> Figures:
    ratio = _get(_level16(found), "service/raw+")
    return {
        "in-process review claim-next ÷ raw+ (≥ 70 %)": (
            _pct(ratio),
            None if ratio is None else ratio >= 0.7,
        )
    }


def read_heartbeats(found: dict[str, Any]) -> Figures:
    http = next((m for m in found.get("modes") or [] if m.get("mode") == "http"), {})
    rate, ratio, p99 = http.get("rate"), http.get("ratio_to_raw"), http.get("p99_ms")
    hot = _get(http, "hot_pct", "all")
    worker = _get(http, "cpu_ms_per_heartbeat", "server")
    database = _get(http, "cpu_ms_per_heartbeat", "database")
    cpu = ", ".join(
        f"{v:.1f} ms {k} CPU" for k, v in (("worker", worker), ("database", database)) if v
    )
    return {
        "HTTP heartbeats/s (≥ 1,500 and ≥ 60 % of raw)": (
            "—"
            if rate is None
            else f"{rate:.0f}/s = {_pct(ratio)} of raw" + (f", {cpu}" if cpu else ""),
            None if rate is None else rate >= 1500 and (ratio or 0) >= 0.6,
        ),
        "HTTP heartbeat p99 (≤ 20 ms)": (
            "—" if p99 is None else f"{p99:.0f} ms",
            None if p99 is None else p99 <= 20,
        ),
        "heartbeat updates HOT (≥ 95 %)": (
            "—" if hot is None else f"{hot:.1f} %",
            None if hot is None else hot >= 95,
        ),
    }


def _render_p50(found: dict[str, Any], size: int) -> tuple[float | None, Any]:
    for row in found.get("render") or []:
        if row.get("tasks") == size:
            return row.get("view_ms_p50"), row.get("queries")
    return None, None


def read_render(found: dict[str, Any]) -> Figures:
    """p50 of the page at each size; at 2,000 cards also "constant queries": as many
    statements as at 500 (when the bench counts them)."""
    out: Figures = {}
    small_queries = _render_p50(found, 500)[1]
    for size, limit in ((500, 15), (2000, 60)):
        p50, queries = _render_p50(found, size)
        figure = "—" if p50 is None else f"{p50:.1f} ms p50"
        if queries is not None:
            figure += f", {queries} statements"
        met = None if p50 is None else p50 <= limit
        if met and size == 2000 and queries is not None:
            met = queries == small_queries
        out[f"board render at {size:,} cards (≤ {limit} ms)"] = (figure, met)
    return out


def read_live(found: dict[str, Any]) -> Figures:
    row = next((r for r in found.get("live") or [] if r.get("clients") == 500), {})
    liza_p99, bare_p99 = _get(row, "liza", "p99_ms"), _get(row, "bare", "p99_ms")
    lost = _get(row, "liza", "lost")
    times = liza_p99 / bare_p99 if liza_p99 is not None and bare_p99 else None
    met = None
    if liza_p99 is not None:
        met = liza_p99 <= 150 and not lost and times is not None and times <= 1.5
    where = f"{found.get('server', '?')}, {found.get('layer', 'redis')} layer"
    return {
        f"500 browsers × 5 events/s on {where} (p99 ≤ 150 ms, 0 lost, ≤ 1.5× bare)": (
            "—"
            if liza_p99 is None
            else f"p99 {liza_p99:.0f} ms, {lost or 0} lost, "
            + ("—" if times is None else f"{times:.2f}× bare"),
            met,
        )
    }


def read_fleet(found: dict[str, Any]) -> Figures:
    """Sustained: every kind of request (heartbeat, claim, the submit that follows it) achieved
    what was offered, each kind's p99 within the target (latency counts from when a request was
    due, so queueing shows)."""
    out: Figures = {}
    target = found.get("target_p99_ms", 50)
    for level in found.get("levels") or []:
        kinds = _get(level, "http", "kinds") or {}
        p99s = {k: v.get("p99_ms") for k, v in kinds.items() if v.get("p99_ms") is not None}
        beats = kinds.get("heartbeat") or {}
        offered, achieved = beats.get("offered_per_s"), beats.get("achieved_per_s")
        met = None
        if p99s and offered:
            kept_up = all(
                (v.get("achieved_per_s") or 0) >= 0.98 * (v.get("offered_per_s") or 0)
                for v in kinds.values()
            )
            met = kept_up and max(p99s.values()) <= target
        out[f"fleet of {level.get('agents'):,} agents (sustained, p99 ≤ {target} ms)"] = (
            "—"
            if not p99s
            else "p99 "
            + ", ".join(f"{k} {v:.0f} ms" for k, v in p99s.items())
            + f"; {achieved} of {offered} heartbeats/s",
            met,
        )
    return out


READERS: dict[str, Callable[[dict[str, Any]], Figures]] = {
    "claims": read_claims,
    "review_claims": read_review_claims,
    "heartbeats": read_heartbeats,
    "render": read_render,
    "live": read_live,
    "live_embedded": read_live,
    "fleet": read_fleet,
}


def verified(name: str, found: dict[str, Any] | None) -> bool:
    """Did the bench run, exit 0 and (where it claims) claim every task at most once?"""
    if found is None:
        return True  # not in that tree: nothing to verify
    if "error" in found or found.get("_exit"):
        return False
    if name == "claims":
        return bool(found.get("all_verified", True))
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each bench's short form")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--baseline", type=Path, help="another checkout to run beside this one")
    parser.add_argument("--only", help=f"comma-separated: {','.join(READERS)}")
    parser.add_argument(
        "--duration", type=float, help="seconds per run of claims, review claims, heartbeats, live"
    )
    parser.add_argument("--fleet-agents", help="default: 2500,5000 with --quick, else 10000")
    args = parser.parse_args(argv)

    fleet_agents = args.fleet_agents or ("2500,5000" if args.quick else "10000")
    chosen = benches(args.quick, fleet_agents, args.duration)
    if args.only:
        names = set(args.only.split(","))
        unknown = names - set(READERS)
        if unknown:
            parser.error(f"unknown bench: {', '.join(sorted(unknown))}")
        chosen = [b for b in chosen if b.name in names]
    trees = {"after": ROOT}
    if args.baseline:
        baseline = args.baseline.resolve()
        if not (baseline / ".venv" / "bin" / "python").exists():
            parser.error(f"{baseline} has no .venv: run `bash {baseline}/.ci/setup test` first")
        trees = {"before": baseline, "after": ROOT}

    started = time.monotonic()
    result: dict[str, Any] = {
        "quick": args.quick,
        "trees": {k: str(v) for k, v in trees.items()},
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "benches": {},
    }
    for i, bench in enumerate(chosen):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        runs: dict[str, Any] = {}
        for side in order:
            if not args.json:
                print(f"{bench.name} ({side}) …", file=sys.stderr, flush=True)
            runs[side] = run_bench(trees[side], bench)
        result["benches"][bench.name] = {"order": order, **runs}

    rows: list[dict[str, Any]] = []
    for bench in chosen:
        runs = result["benches"][bench.name]
        read = READERS[bench.name]
        figures = {
            side: read(runs[side]) if runs.get(side) and "error" not in runs[side] else {}
            for side in trees
        }
        names = list(dict.fromkeys(n for f in figures.values() for n in f))
        for name in names:
            row: dict[str, Any] = {"target": name, "bench": bench.name}
            for side in trees:
                row[side], row[f"{side}_met"] = figures[side].get(name, ("—", None))
            rows.append(row)
        for side in trees:
            if runs.get(side) and "error" in runs[side]:
                rows.append(
                    {
                        "target": f"{bench.name} failed",
                        "bench": bench.name,
                        side: runs[side]["error"][:200],
                        f"{side}_met": None,
                    }
                )
    result["targets"] = rows
    result["all_verified"] = all(
        verified(b.name, result["benches"][b.name].get(side)) for b in chosen for side in trees
    )
    # A figure this tree's bench did not give is a reader out of step with its bench (a renamed
    # field), which must not pass for "not measured".
    result["complete"] = all(row.get("after") != "—" for row in rows)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    result["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, list(trees))
    return 0 if result["all_verified"] and result["complete"] else 1


def print_table(result: dict[str, Any], sides: list[str]) -> None:
    mark = {True: "met", False: "not met", None: "—"}
    head = "| target | " + " | ".join(sides) + " | |"
    print(head)
    print("|---" * (len(sides) + 2) + "|")
    for row in result["targets"]:
        cells = [str(row.get(side, "—")) for side in sides]
        print(f"| {row['target']} | " + " | ".join(cells) + f" | {mark[row.get('after_met')]} |")
    print(
        f"\nload {result['load_before']} → {result['load_after']}; "
        f"every bench verified: {result['all_verified']}; every figure read: "
        f"{result['complete']}; {result['seconds']} s"
    )


if __name__ == "__main__":
    sys.exit(main())
