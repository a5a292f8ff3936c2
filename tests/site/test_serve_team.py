"""`bash .ci/serve --team` on the embedded default (its own PostgreSQL cluster, in-memory channel
layer, the watcher): the scripted planner, two coders and two reviewers, each a real
`liza supervise` process started by `liza demo-team`, finish the demo goal unattended (issue 12
§4)."""

from __future__ import annotations

import os
import queue
import re
import signal
import stat
import subprocess
import threading
import time

import psycopg

from boards.protocol import Action, GoalStatus, TaskStatus
from tests.embedded_cluster import embedded_cluster
from tests.live_server import ROOT, free_port

FAST = "--poll-interval 0.3 --heartbeat-interval 2 --restart-delay 0.2 --crash-delay 0.5"
LIMIT = 180  # seconds: the "under 3 minutes", for the team alone


def test_the_scripted_team_finishes_the_demo_goal_unattended(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        PORT=str(free_port()),
        LIZA_EMBEDDED_PG_DIR=str(tmp_path / "pg"),
        LIZA_TEAM_KEYS=str(tmp_path / "keys"),
        LIZA_TEAM_ARGS=FAST,
        TMPDIR=str(tmp_path),  # the team's throwaway repository goes there
    )
    serve = subprocess.Popen(
        ["bash", ".ci/serve", "--team"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in serve.stdout], daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 240 + LIMIT  # the install and migrations come first
        while time.monotonic() < deadline and not any("liza demo-team: done" in s for s in seen):
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert serve.poll() is None, "".join(seen)
        output = "".join(seen)
        done = re.search(r"liza demo-team: done in ([\d.]+) s \(exit (\d+)\)", output)
        assert done, output[-6000:]
        seconds, code = float(done.group(1)), int(done.group(2))
        assert code == 0 and "the goal is COMPLETED" in output, output[-6000:]
        assert seconds < LIMIT, seconds
        # Five supervisors started, and each stopped by itself (role complete), exit 0.
        for agent in ("planner-1", "coder-1", "coder-2", "code-reviewer-1", "code-reviewer-2"):
            assert f"started {agent} (pid" in output
            own = "".join(
                line for line in seen if f"{agent} |" in line or f"{agent} stopped" in line
            )
            assert f"{agent} stopped (exit 0)" in output, own[-6000:]
        keys = sorted((tmp_path / "keys").glob("*.key"))
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

    slug = (tmp_path / "keys" / "project").read_text().strip()
    # The cluster stopped with the command; started again, the finished goal is there.
    with embedded_cluster(tmp_path / "pg") as database, psycopg.connect(database) as db:
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
            cwd=ROOT,
            env={**env, "DATABASE_URL": database, "DJANGO_SETTINGS_MODULE": "liza_site.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert validate.stdout.strip() == "VALID", validate.stdout + validate.stderr
    print(f"\nscripted team under liza supervise: {seconds:.1f} s")
