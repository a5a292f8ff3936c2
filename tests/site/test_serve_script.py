"""`.ci/serve` runs the watcher beside the server and stops it with the server (README)."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from tests.live_server import ROOT


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def test_serve_starts_the_watcher_and_stops_it_with_the_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(PORT=str(_free_port()), LIZA_SQLITE_PATH=str(tmp_path / "liza.sqlite3"))
    env.pop("DJANGO_SETTINGS_MODULE", None)
    serve = subprocess.Popen(
        ["bash", ".ci/serve"],
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
        seen = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not any("liza_watch heartbeat" in s for s in seen):
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert serve.poll() is None, "".join(seen)
        assert any("liza_watch heartbeat: 1 project(s) swept" in s for s in seen), "".join(seen)
        children = _children(serve.pid)
        watchers = [pid for pid, cmd in children.items() if "liza_watch" in cmd]
        servers = [pid for pid, cmd in children.items() if "daphne" in cmd]
        assert len(watchers) == 1 and len(servers) == 1, children

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 143
        time.sleep(0.5)
        assert not _alive(watchers[0]) and not _alive(servers[0])
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)
