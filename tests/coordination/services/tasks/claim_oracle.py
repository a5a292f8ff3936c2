"""Claim-next's and the named claim's writes as a small reference model (the oracle of
test_claims_sql.py).

This is the Python the service ran before issue 26 moved the pick and the claim's writes into
`liza_claim_v1` (boards migration 0029, now `liza_claim_v2`): the claim kinds (seed 000 "Transition
Requirements": fresh, rework, retry, takeover, integration fix; SPEC §5.1 failed_by and
hypothesis exhaustion; seed 003's retries and their exhaustion), the previous holder released,
the coder WORKING, the claim's event, and claim-next's pick (`FOR UPDATE SKIP LOCKED` over
`liza_claim_queue_v1`'s queues, passing over a task whose previous holder is busy). It runs on
the real rows through the ORM with the product's own helpers for what did not move (the
rules of claim-next's checks, asked one read at a time in their old order — `_check_claimer`
below —, the named claim's checks, admission, the limit block the watcher and the reviews
share, the event writer), so that the comparison is of what moved into SQL: the claim's rules
and, since migration 0031, the reads of claim-next's checks and the order they refuse in.
Product code never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import OperationalError, transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.limits import limits_enforced
from boards.coordination.selectors.tasks import (
    claim_candidates,
    claimer_refusal,
    holder_task,
    retry_exhausts,
)
from boards.coordination.services.actors import CODER
from boards.coordination.services.admission import admission_lock, admit, raise_limit, wip_full
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    refuse_if_stopped,
    refuse_if_unavailable,
    require_role,
)
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.edges import save_task, task_transition_run
from boards.coordination.services.locking import lock_agent, lock_task
from boards.coordination.services.tasks.claims import checked_named_claim, claim_conflict
from boards.coordination.services.tasks.holders import append_failed_by, release_holder
from boards.coordination.services.tasks.limits import crash_limit_block, limit_block
from boards.errors import Conflict, ProtocolValidationError
from boards.protocol import AgentStatus, TaskStatus


class HolderBusy(Exception):
    """The task's previous holder is in the middle of its own operation (a heartbeat)."""


def lock_previous_holder(project: Project, agent_id: str) -> Agent | None:
    """Lock the agent a claim takes the task from, without waiting for it.

    The claimer already holds the task row; a heartbeat locks its agent row and then its task.
    Waiting here for the old holder's row could deadlock with that heartbeat, so a busy holder
    makes the claimer pass on this task for now (its heartbeat is refused with lease_lost).
    (The product's is the `FOR UPDATE NOWAIT` of `liza_claim_v2` and `liza_review_claim_v1`;
    the review claim's reference model, `review_oracle`, uses this one too.)
    """
    try:
        with transaction.atomic():  # a savepoint: a refused NOWAIT leaves the claim usable
            return (
                Agent.objects.select_for_update(of=("self",), nowait=True)
                .filter(project=project, agent_id=agent_id)
                .first()
            )
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == "55P03":  # lock_not_available
            raise HolderBusy(agent_id) from exc
        raise


def takeover_exhausts(task: Task, agent_id: str) -> bool:
    """Taking `task` from its previous holder adds that holder to failed_by; when two distinct
    coders are then there, the claim blocks the task instead (hypothesis exhaustion, SPEC §5.1).
    (The product asks `liza_claim_limit_v1`, boards migration 0030.)"""
    previous = task.assigned_to
    if not previous or previous == agent_id:
        return False
    if task.status not in (TaskStatus.REJECTED, TaskStatus.CLAIMED):
        return False
    return len({*task.failed_by, previous}) >= 2


def limit_reason(task: Task, config: ProjectConfig, limit: str) -> str:
    """A limit block's reason as Python worded it before `liza_limit_reason_v1` (boards
    migration 0030), for the test that holds the SQL to it."""
    if limit == "review_deadlock":
        return (
            f"Review deadlock: {task.review_cycles_current} rejected review cycles "
            f"(max {task.effective_max_review_cycles(config)})"
        )
    if limit == "max_iterations":
        return (
            f"Max iterations: {task.iteration} iterations without approval "
            f"(max {task.effective_max_iterations(config)})"
        )
    if limit == "retry_exhausted":
        return (
            f"Retry exhausted: {task.crashes} lease expiries of {task.assigned_to} "
            f"(retries after {', '.join(f'{s} s' for s in config.retry_backoff)})"
        )
    return (
        f"Hypothesis exhaustion: {len(set(task.failed_by))} coders failed "
        f"({', '.join(task.failed_by)})"
    )


