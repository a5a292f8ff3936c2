"""Agent reads: identities of a project and the key a bearer token presents."""

from __future__ import annotations

import hmac
from datetime import datetime, timedelta
from functools import cache

from django.db import connection
from django.db.models import F, QuerySet, Sum

from agents.models import Agent, AgentKey, Run, RunState
from boards.coordination import rows
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.reviews import review_live
from boards.coordination.selectors.tasks import holder_task
from boards.protocol import Action, TaskStatus


def agent_get(*, project: Project, agent_id: str) -> Agent:
    return in_project(
        Agent.objects.select_related("current_task"), project, what="agent", agent_id=agent_id
    )


def agent_list(*, project: Project) -> QuerySet[Agent]:
    return Agent.objects.filter(project=project).select_related("current_task")


def leave_refusal(*, agent: Agent, now: datetime, config: ProjectConfig) -> str | None:
    """Why `agent`'s session may not end now (`agent_leave`), or None when it may: it still
    holds work under a live lease, which its leaving would strand until the lease lapsed — a
    coder's task claim it has not handed off, a reviewer's review claim it has not given back.
    Read under the agent's lock: its own claims lock the agent first."""
    held = holder_task(project_id=agent.project_id, agent_id=agent.agent_id)
    if (
        held is not None
        and held.status == TaskStatus.CLAIMED
        and not held.handoff_pending
        and lease_alive(held.lease_expires, now, config)
    ):
        return f"{agent.agent_id} holds {held.key} under a live lease: hand it off first"
    reviews = Review.objects.filter(
        project_id=agent.project_id, reviewer=agent.agent_id, closed_at__isnull=True, verdict=""
    ).select_related("task")
    for review in reviews.order_by("id"):
        if review_live(review, now, config):
            return (
                f"{agent.agent_id} holds the review of {review.task.key} under a live lease: "
                "give it back first (review release)"
            )
    return None


def key_get(*, project: Project, prefix: str) -> AgentKey:
    return in_project(AgentKey.objects.select_related("agent"), project, what="key", prefix=prefix)


# Where the key's hash sits in an `agent_key_row` (the key's columns come first).
KEY_HASH_AT = [f.name for f in AgentKey._meta.concrete_fields].index("key_hash")


def agent_key_lookup(*, plain: str) -> AgentKey | None:
    """The active key for a presented bearer token, or None (unknown, malformed or revoked)."""
    prefix = key_prefix(plain)
    row = agent_key_row(prefix=prefix) if prefix is not None else None
    if row is None or not hmac.compare_digest(row[KEY_HASH_AT], AgentKey.hash(plain)):
        return None
    return agent_key_from_row(row)


def key_prefix(plain: str) -> str | None:
    """The prefix of a well-formed bearer token (`liza_<prefix>_<secret>`), else None."""
    parts = plain.split("_", 2)
    if len(parts) != 3 or parts[0] != "liza" or len(parts[1]) != AgentKey.PREFIX_LEN:
        return None
    return parts[1]


def agent_key_row(*, prefix: str) -> tuple | None:
    """The unrevoked key of `prefix` with its agent, the agent's project and the project's
    config (every agent request needs all four, ProjectView) as one row of one statement: the
    ORM's `select_related("agent", "agent__project", "agent__project__config").first()`, written
    once (boards.coordination.rows: it runs on every request an agent makes). A plain tuple, so
    that agents.keycache can keep it and build fresh rows from it for every request."""
    with connection.cursor() as cursor:
        cursor.execute(_key_sql(), [prefix])
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def agent_key_from_row(row: tuple) -> AgentKey:
    """The key of an `agent_key_row`, its agent, project and config attached (new objects)."""
    parts, start = [], 0
    for model in (AgentKey, Agent, Project, ProjectConfig):
        parts.append(row[start : start + rows.width(model)])
        start += rows.width(model)
    key = rows.from_row(AgentKey, parts[0])
    agent = rows.from_row(Agent, parts[1])
    project = rows.from_row(Project, parts[2])
    # The config's key first: NULL when the LEFT JOIN found none.
    config = rows.from_row(ProjectConfig, parts[3]) if parts[3][0] is not None else None
    key.agent, agent.project = agent, project
    Project.config.related.set_cached_value(project, config)  # None: the project has none yet
    if config is not None:
        config.project = project
    return key


