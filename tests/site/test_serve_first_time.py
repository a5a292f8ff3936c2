"""The README's `bash .ci/serve --team` as a newcomer runs it (issue 23 §6, issue 12 §4): from a
fresh clone (its own `.venv`, its own embedded PostgreSQL cluster, in-memory channel layer, the
watcher; `../shared` beside it as in the project's layout) the scripted planner, two coders and
two reviewers, each a real `liza supervise` process, finish the demo goal unattended, and the
finished board is still there when the cluster is started again; with the port taken the command
fails at once, clearly, with no "running at" line for someone else's server."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import stat
import subprocess
import threading
import time

import psycopg

from boards.protocol import Action, GoalStatus, TaskStatus
from tests.embedded_cluster import embedded_cluster
from tests.live_server import ROOT, free_port

LIMIT = 180  # seconds: the "under 3 minutes", for the team alone


def _env(port: int, tmp_path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LIZA_", "DJANGO_", "VIRTUAL_ENV"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PYTHONPATH")
    }
    env.update(PORT=str(port), TMPDIR=str(tmp_path))
    return env


def _what_went_wrong(output: str, clone) -> str:
    """A failed run's first problems (an outage's cause is logged once, long before the end),
    its last lines, and the end of the embedded cluster's own log."""
    problems = [
        line
        for line in output.splitlines()
        if re.search(r"unreachable|Error|Traceback|FATAL|crash", line)
    ]
    server_log = clone / "var" / "postgres" / "server.log"
    cluster = server_log.read_text(errors="replace")[-3000:] if server_log.exists() else ""
    return "\n".join(
        ["first problems:", *problems[:30], "last lines:", output[-4000:], "cluster log:", cluster]
    )


def test_a_taken_port_is_a_clear_error_before_anything_starts(tmp_path):
    with socket.socket() as other:  # someone else's server
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            ["bash", ".ci/serve", "--team"],
            cwd=ROOT,
            env=_env(port, tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "PORT=8001 bash .ci/serve" in done.stderr
    assert "running at" not in done.stdout + done.stderr
    assert time.monotonic() - started < 30  # before the install, migrations and the team


def test_the_readme_team_command_works_from_a_fresh_clone(tmp_path):
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    clone = tmp_path / "liza-board"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True)
    if (ROOT.parent / "shared").is_dir():
        (tmp_path / "shared").symlink_to(ROOT.parent / "shared")
    port = free_port()
    serve = subprocess.Popen(
        ["bash", ".ci/serve", "--team"],  # the README's exact command, in the clone
        cwd=clone,
        env=_env(port, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in serve.stdout], daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 900  # a fresh .venv is installed first
        while time.monotonic() < deadline and not any("liza demo-team: done" in s for s in seen):
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert serve.poll() is None, "".join(seen)[-6000:]
        output = "".join(seen)
        done = re.search(r"liza demo-team: done in ([\d.]+) s \(exit (\d+)\)", output)
        assert done and done.group(2) == "0", _what_went_wrong(output, clone)
        assert float(done.group(1)) < LIMIT, done.group(1)
        assert "the goal is COMPLETED" in output
        assert "cannot read the key file" not in output
        assert f"running at http://127.0.0.1:{port}/" in output
        # Five supervisors started, and each stopped by itself (role complete), exit 0.
        for agent in ("planner-1", "coder-1", "coder-2", "code-reviewer-1", "code-reviewer-2"):
            assert f"started {agent} (pid" in output
            assert f"{agent} stopped (exit 0)" in output, output[-6000:]
        keys = sorted((clone / "var" / "team-keys").glob("*.key"))
        assert len(keys) == 5
        assert all(stat.S_IMODE(k.stat().st_mode) == 0o600 for k in keys)
        # The server is still up (the newcomer looks at the finished board); SIGTERM stops it.
        assert serve.poll() is None
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 143
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)

    slug = (clone / "var" / "team-keys" / "project").read_text().strip()
    # The cluster stopped with the command; started again, the finished goal is there.
    with embedded_cluster(clone / "var" / "postgres") as database, psycopg.connect(database) as db:
        (project,) = db.execute("SELECT id FROM boards_project WHERE slug = %s", [slug]).fetchone()
        statuses = db.execute(
            "SELECT status FROM boards_task WHERE project_id = %s", [project]
        ).fetchall()
        actions = [a for (a,) in db.execute(
            "SELECT action FROM boards_event WHERE project_id = %s", [project]
        )]  # fmt: skip
        goal = db.execute(
            "SELECT status FROM boards_goal WHERE project_id = %s", [project]
        ).fetchall()
        assert len(statuses) == 4 and {s for (s,) in statuses} == {TaskStatus.MERGED}, statuses
        assert actions.count(Action.REJECTED) >= 1 and actions.count(Action.BLOCKED) >= 1, actions
        assert goal == [(GoalStatus.COMPLETED,)]
        validate = subprocess.run(
            [".venv/bin/python", "manage.py", "liza_validate", "--project", slug],
            cwd=clone,
            env={**_env(port, tmp_path), "DATABASE_URL": database,
                 "DJANGO_SETTINGS_MODULE": "liza_site.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
        assert validate.stdout.strip() == "VALID", validate.stdout + validate.stderr