def _agent_works_on(agent: Agent, task: Task, now: datetime) -> None:
    """The coder now holds `task`: WORKING on it (from STARTING, IDLE or WAITING), its lease
    at least the task's. Also for a restarted session handed back its own live claim (a
    handed-off task): without it the agent would hold the task IDLE, and its next handoff
    could not free the identity (agent_handoff moves only a WORKING agent to HANDOFF)."""
    if agent.status == AgentStatus.STARTING:
        agent.ready()
    if agent.status == AgentStatus.WAITING:
        agent.resume_work()
    elif agent.status == AgentStatus.IDLE:
        agent.start_work()
    # WORKING stays WORKING: the coder lost its previous task and goes straight on.
    agent.current_task = task
    agent.lost_task, agent.lost_reason = None, ""
    agent.lease_expires = max(filter(None, [agent.lease_expires, task.lease_expires]))
    agent.heartbeat = now
    rows.save_fields(agent)


@dataclass
class _Claim:
    """One claim under way: the row-locked task, its claimer, and what the task was."""

    task: Task
    agent: Agent
    now: datetime
    config: ProjectConfig
    worktree: str
    previous: str  # the task's holder before this claim ("" for none)
    from_status: str
    old_holder: Agent | None  # the previous holder's row when it is another coder, locked

    def fresh_holder(self, *, keep_worktree: bool = False) -> None:
        """New holder (seed 000): review_cycles_current reset, iteration 1, fresh worktree —
        `keep_worktree` for an integration fix, which resolves the failed merge in it."""
        task = self.task
        task.assigned_to = self.agent.agent_id
        task.review_cycles_current = 0
        task.iteration = 1
        task.crashes = 0  # retries count per coder
        if not keep_worktree or not task.worktree:
            task.worktree = self.worktree or f".worktrees/{task.key}"

    def next_iteration(self) -> None:
        """Same coder continues: worktree and review counters kept, one more iteration."""
        self.task.iteration = (self.task.iteration or 0) + 1
        if not self.task.worktree:
            self.task.worktree = self.worktree or f".worktrees/{self.task.key}"


@dataclass(frozen=True)
class ClaimKind:
    """What a kind of claim does to the task before the edge (False: a limit blocked the task
    instead), and what its event says."""

    prepare: Callable[[_Claim], bool]
    detail: Callable[[_Claim], str]
    data: Callable[[_Claim], dict] = lambda claim: {}


def _prepare_fresh(claim: _Claim) -> bool:
    claim.fresh_holder()
    return True


def _prepare_rework(claim: _Claim) -> bool:
    claim.next_iteration()
    return True


def _prepare_retry(claim: _Claim) -> bool:
    """Its own lease died (seed 003): the same coder tries again, worktree, iteration and review
    counters kept ("keep task context on retry"), one crashed attempt more — or blocked once
    the retries are exhausted."""
    task = claim.task
    if retry_exhausts(task, claim.config):
        limit = crash_limit_block(task, now=claim.now, config=claim.config)
        release_holder(claim.agent, task, lost=f"blocked: {limit}")
        return False
    task.crashes += 1
    return True


def _prepare_takeover(claim: _Claim) -> bool:
    """Another coder's REJECTED or dead CLAIMED task (SPEC §5.1): failed_by gets the previous
    coder; blocked instead at hypothesis exhaustion or past its coder's crash schedule."""
    task, old_holder, now, config = claim.task, claim.old_holder, claim.now, claim.config
    if claim.from_status == TaskStatus.REJECTED and (
        old_holder is not None and lease_alive(old_holder.lease_expires, now, config)
    ):
        # Another coder may take a REJECTED task only once its coder's lease is dead.
        raise Attempt(project=task.project, actor=claim.agent, action="claim", now=now).refuse(
            Conflict(f"{task.key} is being reworked by {claim.previous}", {"task": task.key}),
            task=task,
            to_status=TaskStatus.CLAIMED,
        )
    exhausted = takeover_exhausts(task, claim.agent.agent_id)
    if not exhausted and claim.from_status == TaskStatus.CLAIMED and retry_exhausts(task, config):
        # Its coder's crash past the retry schedule: blocked whoever claims (seed 003).
        limit = crash_limit_block(task, now=now, config=config)
        release_holder(old_holder, task, lost=f"blocked: {limit}")
        return False
    # "failed_by gets the coder appended when ... another coder takes it over" (SPEC §5.1).
    append_failed_by(task, claim.previous)
    if exhausted:
        release_holder(old_holder, task, lost="blocked: hypothesis exhaustion")
        limit_block(task, now=now, config=config, limit="hypothesis_exhaustion")
        return False
    claim.fresh_holder()
    return True


