"""Whether an agent should work, wait or stop (seed 000 "Exit Codes", SPEC §5.4, §13).

`stop_reason` is the one stop-work rule, read by claims (refused), heartbeats (`stop`) and
`/work` (exit 42); `work_for_role` answers "is there work for my role" with the same predicates
the claims enforce, so `/work` never sends an agent to a claim that is then refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime

from agents.models import Agent
from boards.coordination.models.projects import Goal, Project, ProjectConfig, Sprint
from boards.coordination.models.tasks import Discovery, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import (
    Availability,
    agent_availability,
    departed_refusal,
)
from boards.coordination.selectors.budgets import budget_refusal
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.limits import admission_refusal, limits_enforced
from boards.coordination.selectors.reviews import held_review, merges_awaiting, reviewable_tasks
from boards.coordination.selectors.sprints import sprint_current
from boards.coordination.selectors.tasks import (
    claim_candidates,
    claim_next_available,
    holder_task,
    retry_at,
    work_may_still_come,
)
from boards.protocol import GoalStatus, SprintStatus, TaskStatus


@dataclass(frozen=True)
class Stop:
    """Agents must stop (exit 42): `code` is the protocol error code a claim is refused with."""

    code: str  # paused | checkpoint | aborted; the heartbeat's also stalled | budget_exhausted
    message: str


UNREAD = object()  # `stop_reason`: the caller has not read the sprint


def stop_reason(project: Project, *, sprint: Sprint | object | None = UNREAD) -> Stop | None:
    """Seed 000's graceful-abort triggers that the board owns: PAUSE, CHECKPOINT and ABORT.

    - the project is paused (seed 000 PAUSE file);
    - its open sprint is at CHECKPOINT (seed 000 CHECKPOINT file);
    - its latest sprint was ABORTED and no sprint has opened since (seed 000 ABORT file): the
      work of an aborted sprint must not go on until a human or the planner opens the next one.
      (Aborting a goal aborts its open sprint and cancels its tasks; tasks of no goal are not
      its to stop, SPEC §13.)

    `sprint`: the project's `sprint_current`, when the caller has read it already (the
    heartbeat reads it in its agent row's statement).
    """
    if project.is_paused:
        return Stop("paused", f"project {project.slug} is paused; exit 42")
    if sprint is UNREAD:
        sprint = sprint_current(project=project)
    if sprint is not None and sprint.status == SprintStatus.CHECKPOINT:
        return Stop("checkpoint", f"sprint {sprint.sprint_id} is at CHECKPOINT; exit 42")
    if sprint is not None and sprint.status == SprintStatus.ABORTED:
        return Stop("aborted", f"sprint {sprint.sprint_id} was aborted; exit 42")
    return None


@dataclass(frozen=True, eq=False)
class WorkAnswer(Mapping):
    """`/work`'s answer (seed 000 "Exit Code 0 Semantics"), typed. It reads as the mapping the
    API serializes, `stop` and `budget` present only when they apply, so the JSON keeps its
    shape."""

    role: str
    agent: str | None
    work: bool = False
    exit: int | None = None  # 0 the role is complete, 42 stop, None while work may still come
    waiting_for_drafts: int = 0
    retry_after: int | None = None
    reason: str = ""
    availability: str | None = None
    merge: list[str] = field(default_factory=list)
    stop: str | None = None  # the stop code, with exit 42
    budget: str | None = None  # the spent budget's scope

    def _keys(self) -> list[str]:
        optional = ("stop", "budget")
        return [f.name for f in fields(self) if f.name not in optional or getattr(self, f.name)]

    def __getitem__(self, key: str) -> object:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


@dataclass(frozen=True)
class _Ask:
    """One `/work` question: the role's project, the asking agent (None for the role), when."""

    project: Project
    role: str
    agent: Agent | None
    now: datetime
    config: ProjectConfig
    drafts: int
    available: Availability | None

    @property
    def agent_id(self) -> str:
        return self.agent.agent_id if self.agent is not None else ""


@dataclass(frozen=True)
class _Outlook:
    """What a role's own rules found: work now, the role complete, or why work may still come."""

    work: bool
    complete: bool
    coming: str | None = None
    retry_after: int | None = None  # a coder's own dead claim: when its retry is due