@cache
def _key_sql() -> str:
    q = connection.ops.quote_name

    def table(model) -> str:
        return q(model._meta.db_table)

    def column(model, name: str) -> str:
        return q(model._meta.get_field(name).column)

    pk = q("id")
    models = {"k": AgentKey, "a": Agent, "p": Project, "c": ProjectConfig}
    return (
        f"SELECT {', '.join(rows.select_list(m, alias) for alias, m in models.items())} "
        f"FROM {table(AgentKey)} k "
        f"JOIN {table(Agent)} a ON a.{pk} = k.{column(AgentKey, 'agent')} "
        f"JOIN {table(Project)} p ON p.{pk} = a.{column(Agent, 'project')} "
        f"LEFT JOIN {table(ProjectConfig)} c ON c.{column(ProjectConfig, 'project')} = p.{pk} "
        f"WHERE k.{column(AgentKey, 'prefix')} = %s AND k.{column(AgentKey, 'revoked_at')} IS NULL "
        f"ORDER BY k.{pk} LIMIT 1"
    )


def run_list(
    *, project: Project, task: str | None = None, agent_id: str | None = None
) -> QuerySet[Run]:
    """The project's runs, newest first (a task's, an agent's)."""
    rows = Run.objects.filter(project=project).select_related("agent", "task")
    if task:
        rows = rows.filter(task__key=task)
    if agent_id:
        rows = rows.filter(agent__agent_id=agent_id)
    return rows.order_by("-started", "-id")


def with_cost(runs: QuerySet[Run]) -> QuerySet[Run]:
    """Runs with what each cost so far (issue 24): `cost_usd` and `tokens`, None before any
    usage was reported; summed in the same query."""
    return runs.annotate(
        cost_usd=Sum("usage__cost_usd"),
        tokens=Sum(
            F("usage__input_tokens")
            + F("usage__output_tokens")
            + F("usage__cache_read_tokens")
            + F("usage__cache_write_tokens")
        ),
    )


def run_get(*, project: Project, run_id: int | str) -> Run:
    return in_project(Run.objects.select_related("agent", "task"), project, pk=run_id)


# An agent's events that are liveness, not work: its registration, its crash reports, a review
# lease extended, a handoff read back (heartbeats write no event at all).
NOT_PROGRESS = (
    Action.REGISTERED,
    Action.RESTARTED,
    Action.DEREGISTERED,
    Action.AGENT_CRASHED,
    Action.REVIEW_EXTENDED,
    Action.HANDOFF_READ,
)


def run_made_progress(*, run: Run, now: datetime) -> bool:
    """Whether the run's session moved the protocol: an applied event of its agent from the
    run's start to `now` (a submit, a verdict, a block, a handoff, a task planned ...), not a
    liveness one (NOT_PROGRESS). The supervisor's claim comes before the run starts and its
    merges after it ends."""
    return (
        Event.objects.filter(
            project_id=run.project_id,
            actor_id=run.agent.agent_id,
            outcome=Event.Outcome.APPLIED,
            timestamp__gte=run.started,
            timestamp__lte=now,
        )
        .exclude(action__in=NOT_PROGRESS)
        .exists()
    )


def recent_crashes(*, agent: Agent, window: timedelta, now: datetime) -> list[Run]:
    """The runs of `agent` that crashed (exit neither 0 nor 42, not stopped by the supervisor,
    no progress in the session) and ended within `window` before `now`, newest first: a crash
    loop is three in five minutes (seed 000 MAM contract), the rule `liza supervise` stops on
    and the watcher reads."""
    rows = (
        Run.objects.filter(
            agent=agent, ended__gt=now - window, ended__lte=now, stopped_by="", progress=False
        )
        .exclude(exit_code__in=(0, 42))
        .exclude(exit_code__isnull=True)
        .select_related("task")
        .order_by("-ended", "-id")
    )
    return list(rows)


def task_stalls(*, task) -> int:
    """How many runs on `task` its supervisors stopped as stalled (the progress watchdog): its
    `max_stalls`-th blocks it."""
    return Run.objects.filter(task=task, state=RunState.STALLED).count()