def _prepare_integration_fix(claim: _Claim) -> bool:
    if claim.previous == claim.agent.agent_id:
        claim.next_iteration()
    else:
        claim.fresh_holder(keep_worktree=True)
    claim.task.integration_fix = True
    return True


def _described(claim: _Claim) -> str:
    return f"{claim.task.key}: {claim.task.description}"


# The kinds of claim (seed 000 "Transition Requirements", seed 003 retries), chosen by
# `_claim_kind`.
CLAIM_KINDS: dict[str, ClaimKind] = {
    "fresh": ClaimKind(_prepare_fresh, _described),
    "rework": ClaimKind(_prepare_rework, _described),
    "retry": ClaimKind(
        _prepare_retry,
        lambda c: f"{c.task.key}: retry {c.task.crashes} after its lease expired",
        lambda c: {"retry": c.task.crashes},
    ),
    "takeover": ClaimKind(
        _prepare_takeover,
        lambda c: f"{c.task.key} taken over from {c.previous} (lease expired)",
        lambda c: {"previous": c.previous},
    ),
    "integration_fix": ClaimKind(
        _prepare_integration_fix, lambda c: f"{c.task.key}: integration fix"
    ),
}


def _claim_kind(claim: _Claim) -> str:
    same_coder = claim.previous == claim.agent.agent_id
    if claim.from_status == TaskStatus.INTEGRATION_FAILED:
        return "integration_fix"
    if same_coder and claim.from_status == TaskStatus.CLAIMED:
        return "retry"
    if same_coder and claim.from_status == TaskStatus.REJECTED:
        return "rework"
    if claim.previous and not same_coder and claim.from_status in CLAIMABLE_FROM_ANOTHER:
        return "takeover"
    return "fresh"


CLAIMABLE_FROM_ANOTHER = (TaskStatus.REJECTED, TaskStatus.CLAIMED)


def _claim_locked(
    task: Task,
    agent: Agent,
    *,
    now: datetime,
    config: ProjectConfig,
    worktree: str,
    base_commit: str,
) -> Task | None:
    """Claim `task` (already row-locked) for `agent`. None when a limit blocked it instead."""
    project = task.project
    previous = task.assigned_to
    from_status = task.status
    # Raises HolderBusy before anything is changed.
    same_coder = previous == agent.agent_id
    old_holder = lock_previous_holder(project, previous) if previous and not same_coder else None
    claim = _Claim(task, agent, now, config, worktree, previous, from_status, old_holder)
    kind_name = _claim_kind(claim)
    kind = CLAIM_KINDS[kind_name]
    if not kind.prepare(claim):
        return None
    if base_commit:
        task.base_commit = base_commit
    attempt = Attempt(project, agent, "claim", now)
    if not task.integration_fix and not task.base_commit:
        raise attempt.refuse(
            ProtocolValidationError("base_commit", "integration HEAD at claim time is required"),
            task=task,
            to_status=TaskStatus.CLAIMED,
        )
    task.lease_expires = task.lease_until(now=now, config=config)
    if from_status != TaskStatus.CLAIMED:  # a retry or a takeover stays CLAIMED: no edge
        task_transition_run(task, p.TASK_EDGES[(from_status, TaskStatus.CLAIMED)], attempt)
    save_task(task, now)
    if old_holder is not None:
        release_holder(old_holder, task, lost=f"taken over by {agent.agent_id}")
    agent.iterations_total += 1
    _agent_works_on(agent, task, now)
    retry = kind_name == "retry"
    attempt.record(
        action="claimed" if from_status != TaskStatus.CLAIMED or retry else "reassigned",
        task=task,
        from_status=from_status,
        to_status=TaskStatus.CLAIMED,
        detail=kind.detail(claim),
        data={
            "iteration": task.iteration,
            "lease_expires": p.format_timestamp(task.lease_expires),
            **kind.data(claim),
        },
    )
    return task