def work_for_role(*, project: Project, role: str, agent: Agent | None, now: datetime) -> WorkAnswer:
    """Seed 000 "Exit Code 0 Semantics" and "DRAFT Task Waiting" for one role.

    `exit` is 0 when the role is complete, 42 when the agent must stop (`stop_reason`), None
    while work may still come; `retry_after` says when to ask again. `agent` is the asking
    agent (None for a human asking about a role): the answer is then about the role as a whole.
    """
    if role not in ROLE_RULES:
        raise ValueError(role)
    config = config_of(project)
    drafts = Task.objects.filter(project=project, status=TaskStatus.DRAFT).count()
    answer = WorkAnswer(
        role=role, agent=agent.agent_id if agent is not None else None, waiting_for_drafts=drafts
    )
    stop = stop_reason(project)
    if stop is not None:
        return replace(answer, exit=42, stop=stop.code, reason=stop.message)
    if agent is not None and (spent := _budget_spent(project, agent)):
        # Issue 24: a spent budget refuses the claim (`budget_exhausted`): wait, not exit 0 —
        # an admin may raise it, and the work resumes at the next ask. A reviewer's merges of
        # work already approved go on: its supervisor's git, no model's spend.
        return replace(
            answer,
            merge=merges_awaiting(project=project, reviewer_id=agent.agent_id)
            if agent.role == Agent.Role.CODE_REVIEWER
            else [],
            retry_after=config.coder_poll_interval,
            budget=spent.budget.scope,
            reason=f"{spent.message}: waiting for an admin to raise it",
        )
    available = agent_availability(agent, now) if agent is not None else None
    if available is not None:
        answer = replace(answer, availability=available.state)
    ask = _Ask(project, role, agent, now, config, drafts, available)
    found = ROLE_RULES[role](ask, answer)
    if isinstance(found, WorkAnswer):
        return found
    outlook, answer = found
    if outlook.work:
        return replace(answer, work=True, reason=answer.reason or "work is available")
    if outlook.complete and not (drafts and role != Agent.Role.PLANNER):
        return replace(answer, exit=0, reason="role complete")
    reason = (
        f"{drafts} DRAFT task(s) may be finalized soon"
        if drafts
        else outlook.coming or "work is in progress elsewhere"
    )
    return replace(
        answer, retry_after=outlook.retry_after or config.coder_poll_interval, reason=reason
    )


def _budget_spent(project: Project, agent: Agent):
    return budget_refusal(
        project=project,
        agent=agent,
        tasks=[agent.current_task] if agent.current_task_id else [],
    )


def _coder(ask: _Ask, answer: WorkAnswer) -> WorkAnswer | tuple[_Outlook, WorkAnswer]:
    project, agent, now, config = ask.project, ask.agent, ask.now, ask.config
    retry_after = None
    if agent is None:
        work = any(qs.exists() for qs in claim_candidates(project, "", now, config)[1:])
        held = None
    else:
        held = holder_task(project_id=project.pk, agent_id=ask.agent_id)
        work = claim_next_available(project=project, agent=agent, now=now, config=config)
        retrying = False
        if not work and held is not None and held.status == TaskStatus.CLAIMED:
            at = retry_at(held, config)  # its own dead claim: ask again when it is due
            if at is not None and at >= now:
                retrying = True
                retry_after = max(1, math.ceil((at - now).total_seconds()) + 1)
        own_claim = held is not None and held.status == TaskStatus.CLAIMED
        # Its own live claim is handed back whatever the limits; its own dead claim due for its
        # retry puts a coder at work again, so `max_concurrent` applies to it as claim-next
        # applies it (the column's WIP limit does not: the task is in CLAIMED already).
        live_claim = own_claim and lease_alive(held.lease_expires, now, config)
        if work and not live_claim and (limited := _coder_limited(ask)):
            return replace(answer, **limited)
        if (work or retrying) and not ask.available.takes_work and not own_claim:
            # Seed 003: no new work for an agent in error or overloaded; a claim is refused
            # (agent_unavailable) until it clears. Its own claim, live or due for its retry,
            # is not new work (decisions.md "Retries and agent in error").
            return replace(
                answer,
                retry_after=max(
                    retry_after or 0,
                    ask.available.retry_after(now, config.coder_poll_interval),
                ),
                reason=ask.available.reason,
            )
    coming = work_may_still_come(project) if not work and held is None else None
    complete = not work and held is None and coming is None
    return _Outlook(bool(work), complete, coming, retry_after), answer


