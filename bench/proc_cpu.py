"""Where a command's CPU goes, by process kind (test-suite time, issue 22).

    python3 bench/proc_cpu.py [--json OUT] [--db liza_BRANCH] -- .venv/bin/python -m pytest …

Runs the command and polls /proc every 0.1 s: every process it starts (any depth: supervisors,
the fake CLIs, `liza mcp`, the test servers, git) and, with --db, the PostgreSQL backends whose
command line names a database containing that text (a test database is `test_<name>_gw0` …).
Each process's utime+stime is summed by kind (its command line, `KINDS`); the CPU a process
spends after the last poll that saw it (at most 0.1 s of it) is lost, so the polled total is a
little under `children_cpu`, the command's own getrusage(RUSAGE_CHILDREN) (every waited-for
descendant, not PostgreSQL). No Django, no third-party package: run it with any Python 3.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
# (kind, text in its command line), first match wins.
KINDS = [
    ("postgres", "postgres:"),
    ("supervisor", "agents.client.cli supervise"),
    ("liza mcp", "agents.client.cli mcp"),
    ("liza mcp", "bin/liza mcp"),
    ("liza (other commands)", "agents.client.cli"),
    ("liza (other commands)", "bin/liza"),
    ("fake coding CLI", "fakes/cli.py"),
    ("demo agent", "agents.client.demo_agents"),
    ("test server", "-m uvicorn"),
    ("test server", "-m granian"),
    ("test server", "-m daphne"),
    ("watcher", "liza_watch"),
    ("pytest worker", "sys.stdin.readline"),
    ("pytest main", "-m pytest"),
    ("pip", "pip"),
]


def kind_of(cmdline: str) -> str:
    for kind, text in KINDS:
        if text in cmdline:
            return kind
    first = cmdline.split(" ", 1)[0]
    return "git" if os.path.basename(first) == "git" else f"other ({os.path.basename(first)})"


def read(pid: str) -> tuple[int, float, str] | None:
    """(parent pid, CPU seconds, start time) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / HZ, fields[19]


def cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", help="write the result here too")
    parser.add_argument("--db", help="also count PostgreSQL backends of databases naming this")
    parser.add_argument("--every", type=float, default=0.1, help="poll interval (s)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started = time.monotonic()
    root = subprocess.Popen(command)
    tracked = {root.pid}
    seen: dict[tuple[int, str], list] = {}  # (pid, start time) -> [kind, cpu, command line]
    while root.poll() is None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            got = read(pid)
            if got is None:
                continue
            parent, cpu, start = got
            key = (int(pid), start)
            if key not in seen:
                # The command line a process has when first seen: a `sh` wrapper that execs
                # Python keeps the wrapper's (its CPU is the Python's all the same).
                line = cmdline(pid)
                ours = parent in tracked or int(pid) in tracked
                backend = args.db and line.startswith("postgres:") and args.db in line
                if not (ours or backend):
                    continue
                tracked.add(int(pid))
                seen[key] = [kind_of(line), 0.0, line[:160]]
            seen[key][1] = cpu
        time.sleep(args.every)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    kinds: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for kind, cpu, _ in seen.values():
        kinds[kind][0] += cpu
        kinds[kind][1] += 1
    result = {
        "wall_s": round(time.monotonic() - started, 1),
        "exit": root.returncode,
        "children_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "polled_cpu_s": round(sum(cpu for cpu, _ in kinds.values()), 1),
        "by_kind": {
            kind: {"cpu_s": round(cpu, 1), "processes": n}
            for kind, (cpu, n) in sorted(kinds.items(), key=lambda item: -item[1][0])
        },
        "top": sorted(([round(c, 2), k, line] for k, c, line in seen.values()), reverse=True)[:20],
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"wall {result['wall_s']} s, CPU {result['children_cpu_s']} core-s (children), "
          f"{result['polled_cpu_s']} polled", file=sys.stderr)  # fmt: skip
    for kind, row in result["by_kind"].items():
        print(f"  {row['cpu_s']:8.1f} core-s  {row['processes']:5d}  {kind}", file=sys.stderr)
    return root.returncode


if __name__ == "__main__":
    sys.exit(main())
