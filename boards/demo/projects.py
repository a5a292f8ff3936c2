"""`liza_demo`: a ready-to-watch project built from seed 002's example blackboard.

The blackboard ships inside the product (`boards/demo/.liza/`), a copy of the seed-002-valid
test fixture; its timestamps are moved forward so that its leases are live today.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from agents.models import Agent
from agents.services import agent_create, agent_create_with_key, agent_key_issue
from boards.coordination.models.projects import Membership, Project
from boards.coordination.models.tasks import Task
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.goals import goal_create
from boards.coordination.services.projects import membership_set, project_create
from boards.interop.importing import import_project
from boards.interop.invariants import reference_time
from boards.interop.reading import read_liza_dir
from boards.interop.schema import TIMESTAMP_KEYS
from boards.protocol import format_timestamp, parse_timestamp

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
DEMO_NAME = "Liza Board demo"
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "liza-admin"
DEMO_AGENT_ID = "coder-4"
DEMO_AGENT_ROLE = "coder"


@dataclass(frozen=True)
class DemoResult:
    project: Project
    imported: bool  # False when the project already existed and was kept as it is
    tasks: int
    admin: AbstractBaseUser
    agent: Agent
    agent_key: str  # shown once


def shift_timestamps(state: Any, log: Any, delta: timedelta) -> tuple[Any, Any]:
    """Copies of `state` and `log` with every timestamp moved by `delta`.

    YAML datetimes are shifted wherever they are; strings only under the keys seed 002 uses for
    timestamps (history's quoted `time: "..."`), so ids such as `task-1-retry` stay untouched.
    """
    return _shift(state, delta, None), _shift(log, delta, None)


def _shift(value: Any, delta: timedelta, key: str | None) -> Any:
    if isinstance(value, datetime):
        return value + delta
    if isinstance(value, dict):
        return {k: _shift(v, delta, k if isinstance(k, str) else None) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(item, delta, None) for item in value]
    if isinstance(value, str) and key in TIMESTAMP_KEYS:
        try:
            return format_timestamp(parse_timestamp(value) + delta)
        except (ValueError, OverflowError):
            return value
    return value


def demo_build(*, slug: str, now: datetime) -> DemoResult:
    """The demo project, an admin login and a fresh key for a coder. Safe to run again: an
    existing project is kept as it is, and only the credentials are (re)issued."""
    project = Project.objects.filter(slug=slug).first()
    imported = project is None
    if project is None:
        project = _import_demo(slug=slug, now=now)
    admin = _demo_admin()
    membership_set(project=project, user=admin, role=Membership.Role.ADMIN, actor=SYSTEM, now=now)
    agent = Agent.objects.filter(project=project, agent_id=DEMO_AGENT_ID).first()
    if agent is None:
        # Created, not registered: the person trying the key registers it themselves (a
        # registration here would hold the id with a live lease and their first register
        # would be a collision).
        agent = agent_create(
            project=project, actor=admin, agent_id=DEMO_AGENT_ID, role=DEMO_AGENT_ROLE, now=now
        )
    _, plain = agent_key_issue(agent=agent, actor=admin, now=now, label="liza_demo")
    return DemoResult(
        project=project,
        imported=imported,
        tasks=Task.objects.filter(project=project).count(),
        admin=admin,
        agent=agent,
        agent_key=plain,
    )


def _import_demo(*, slug: str, now: datetime) -> Project:
    state, log = read_liza_dir(DEMO_DIR)
    # Whole seconds, so shifted timestamps keep seed 002's format exactly.
    delta = timedelta(seconds=int((now - reference_time(state)).total_seconds()))
    state, log = shift_timestamps(state, log, delta)
    result = import_project(slug=slug, name=DEMO_NAME, state=state, log=log, lenient=False, now=now)
    return result.project


def _demo_admin() -> AbstractBaseUser:
    users = get_user_model().objects
    admin = users.filter(**{users.model.USERNAME_FIELD: ADMIN_USERNAME}).first()
    if admin is None:
        admin = users.model(**{users.model.USERNAME_FIELD: ADMIN_USERNAME})
    admin.is_staff = True
    admin.is_superuser = True
    admin.is_active = True
    admin.set_password(ADMIN_PASSWORD)
    admin.save()
    return admin


TEAM_AGENTS = (
    ("planner-1", "planner"),
    ("coder-1", "coder"),
    ("coder-2", "coder"),
    ("code-reviewer-1", "code_reviewer"),
    ("code-reviewer-2", "code_reviewer"),
)
TEAM_NAME = "Liza Board team demo"
# The scripted planner's plan is written for this goal (agents/client/demo_agents/planner.py).
TEAM_GOAL = "Write the demo guide: an introduction, a usage page, a glossary and an FAQ"


@dataclass(frozen=True)
class TeamResult:
    project: Project
    admin: AbstractBaseUser
    keys: dict[str, str]  # agent id -> key (shown once)


def team_build(*, slug: str, now: datetime) -> TeamResult:
    """An empty project for `liza demo-team`: an open goal and no task (its planner plans it),
    the admin login, and a planner, two coders and two reviewers, each with a key. (Without a
    goal IN_PROGRESS the planner's `/work` says its role is complete.)

    The project is always new: `slug` if free, else the first free `slug-N`, so every run of
    the team starts from an empty board (a finished team's board stays to be looked at)."""
    candidate, number = slug, 1
    while Project.objects.filter(slug=candidate).exists():
        number += 1
        candidate = f"{slug}-{number}"
    project = project_create(slug=candidate, name=TEAM_NAME, now=now)
    admin = _demo_admin()
    membership_set(project=project, user=admin, role=Membership.Role.ADMIN, actor=SYSTEM, now=now)
    keys = {}
    for agent_id, role in TEAM_AGENTS:
        _, (_, plain) = agent_create_with_key(
            project=project, actor=admin, role=role, agent_id=agent_id, now=now, label="demo-team"
        )
        keys[agent_id] = plain
    goal_create(project=project, actor=admin, description=TEAM_GOAL, spec_ref="README.md", now=now)
    return TeamResult(project=project, admin=admin, keys=keys)