def _reviewer(ask: _Ask, answer: WorkAnswer) -> WorkAnswer | tuple[_Outlook, WorkAnswer]:
    project, agent, now, config = ask.project, ask.agent, ask.now, ask.config
    merges: list[str] = []
    if agent is None:
        work = Task.objects.filter(
            project=project, status=TaskStatus.READY_FOR_REVIEW, suspended_at__isnull=True
        ).exists()
    else:
        # Its own merges first (seed 000 T10), then a review it holds, then a free slot. One
        # that left claims no review, not even its held one, until it registers again.
        merges = merges_awaiting(project=project, reviewer_id=ask.agent_id)
        claims = departed_refusal(agent) is None
        held_or_merge = bool(
            merges
            or (claims and held_review(project=project, reviewer=agent, now=now, config=config))
        )
        fresh = claims and bool(
            reviewable_tasks(project=project, reviewer=agent, now=now, config=config)
        )
        if fresh and not held_or_merge and (limited := _limited(project, config, agent, now)):
            return replace(answer, **limited)
        if fresh and not held_or_merge and not ask.available.takes_work:
            # Seed 003: an agent in error or overloaded finishes what it holds (its review,
            # its merges) but takes no new review until it clears.
            return replace(
                answer,
                retry_after=ask.available.retry_after(now, config.coder_poll_interval),
                reason=ask.available.reason,
            )
        work = held_or_merge or fresh
    answer = replace(answer, merge=merges)
    if merges:
        answer = replace(answer, reason=f"merge {', '.join(merges)} (approved by {ask.agent_id})")
    coming = work_may_still_come(project) if not work else None
    return _Outlook(work, not work and coming is None, coming), answer


def _planner(ask: _Ask, answer: WorkAnswer) -> tuple[_Outlook, WorkAnswer]:
    project = ask.project
    tasks = Task.objects.filter(project=project)
    work = (
        ask.drafts > 0
        or tasks.filter(status=TaskStatus.BLOCKED).exists()
        or Discovery.objects.filter(
            project=project,
            urgency=Discovery.Urgency.IMMEDIATE,
            converted_to_task="",
            triage=Discovery.Triage.OPEN,
        ).exists()
    )
    goal_open = Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS).exists()
    active = tasks.non_terminal().exists()
    # The original's INITIAL_PLANNING (an open goal, no task yet) and the goal to complete
    # once every task is terminal: both are the planner's, with nobody else at work.
    work = work or (goal_open and not active)
    return _Outlook(work, not work and not goal_open and not active), answer


ROLE_RULES = {
    Agent.Role.CODER: _coder,
    Agent.Role.CODE_REVIEWER: _reviewer,
    Agent.Role.PLANNER: _planner,
}


def _coder_limited(ask: _Ask) -> dict[str, object] | None:
    """An enforced limit that would refuse the coder's claim-next, in the claim's order: the
    agents at work (`max_concurrent`), then the CLAIMED column's WIP limit — which still lets
    it take a task already in the column (a takeover, `claim_next_queues`)."""
    project, config, agent, now = ask.project, ask.config, ask.agent, ask.now
    if not limits_enforced(config):
        return None
    refused = None
    for into_column in (False, True):  # with `True`, only the column's WIP limit is left
        refused = refused or admission_refusal(
            project=project, config=config, role=agent.role, now=now, into_column=into_column
        )
    if refused is None or (
        refused.limit == "wip:CLAIMED"
        and claim_next_available(
            project=project, agent=agent, now=now, config=config, column_full=True
        )
    ):
        return None
    return {"retry_after": refused.retry_after, "reason": refused.message}


def _limited(project: Project, config, agent: Agent, now: datetime) -> dict[str, object] | None:
    """An enforced limit (issue 24) that would refuse this agent's next claim: `/work` says
    wait, with the limit's reason and when to ask again (what the claim would answer)."""
    if not limits_enforced(config):
        return None
    refused = admission_refusal(
        project=project, config=config, role=agent.role, now=now, into_column=True
    )
    if refused is None:
        return None
    return {"retry_after": refused.retry_after, "reason": refused.message}
