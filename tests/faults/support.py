"""What the fault tests share: the seed of their private PostgreSQL (tests/private_postgres.py)
— one project, two finalized tasks, a planner, two coders with keys, an admin user — and
`django_run`, which runs Django code in a fresh process against such a database (the test
process's own Django is bound to the suite's database)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.live_server import ROOT

SEED = """
import json
import django
django.setup()
from django.utils import timezone
from agents.services import agent_key_issue, agent_register
from boards.models import Task
from boards.coordination.services.goals import goal_create
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import project_create
from boards.coordination.services.tasks import task_create, task_finalize
from tests.factories import member

now = timezone.now()
project = project_create(slug="faults", name="Faults", now=now)
planner = agent_register(project=project, agent_id="planner-1", role="planner", now=now)
goal_create(project=project, actor=planner, description="Survive faults", now=now)
for key in ("task-1", "task-2"):
    task_create(project=project, actor=planner, key=key, description=key, spec_ref="s.md",
                done_when="done", now=now)
    task_finalize(task=Task.objects.get(project=project, key=key), actor=planner, now=now)
keys = {}
for agent_id in ("coder-1", "coder-2"):
    coder = agent_register(project=project, agent_id=agent_id, role="coder", now=now)
    keys[agent_id] = agent_key_issue(actor=SYSTEM, agent=coder, now=now)[1]
member(project, "admin", username="ada")
print(json.dumps(keys))
"""


def subprocess_env(database_url: str) -> dict[str, str]:
    """The environment of a Django process of ours on `database_url` (no Redis)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("REDIS_URL", None)
    return env


def django_run(database_url: str, code: str) -> str:
    """Run `code` (which calls django.setup()) in a new interpreter on `database_url`; its
    stdout, stripped. A failure shows the child's traceback."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=subprocess_env(database_url),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()
