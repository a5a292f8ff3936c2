"""`.ci/serve` runs the watcher beside the server and stops it with the server (README), on the
embedded default (where liza_demo's flow project is then checked too) and, with
`--production`, as granian workers on PostgreSQL and Redis."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg

from boards.demo.projects import ADMIN_PASSWORD, ADMIN_USERNAME
from tests.embedded_cluster import embedded_cluster
from tests.live_server import ROOT, free_port, sibling_database_url, suite_database_url


def _children(pid: int) -> dict[int, str]:
    """Direct children of `pid` and their command lines (Linux /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError, IndexError):
            continue
    return {k: v.decode() for k, v in found.items()}


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@contextlib.contextmanager
def _serving(args: list[str], env: dict[str, str]) -> Iterator[tuple[subprocess.Popen, list[str]]]:
    """`bash .ci/serve ARGS` until its watcher has swept once and it has printed its address:
    the process and its output so far. The address is printed only once the server accepts
    connections (README: open it at once). Killed with its whole group at the end, whatever
    happened."""
    serve = subprocess.Popen(
        ["bash", ".ci/serve", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in serve.stdout], daemon=True).start()
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 240

        def ready() -> bool:
            swept = any("liza_watch heartbeat" in s for s in seen)
            return swept and any(" is running at " in s for s in seen)

        while time.monotonic() < deadline and not ready():
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert serve.poll() is None, "".join(seen)
        # liza_demo's two projects: the live demo and the two weeks of flow (demo-flow).
        assert any("liza_watch heartbeat: 2 project(s) swept" in s for s in seen), "".join(seen)
        (banner,) = [s for s in seen if " is running at " in s]
        assert f"http://127.0.0.1:{env['PORT']}/" in banner
        # Printed once the server listens: the first connection is accepted.
        socket.create_connection(("127.0.0.1", int(env["PORT"])), timeout=5).close()
        yield serve, seen
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["PORT"] = str(free_port())
    return env


def _stops_on_sigterm(serve: subprocess.Popen, pids: list[int]) -> None:
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=60) == 143
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if _alive(pid)]
        time.sleep(0.2)


def _insights_csv(url: str, *charts: str) -> list[list[dict[str, str]]]:
    """Each chart's CSV from demo-flow's insights page, signed in as the demo admin."""
    with httpx.Client(base_url=url, timeout=60) as web:
        web.get("/login/")
        signed_in = web.post(
            "/login/",
            data={
                "username": ADMIN_USERNAME,
                "password": ADMIN_PASSWORD,
                "csrfmiddlewaretoken": web.cookies["csrftoken"],
            },
            headers={"Referer": f"{url}/login/"},
        )
        assert signed_in.status_code == 302, signed_in.text[:500]
        tables = []
        for chart in charts:
            answer = web.get("/p/demo-flow/insights/", params={"format": "csv", "chart": chart})
            assert answer.status_code == 200, answer.text[:500]
            tables.append(list(csv.DictReader(io.StringIO(answer.text))))
        return tables


def test_serve_starts_the_watcher_and_stops_it_with_the_server(tmp_path):
    """The embedded default: a private PostgreSQL cluster of its own (here in tmp_path), no
    DATABASE_URL; the watcher, the server and the cluster all stop with the command, and the
    data is there when the cluster starts again."""
    env = _base_env()
    env["LIZA_EMBEDDED_PG_DIR"] = str(tmp_path / "pg")
    with _serving([], env) as (serve, _):
        # The insights of the flow project, read while the server runs.
        throughput, cfd = _insights_csv(f"http://127.0.0.1:{env['PORT']}", "throughput", "cfd")
        children = _children(serve.pid)
        watchers = [pid for pid, cmd in children.items() if "liza_watch" in cmd]
        servers = [pid for pid, cmd in children.items() if "daphne" in cmd]
        assert len(watchers) == 1 and len(servers) == 1, children
        postmaster = int((tmp_path / "pg" / "data" / "postmaster.pid").read_text().split()[0])
        _stops_on_sigterm(serve, watchers + servers + [postmaster])

    # The cluster stopped with the command; started again, liza_demo's two weeks of flow are
    # there, and valid.
    with embedded_cluster(tmp_path / "pg") as database, psycopg.connect(database) as db:
        actions = [a for (a,) in db.execute(
            "SELECT e.action FROM boards_event e JOIN boards_project p ON p.id = e.project_id"
            " WHERE p.slug = 'demo-flow'"
        )]  # fmt: skip
        # What the page's figures must be: merges per UTC day, and the tasks per state now.
        merged_on = {str(day): n for day, n in db.execute(
            "SELECT (e.timestamp AT TIME ZONE 'UTC')::date, count(*) FROM boards_event e"
            " JOIN boards_project p ON p.id = e.project_id"
            " WHERE p.slug = 'demo-flow' AND e.action = 'merged' GROUP BY 1"
        ).fetchall()}  # fmt: skip
        states = dict(db.execute(
            "SELECT t.status, count(*) FROM boards_task t"
            " JOIN boards_project p ON p.id = t.project_id"
            " WHERE p.slug = 'demo-flow' GROUP BY 1"
        ).fetchall())  # fmt: skip
        assert {"claimed", "rejected", "approved", "merged", "blocked", "lease_expired"} <= set(
            actions
        ), actions
        assert len(merged_on) >= 5, merged_on
        assert {row["day"]: int(row["merged"]) for row in throughput if row["merged"] != "0"} == (
            merged_on
        )
        now = cfd[-1]
        assert {s: int(n) for s, n in now.items() if s != "moment" and n != "0"} == states
        validate = subprocess.run(
            [".venv/bin/python", "manage.py", "liza_validate", "--project", "demo-flow"],
            cwd=ROOT,
            env={**env, "DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": "liza_site.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (validate.returncode, validate.stdout.strip()) == (0, "VALID"), validate.stderr


def test_serve_production_runs_granian_workers_on_postgresql_and_redis():
    """README "Production": the one command that starts that topology locally."""
    name = f"liza_serve_production_{os.getpid()}"
    env = _base_env()
    env["DATABASE_URL"] = sibling_database_url(suite_database_url(), name)
    env["REDIS_URL"] = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    try:
        with _serving(["--production"], env) as (serve, seen):
            output = "".join(seen)
            assert f"Created the database {name}." in output
            assert "production topology: granian x2" in output
            key = re.search(r"Agent key \(coder-4\): (\S+)", output).group(1)
            url = f"http://127.0.0.1:{env['PORT']}"
            children = _children(serve.pid)
            watchers = [pid for pid, cmd in children.items() if "liza_watch" in cmd]
            servers = [pid for pid, cmd in children.items() if "granian" in cmd]
            assert len(watchers) == 1 and len(servers) == 1, children
            workers = _children(servers[0])
            assert len(workers) == 2, workers  # two worker processes under granian
            # Both kinds of traffic: an agent's API call and a page, on PostgreSQL.
            heartbeat = httpx.post(
                f"{url}/api/v1/projects/demo/agents/heartbeat",
                json={},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            assert heartbeat.status_code == 200, heartbeat.text
            assert httpx.get(f"{url}/login/", timeout=30).status_code == 200
            _stops_on_sigterm(serve, watchers + servers + list(workers))
    finally:
        server = sibling_database_url(env["DATABASE_URL"], "postgres")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
