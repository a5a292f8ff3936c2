"""Claims (seed 000 "Transition Requirements"; SPEC §5.1, §6): a named claim and claim-next
under `FOR UPDATE SKIP LOCKED`.

The services check here who may claim what (reads: the role, stop work, budgets, one task at a
time, availability, the limits, a named task's state); the pick and every write of the claim
are `liza_claim_v2` (boards migration 0030), called in one statement by `_claim_sql`, whose
refusals are raised here. tests/coordination/services/tasks/test_claims_sql.py holds it equal
to the Python the claim kinds were before (`claim_oracle`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import connection, transaction

from agents.models import Agent, Budget
from boards import protocol as p
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.alerts import task_alerts_ended_by
from boards.coordination.selectors.budgets import project_budgets, spent_subjects
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.limits import limits_enforced
from boards.coordination.selectors.snapshots import SNAPSHOT_FIELDS
from boards.coordination.selectors.tasks import (
    CLAIM_QUEUES,
    claim_next_queues,
    claimer_refusal,
    holder_task,
    retry_at,
    retry_waits,
    waiting_on,
)
from boards.coordination.services.actors import CODER, SYSTEM
from boards.coordination.services.admission import admission_lock, admit, raise_limit, wip_full
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    agents_only,
    refuse_if_stopped,
    refuse_if_unavailable,
    require_role,
)
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.edges import require_task_status
from boards.coordination.services.locking import lock_agent, lock_task
from boards.coordination.services.tasks.limits import LIMIT_QUESTIONS
from boards.errors import (
    Conflict,
    ProtocolValidationError,
)
from boards.protocol import AGENT_EDGES, AgentStatus, TaskStatus
from liza_site import metrics

# -- the claim's writes: `liza_claim_v2` (boards migration 0030) ---------------------------------


@dataclass(frozen=True)
class _Claimed:
    """What `liza_claim_v2` answered: its outcome (`claimed`, `none`, `blocked`, or the refusal
    `busy`, `reworked`, `base_commit`), the task (as prepared, for a refusal's event), the
    claimer's row as written, the events written and the agents it released."""

    outcome: str
    task: Task | None
    agent: Agent
    events: list[dict]
    released: list[int]


def _claim_sql(
    agent: Agent,
    *,
    mode: str,
    task: Task | None = None,
    queues: list[int] | None = None,
    now: datetime,
    config: ProjectConfig,
    worktree: str = "",
    base_commit: str = "",
    spent: tuple[list[int], list[int]] = ([], []),
) -> _Claimed:
    """Call `liza_claim_v2` for the locked `agent` in one statement (`mode`: `next` walks
    `queues`, limited to `task` when given; `named` claims `task`, locked and checked; `resume`
    hands back its own live claim `task`), then note what open boards redraw and count the
    events, as `audit.record_event` does for the events it writes."""
    with connection.cursor() as cursor:
        cursor.execute(
            _call_sql(),
            [
                agent.pk,
                mode,
                task.pk if task is not None else None,
                queues or [],
                now,
                config.lease_duration,
                config.lease_grace,
                [int(s) for s in config.retry_backoff],
                worktree,
                base_commit,
                *spent,
                _rules(),
            ],
        )
        row = cursor.fetchone()
    cut = rows.width(Task) + 1
    task_values, agent_values = row[1:cut], row[cut : cut + rows.width(Agent)]
    events, released = row[-2], row[-1]
    if isinstance(events, str):
        events = json.loads(events)
    answered = _Claimed(
        outcome=row[0],
        task=None if task_values[0] is None else rows.from_row(Task, task_values),
        agent=rows.from_row(Agent, agent_values),
        events=events,
        released=released,
    )
    project_id = agent.project_id
    for event in answered.events:
        # What `record_event` notes: the task, the acting agent, the header's metrics (every
        # event here moves a task), the activity feed; and counts once it commits.
        outbox.changed(project_id, outbox.TASK, event["task"])
        if event["actor"] == Event.ActorKind.AGENT:
            outbox.changed(project_id, outbox.AGENT, agent.pk)
        outbox.changed(project_id, outbox.SPRINT, project_id)
        outbox.changed(project_id, outbox.EVENT, event["id"])
        transaction.on_commit(
            functools.partial(
                metrics.event_recorded,
                event["action"],
                str(Event.Outcome.APPLIED),
                None,
                event["from"],
                event["to"],
            )
        )
    for released_pk in answered.released:
        outbox.changed(project_id, outbox.AGENT, released_pk)  # as `release_holder`
    return answered


@cache
def _call_sql() -> str:
    return (
        f"SELECT c.outcome, {rows.select_list(Task, '(c.task_row)')}, "
        f"{rows.select_list(Agent, '(c.agent_row)')}, c.events, c.released "
        "FROM liza_claim_v2(%s::bigint, %s::text, %s::bigint, %s::integer[], %s::timestamptz, "
        "%s::integer, %s::integer, %s::integer[], %s::text, %s::text, %s::bigint[], "
        "%s::bigint[], %s::jsonb) c"
    )


def _agent_edge_sources(*names: str) -> list[str]:
    return sorted({source for (source, _), (name, _) in AGENT_EDGES.items() if name in names})


@cache
def _rules() -> str:
    """The tables `liza_claim_v2` follows that live in Python, as its argument: so that each
    stays the one place that names it."""
    works_from = {
        *_agent_edge_sources(Agent.start_work.__name__, Agent.resume_work.__name__),
        # `ready` (STARTING → IDLE), then `start_work`; WORKING stays WORKING (a coder that
        # lost its previous task goes straight on).
        *_agent_edge_sources(Agent.ready.__name__),
        AgentStatus.WORKING,
    }
    return json.dumps(
        {
            "queue_states": list(CLAIM_QUEUES),
            "snapshot": list(SNAPSHOT_FIELDS),
            "ended": {s: task_alerts_ended_by(s) for s in (TaskStatus.CLAIMED, TaskStatus.BLOCKED)},
            "questions": {
                limit: LIMIT_QUESTIONS[limit]
                for limit in ("retry_exhausted", "hypothesis_exhaustion")
            },
            "system": SYSTEM.name,
            "coder": Agent.Role.CODER,
            "works_from": sorted(works_from),
            "stop_from": _agent_edge_sources(Agent.stop_work.__name__),
        }
    )


def _check_claimer(
    project: Project,
    agent: Agent,
    now: datetime,
    *,
    task: Task | None,
    config: ProjectConfig,
    service: str,
    budgets: list[Budget] | None = None,
) -> Task | None:
    """Who may claim now (`claimer_refusal`, the rule `/work` reads). For claim-next (`task`
    None), returns what the coder already holds and goes on with: its own REJECTED task, or its
    own live CLAIMED task. `service` names the attempt of a role refusal (the claim's service:
    its locked agent is the one checked). `budgets`: the project's, when the caller has read
    them."""
    require_role(Attempt(project, agent, service, now), agent_roles=CODER, task=task)
    refuse_if_stopped(project, actor=agent, action="claim", now=now, task=task)
    held = holder_task(project_id=agent.project_id, agent_id=agent.agent_id)
    # Issue 24: a spent budget (project, agent, sprint, goal, the task's) refuses the claim.
    refuse_if_over_budget(
        project, agent=agent, action="claim", now=now, task=task or held, budgets=budgets
    )
    refused = claimer_refusal(agent, held, task=task, now=now, config=config)
    if refused is not None:
        raise Attempt(project=project, actor=agent, action="claim", now=now).refuse(
            Conflict(refused, {} if held is None else {"task": held.key}), task=task
        )
    return held if task is None else None


def _refuse_unclaimable(
    task: Task,
    agent: Agent,
    *,
    now: datetime,
    config: ProjectConfig,
    conflict: Callable[..., Conflict],
) -> None:
    """A named claim's task, row-locked, must be claimable by `agent` now: not suspended, not
    of a terminal goal, CLAIMED only under a dead lease past its retry backoff (else UNCLAIMED,
    REJECTED or INTEGRATION_FAILED), its dependencies MERGED."""
    if task.is_suspended:
        raise conflict(f"{task.key} is suspended: {task.suspended_reason}", suspended=True)
    if task.goal_id is not None and task.goal.status in p.TERMINAL_GOAL_STATES:
        raise conflict(
            f"{task.key} belongs to goal {task.goal.goal_id}, which is {task.goal.status}",
            goal=task.goal.goal_id,
        )
    if task.status == TaskStatus.CLAIMED:
        if lease_alive(task.lease_expires, now, config) or task.handoff_pending:
            raise conflict(f"{task.key} is already claimed by {task.assigned_to}")
        if retry_waits(task, now, config):
            at = p.format_timestamp(retry_at(task, config))
            raise conflict(
                f"{task.key}: its lease expired; claimable again after {at} (retry backoff)",
                retry_at=at,
            )
    else:
        require_task_status(
            task,
            [TaskStatus.UNCLAIMED, TaskStatus.REJECTED, TaskStatus.INTEGRATION_FAILED],
            to=TaskStatus.CLAIMED,
            attempt=Attempt(task.project, agent, "claim", now),
        )
    if task.status in (TaskStatus.UNCLAIMED, TaskStatus.CLAIMED):
        waiting = waiting_on(task)
        if waiting:
            raise conflict(f"{task.key} waits on {', '.join(waiting)}", waiting_on=waiting)


def claim_conflict(task: Task, agent: Agent, now: datetime) -> Callable[..., Conflict]:
    """A named claim's refusal of `task` (409, the task named in its details, recorded)."""

    def conflict(message: str, **details) -> Conflict:
        return Attempt.on(task, actor=agent, action="claim", now=now).refuse(
            Conflict(message, {"task": task.key, **details}),
            task=task,
            to_status=TaskStatus.CLAIMED,
        )

    return conflict


def checked_named_claim(
    task: Task, agent: Agent, *, now: datetime, config: ProjectConfig
) -> tuple[Agent, Task]:
    """Inside a named claim's transaction: its rows locked in the lock order and every check
    that comes before its writes (who may claim, availability, the limits, the task's state);
    the agent and the task as locked. (The tests' reference model runs the same checks.)"""
    project = task.project
    # With an enforced limit, the project row first: claims are counted one at a time.
    admission_lock(project=project, config=config)
    # The agent row first: a second claim by the same coder waits here, then sees the
    # task the first one took (one task at a time, seed 000).
    agent = lock_agent(agent)
    _check_claimer(project, agent, now, task=task, config=config, service="task_claim")
    if not (task.status == TaskStatus.CLAIMED and task.assigned_to == agent.agent_id):
        # Its own dead claim is the task's retry (seed 003), not new work: decisions.md
        # "Retries and agent in error".
        refuse_if_unavailable(agent, action="claim", now=now, task=task)
    admit(
        project=project,
        config=config,
        agent=agent,
        action="claim",
        now=now,
        into_column=task.status != TaskStatus.CLAIMED,  # a takeover adds no card
        task=task,
    )
    task = lock_task(task)
    task.project = project  # already loaded: spare the refusals a query
    _refuse_unclaimable(
        task, agent, now=now, config=config, conflict=claim_conflict(task, agent, now)
    )
    return agent, task


@agents_only
@records_refusals
def task_claim(
    *, task: Task, agent: Agent, now: datetime, worktree: str = "", base_commit: str = ""
) -> Task:
    """Claim a named task: UNCLAIMED (deps MERGED), own/orphaned REJECTED, INTEGRATION_FAILED,
    or a CLAIMED task whose lease lapsed more than lease_grace ago."""
    project = task.project
    worktree = clean_text(worktree, "worktree", required=False, max_length=500)
    base_commit = clean_text(base_commit, "base_commit", required=False, max_length=64)
    config = config_of(project)
    blocked = False
    with transaction.atomic():
        agent, task = checked_named_claim(task, agent, now=now, config=config)
        answer = _claim_sql(
            agent,
            mode="named",
            task=task,
            now=now,
            config=config,
            worktree=worktree,
            base_commit=base_commit,
        )
        if answer.outcome == "busy":
            raise claim_conflict(task, agent, now)(
                f"{task.key}: its holder {task.assigned_to} is active right now; try again"
            )
        _raise_refusal(answer, project=project, agent=agent, now=now)
        blocked = answer.outcome == "blocked"
        claimed = answer.task
        claimed.project = project
    if blocked:
        # The limit's block is committed; the caller still did not get the task.
        raise Conflict(
            f"{task.key} was blocked: {claimed.blocked_reason}",
            {"task": task.key, "status": TaskStatus.BLOCKED},
        )
    return claimed


def _raise_refusal(answer: _Claimed, *, project: Project, agent: Agent, now: datetime) -> None:
    """The refusals `liza_claim_v2` answers, raised (the transaction then rolls back), each
    naming the task as the claim had prepared it."""
    task = answer.task
    if answer.outcome == "reworked":
        # Another coder may take a REJECTED task only once its coder's lease is dead.
        raise Attempt(project=project, actor=agent, action="claim", now=now).refuse(
            Conflict(f"{task.key} is being reworked by {task.assigned_to}", {"task": task.key}),
            task=task,
            to_status=TaskStatus.CLAIMED,
        )
    if answer.outcome == "base_commit":
        raise Attempt(project, agent, "claim", now).refuse(
            ProtocolValidationError("base_commit", "integration HEAD at claim time is required"),
            task=task,
            to_status=TaskStatus.CLAIMED,
        )


@agents_only
@records_refusals
def task_claim_next(
    *, project: Project, agent: Agent, now: datetime, worktree: str = "", base_commit: str = ""
) -> Task | None:
    """The best claimable task under `FOR UPDATE SKIP LOCKED`, or None when there is none.

    Concurrent claimers never see the same row: a row another transaction has locked is
    skipped, not waited for (SPEC §6).
    """
    worktree = clean_text(worktree, "worktree", required=False, max_length=500)
    base_commit = clean_text(base_commit, "base_commit", required=False, max_length=64)
    config = config_of(project)
    with transaction.atomic():
        admission_lock(project=project, config=config)  # as in task_claim
        agent = lock_agent(agent)  # before the holder check, as in task_claim
        # Read once for both questions: whether a spent budget refuses the claim, and which
        # tasks the pick passes over because their own or their goal's is spent.
        budgets = project_budgets(project=project)
        held = _check_claimer(
            project,
            agent,
            now,
            task=None,
            config=config,
            service="task_claim_next",
            budgets=budgets,
        )
        if (
            held is not None
            and held.status == TaskStatus.CLAIMED
            and lease_alive(held.lease_expires, now, config)
        ):
            # Its own live claim (e.g. handed off): go on with it.
            held = _claim_sql(agent, mode="resume", task=held, now=now, config=config).task
            held.project = project
            return held
        if held is None or held.status != TaskStatus.CLAIMED:
            # Anything but its own dead claim is new work, which an agent in error or
            # overloaded does not get. Its own dead claim is the task's retry: an agent in error
            # still gets it, so the expiry past the schedule blocks the task however close the
            # expiries were (decisions.md "Retries and agent in error").
            refuse_if_unavailable(agent, action="claim", now=now)
        # Enforced limits (issue 24): agents at work; with the CLAIMED column full, only a task
        # already in it (a retry, a takeover) may be claimed.
        admit(
            project=project, config=config, agent=agent, action="claim", now=now, into_column=False
        )
        full = limits_enforced(config) and wip_full(
            project=project, config=config, agent=agent, now=now
        )
        # Where to look: the same rule as `/work`'s.
        queues, only = claim_next_queues(held, column_full=bool(full))
        # The pick and the claim, passing over busy previous holders and blocked tasks.
        answer = _claim_sql(
            agent,
            mode="next",
            task=only,
            queues=queues,
            now=now,
            config=config,
            worktree=worktree,
            base_commit=base_commit,
            spent=spent_subjects(project=project, budgets=budgets),
        )
        _raise_refusal(answer, project=project, agent=agent, now=now)
        if answer.outcome == "claimed":
            answer.task.project = project
            return answer.task
        if full:
            raise_limit(full, project=project, agent=agent, action="claim", now=now)
    return None
