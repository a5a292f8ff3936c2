"""`.ci/serve --production`: granian workers on PostgreSQL and Redis, the watcher beside them,
all stopped with the command (README "Production"). The embedded default's `.ci/serve` — its
watcher, its server, its cluster and liza_demo's flow project — is proven by the fresh clone's
`.ci/serve --team` run (test_serve_first_time.py), which starts all of it anyway."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import psycopg

from tests.live_server import ROOT, free_port, sibling_database_url, suite_database_url
from tests.site.serving import children, stops_on_sigterm


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
            started = children(serve.pid)
            watchers = [pid for pid, cmd in started.items() if "liza_watch" in cmd]
            servers = [pid for pid, cmd in started.items() if "granian" in cmd]
            assert len(watchers) == 1 and len(servers) == 1, started
            workers = children(servers[0])
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
            stops_on_sigterm(serve, watchers + servers + list(workers))
    finally:
        server = sibling_database_url(env["DATABASE_URL"], "postgres")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