@records_refusals
def claim(
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
        # The checks before the writes are the service's own (not what moved to SQL).
        agent, task = checked_named_claim(task, agent, now=now, config=config)
        try:
            claimed = _claim_locked(
                task, agent, now=now, config=config, worktree=worktree, base_commit=base_commit
            )
        except HolderBusy as exc:
            raise claim_conflict(task, agent, now)(
                f"{task.key}: its holder {task.assigned_to} is active right now; try again"
            ) from exc
        blocked = claimed is None
    if blocked:
        # The limit's block is committed; the caller still did not get the task.
        raise Conflict(
            f"{task.key} was blocked: {task.blocked_reason}",
            {"task": task.key, "status": TaskStatus.BLOCKED},
        )
    return claimed


def _check_claimer(
    project: Project, agent: Agent, now: datetime, *, config: ProjectConfig
) -> Task | None:
    """Claim-next's checks as the service ran them before issue 26 folded their reads into
    `liza_claim_v3` (boards migration 0031), one statement each, in this order, on the locked
    agent: the role, stop work, budgets, one task at a time. What the coder holds, for the
    rest."""
    require_role(Attempt(project, agent, "task_claim_next", now), agent_roles=CODER)
    refuse_if_stopped(project, actor=agent, action="claim", now=now)
    held = holder_task(project_id=agent.project_id, agent_id=agent.agent_id)
    # Issue 24: a spent budget (project, agent, sprint, goal, the task's) refuses the claim.
    refuse_if_over_budget(project, agent=agent, action="claim", now=now, task=held)
    refused = claimer_refusal(agent, held, task=None, now=now, config=config)
    if refused is not None:
        raise Attempt(project=project, actor=agent, action="claim", now=now).refuse(
            Conflict(refused, {} if held is None else {"task": held.key})
        )
    return held


@records_refusals
def claim_next(
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
        held = _check_claimer(project, agent, now, config=config)
        querysets = claim_candidates(project, agent.agent_id, now, config)
        if (
            held is not None
            and held.status == TaskStatus.CLAIMED
            and lease_alive(held.lease_expires, now, config)
        ):
            held = lock_task(held)  # its own live claim (e.g. handed off): go on with it
            if agent.status != AgentStatus.WORKING or agent.current_task_id != held.pk:
                _agent_works_on(agent, held, now)
            return held
        if held is not None and held.status == TaskStatus.CLAIMED:
            # Its own dead claim: retried once the backoff has passed (the queue's predicate),
            # nothing else meanwhile (one task at a time). The task's retry, not new work: an
            # agent in error still gets it, so the expiry past the schedule blocks the task
            # however close the expiries were (decisions.md "Retries and agent in error").
            querysets = [querysets[3].filter(pk=held.pk)]
        else:
            # Anything else is new work, which an agent in error or overloaded does not get.
            refuse_if_unavailable(agent, action="claim", now=now)
            # Seed 000: REJECTED goes back to its own coder before it takes anything else; a
            # coder that holds nothing has no REJECTED task of its own (that query is skipped).
            querysets = querysets[:1] if held is not None else querysets[1:]
        # Enforced limits (issue 24): agents at work; with the CLAIMED column full, only a task
        # already in it (a retry, a takeover) may be claimed.
        admit(
            project=project, config=config, agent=agent, action="claim", now=now, into_column=False
        )
        full = limits_enforced(config) and wip_full(
            project=project, config=config, agent=agent, now=now
        )
        if full:
            querysets = [q.filter(status=TaskStatus.CLAIMED) for q in querysets]
        busy: list[int] = []  # rows whose previous holder is mid-heartbeat: not this time
        for queryset in querysets:
            while True:
                if busy:
                    queryset = queryset.exclude(pk__in=busy)
                task = queryset.select_for_update(skip_locked=True, of=("self",)).first()
                if task is None:
                    break
                task.project = project  # already loaded: spare _claim_locked a query
                try:
                    claimed = _claim_locked(
                        task,
                        agent,
                        now=now,
                        config=config,
                        worktree=worktree,
                        base_commit=base_commit,
                    )
                except HolderBusy:
                    busy.append(task.pk)
                    continue
                if claimed is not None:
                    return claimed
                # A limit blocked that one; it left the queryset, try the next.
        if full:
            raise_limit(full, project=project, agent=agent, action="claim", now=now)
    return None
