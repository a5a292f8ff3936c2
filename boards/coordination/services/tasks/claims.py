"""Claims (seed 000 "Transition Requirements"; SPEC §5.1, §6): a named claim and claim-next
under `FOR UPDATE SKIP LOCKED`.

The services check here who may claim what (the role, stop work, budgets, one task at a time,
availability, the limits, a named task's state), each rule asked where it lives; the pick and
every write of the claim are SQL, called in one statement by `claim_call.claim_sql`
(`liza_claim_v3`, boards migration 0031, which also reads what claim-next's checks need),
whose refusals are raised here. tests/coordination/services/tasks/test_claims_sql.py holds it equal
to the Python the claim kinds were before (`claim_oracle`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from django.db import transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.budgets import project_budgets, spent_subjects
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.limits import LimitRefusal, admission_refusal
from boards.coordination.selectors.tasks import (
    claim_next_queues,
    claimer_refusal,
    holder_task,
    retry_at,
    retry_waits,
    waiting_on,
)
from boards.coordination.services.actors import CODER
from boards.coordination.services.admission import admission_lock, admit, raise_limit, wip_full
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    agents_only,
    fenced,
    refuse_if_stopped,
    refuse_if_superseded,
    refuse_if_unavailable,
    require_role,
)
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.edges import require_task_status
from boards.coordination.services.locking import lock_agent, lock_task
from boards.coordination.services.tasks.claim_call import Claimed, claim_sql, noted
from boards.errors import Conflict, ProtocolValidationError
from boards.protocol import TaskStatus


def _check_claimer(
    project: Project, agent: Agent, now: datetime, *, task: Task, config: ProjectConfig
) -> None:
    """Who may claim the named `task` now: the role, stop work, budgets, one task at a time
    (`claimer_refusal`, the rule `/work` reads), on the claim's locked agent."""
    require_role(Attempt(project, agent, "task_claim", now), agent_roles=CODER, task=task)
    refuse_if_stopped(project, actor=agent, action="claim", now=now, task=task)
    held = holder_task(project_id=agent.project_id, agent_id=agent.agent_id)
    # Issue 24: a spent budget (project, agent, sprint, goal, the task's) refuses the claim.
    refuse_if_over_budget(project, agent=agent, action="claim", now=now, task=task)
    _refuse_claimer(project, agent, held, task=task, now=now, config=config)


def _refuse_claimer(
    project: Project,
    agent: Agent,
    held: Task | None,
    *,
    task: Task | None,
    now: datetime,
    config: ProjectConfig,
) -> None:
    """One task at a time (`claimer_refusal`), refused naming what the coder holds."""
    refused = claimer_refusal(agent, held, task=task, now=now, config=config)
    if refused is not None:
        raise Attempt(project=project, actor=agent, action="claim", now=now).refuse(
            Conflict(refused, {} if held is None else {"task": held.key}), task=task
        )


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
    task: Task,
    agent: Agent,
    *,
    now: datetime,
    config: ProjectConfig,
    generation: int | None = None,
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
    # A superseded session's process claims nothing: asked on the locked row, so a
    # registration that committed while this waited is seen (`superseded_refusal`).
    refuse_if_superseded(agent, generation, action="claim", now=now, task=task)
    _check_claimer(project, agent, now, task=task, config=config)
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
@fenced
@records_refusals
def task_claim(
    *,
    task: Task,
    agent: Agent,
    now: datetime,
    worktree: str = "",
    base_commit: str = "",
    generation: int | None = None,
) -> Task:
    """Claim a named task: UNCLAIMED (deps MERGED), own/orphaned REJECTED, INTEGRATION_FAILED,
    or a CLAIMED task whose lease lapsed more than lease_grace ago."""
    project = task.project
    worktree = clean_text(worktree, "worktree", required=False, max_length=500)
    base_commit = clean_text(base_commit, "base_commit", required=False, max_length=64)
    config = config_of(project)
    blocked = False
    with transaction.atomic():
        agent, task = checked_named_claim(
            task, agent, now=now, config=config, generation=generation
        )
        answer = claim_sql(
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
        noted(answer)
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


def _raise_refusal(answer: Claimed, *, project: Project, agent: Agent, now: datetime) -> None:
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
@fenced
@records_refusals
def task_claim_next(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    worktree: str = "",
    base_commit: str = "",
    generation: int | None = None,
) -> Task | None:
    """The best claimable task under `FOR UPDATE SKIP LOCKED`, or None when there is none.

    Concurrent claimers never see the same row: a row another transaction has locked is
    skipped, not waited for (SPEC §6).

    One statement for a coder that holds nothing in a project without budgets (issue 26):
    `liza_claim_v3` locks the agent and claims, the sprint and the agent's failures read beside
    it; the checks then run in their order on what it read, and the first refusal rolls the
    claim back. Otherwise it answers `check` before any write, and the checks that need what
    the coder holds and the budgets run before a second call (`_checked_next`).
    """
    worktree = clean_text(worktree, "worktree", required=False, max_length=500)
    base_commit = clean_text(base_commit, "base_commit", required=False, max_length=64)
    config = config_of(project)
    call = functools.partial(
        claim_sql, now=now, config=config, worktree=worktree, base_commit=base_commit
    )
    with transaction.atomic():
        # Enforced limits (issue 24), read under the project row's lock (first in the lock
        # order, as in task_claim), refused in their turn below.
        over, full = _limits_read(project=project, config=config, agent=agent, now=now)
        # Where a coder holding nothing looks: the same rule as `/work`'s.
        queues, _ = claim_next_queues(None, column_full=bool(full))
        answer = call(agent, mode="next", queues=queues, gate=True, reads=True)
        agent = answer.agent
        agent.project = project  # already loaded: spare the refusals a query
        require_role(Attempt(project, agent, "task_claim_next", now), agent_roles=CODER)
        # On the agent row the call locked (not the key cache's copy): a claim it made is
        # rolled back.
        refuse_if_superseded(agent, generation, action="claim", now=now)
        refuse_if_stopped(project, actor=agent, action="claim", now=now, sprint=answer.sprint)
        if answer.outcome == "check":
            answer = _checked_next(
                project, agent, answer, now=now, config=config, full=full, call=call
            )
            if answer.outcome == "resumed":
                return answer.task
        else:
            _refuse_claimer(project, agent, None, task=None, now=now, config=config)
            refuse_if_unavailable(agent, action="claim", now=now, failures=answer.failures)
        if over:
            raise_limit(over, project=project, agent=agent, action="claim", now=now)
        _raise_refusal(answer, project=project, agent=agent, now=now)
        noted(answer)
        if answer.outcome == "claimed":
            answer.task.project = project
            return answer.task
        if full:
            raise_limit(full, project=project, agent=agent, action="claim", now=now)
    return None


def _limits_read(
    *, project: Project, config: ProjectConfig, agent: Agent, now: datetime
) -> tuple[LimitRefusal | None, LimitRefusal | None]:
    """With an enforced limit, the project row locked and the two refusals claim-next may
    meet: agents at work (`admit`'s), and the CLAIMED column full (only a task already in it,
    a retry or a takeover, may then be claimed). Nothing read without a limit."""
    if not admission_lock(project=project, config=config):
        return None, None
    over = admission_refusal(
        project=project, config=config, role=agent.role, now=now, into_column=False
    )
    return over, wip_full(project=project, config=config, agent=agent, now=now)


def _checked_next(
    project: Project,
    agent: Agent,
    first: Claimed,
    *,
    now: datetime,
    config: ProjectConfig,
    full: LimitRefusal | None,
    call: Callable[..., Claimed],
) -> Claimed:
    """Claim-next of a coder holding a task (`first.task`), or in a project with budgets: the
    checks that need them, in their order, then the call without the gate. Its own live claim
    is handed back (outcome `resumed`)."""
    held = first.task
    # Read once for both questions: whether a spent budget refuses the claim, and which tasks
    # the pick passes over because their own or their goal's is spent.
    budgets = project_budgets(project=project) if first.has_budgets else []
    # Issue 24: a spent budget (project, agent, sprint, goal, the held task's) refuses it.
    refuse_if_over_budget(project, agent=agent, action="claim", now=now, task=held, budgets=budgets)
    _refuse_claimer(project, agent, held, task=None, now=now, config=config)
    if (
        held is not None
        and held.status == TaskStatus.CLAIMED
        and lease_alive(held.lease_expires, now, config)
    ):
        # Its own live claim (e.g. handed off): go on with it.
        resumed = call(agent, mode="resume", task=held).task
        resumed.project = project
        return replace(first, outcome="resumed", task=resumed)
    if held is None or held.status != TaskStatus.CLAIMED:
        # Anything but its own dead claim is new work, which an agent in error or overloaded
        # does not get. Its own dead claim is the task's retry: an agent in error still gets
        # it, so the expiry past the schedule blocks the task however close the expiries were
        # (decisions.md "Retries and agent in error").
        refuse_if_unavailable(agent, action="claim", now=now, failures=first.failures)
    queues, only = claim_next_queues(held, column_full=bool(full))
    return call(
        agent,
        mode="next",
        task=only,
        queues=queues,
        spent=spent_subjects(project=project, budgets=budgets),
    )
