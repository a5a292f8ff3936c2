"""Review claims (seed 000 "Review Lease Lifecycle", seed 001): a named review claim and review
claim-next under `FOR UPDATE SKIP LOCKED`.

The services check here who may claim a review (the role, stop work, budgets, a reviewer that
left (`refuse_if_departed`), availability, the limits, a named task's state and slot), each
rule asked where it lives; the pick and every write of the claim are `liza_review_claim_v1`
(boards migration 0032), called in one statement by `_review_claim_sql` through
`liza_review_claim_v2` (0033, which also reads what claim-next's checks need), whose refusal is
raised here. tests/coordination/services/
test_review_claims_sql.py holds it equal to the Python the service ran before (`review_oracle`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import agent_availability
from boards.coordination.selectors.budgets import project_budgets, spent_subjects
from boards.coordination.selectors.limits import admission_refusal, limits_enforced
from boards.coordination.selectors.reviews import (
    held_review,
    review_slot_refusal,
    reviewable_tasks,
)
from boards.coordination.selectors.snapshots import SNAPSHOT_FIELDS
from boards.coordination.services.actors import REVIEWER
from boards.coordination.services.admission import admission_lock, admit
from boards.coordination.services.audit import Attempt, note_written_events, records_refusals
from boards.coordination.services.authority import (
    agents_only,
    fenced,
    refuse_if_departed,
    refuse_if_stopped,
    refuse_if_superseded,
    refuse_if_unavailable,
    require_role,
)
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.edges import require_task_status
from boards.coordination.services.locking import lock_agent
from boards.coordination.services.tasks.claim_call import (
    checks_read,
    checks_reads_params,
    checks_reads_sql,
)
from boards.coordination.services.tasks.holders import lock_task_and_its_agents
from boards.errors import Conflict, Forbidden
from boards.protocol import AGENT_EDGES, TaskStatus


@dataclass(frozen=True)
class _ReviewClaimed:
    """What `liza_review_claim_v2` answered: its outcome (`claimed`, `held`, `none`, the
    refusal `busy` with the reviewer of a dead claim that is busy, or `check`: nothing written),
    the task, the review, the claimer's row as locked or written, the events written, whether
    the project has a budget; with the checks' reads, the current sprint and the agent's
    failures (`failures_sql`), read beside the call."""

    outcome: str
    task: Task | None
    review: Review | None
    agent: Agent
    events: list[dict]
    busy: str | None
    has_budgets: bool = False
    sprint: Sprint | None = None
    failures: list[tuple] | None = None


def _review_claim_sql(
    agent: Agent,
    *,
    mode: str,
    now: datetime,
    config: ProjectConfig,
    task: Task | None = None,
    spent: tuple[list[int], list[int]] = ([], []),
    check: str = "none",
) -> _ReviewClaimed:
    """Call `liza_review_claim_v2` for `agent` in one statement (`mode`: `next` hands back its
    held review or picks one, passing over `spent` tasks and goals; `named` claims `task`,
    locked and checked; `check`: `budgets` answers `check`, nothing written, when the project
    has a budget, `always` whatever the budgets — with either, the current sprint and the
    agent's failures are read beside the call for the checks). What open boards redraw is
    noted and the events counted (as `audit.record_event` does for the events it writes)
    only once the checks have passed: `_noted`."""
    reads = check != "none"
    params = [
        agent.pk,
        mode,
        task.pk if task is not None else None,
        now,
        config.lease_duration,
        config.lease_grace,
        json.dumps(p.REQUIRED_APPROVALS),
        *spent,
        _rules(),
        check,
    ]
    if reads:
        params += checks_reads_params(agent, now)
    with rows.prepared_cursor() as cursor:
        cursor.execute(_call_sql(reads), params)
        row = cursor.fetchone()
    cut = 1 + rows.width(Task)
    task_values, review_values = row[1:cut], row[cut : cut + rows.width(Review)]
    cut += rows.width(Review)
    agent_values = row[cut : cut + rows.width(Agent)]
    cut += rows.width(Agent)
    events, busy, has_budgets = row[cut : cut + 3]
    sprint, failures = checks_read(row[cut + 3 :]) if reads else (None, None)
    return _ReviewClaimed(
        outcome=row[0],
        task=None if task_values[0] is None else rows.from_row(Task, task_values),
        review=None if review_values[0] is None else rows.from_row(Review, review_values),
        agent=rows.from_row(Agent, agent_values),
        events=events if not isinstance(events, str) else json.loads(events),
        busy=busy,
        has_budgets=has_budgets,
        sprint=sprint,
        failures=failures,
    )


def _noted(answered: _ReviewClaimed) -> _ReviewClaimed:
    note_written_events(answered.agent.project_id, answered.agent.pk, answered.events)
    return answered


@cache
def _call_sql(reads: bool) -> str:
    columns, joins = checks_reads_sql() if reads else ("", "")
    return (
        f"SELECT c.outcome, {rows.select_list(Task, '(c.task_row)')}, "
        f"{rows.select_list(Review, '(c.review_row)')}, "
        f"{rows.select_list(Agent, '(c.agent_row)')}, c.events, c.busy_reviewer, c.has_budgets"
        + columns
        + " FROM liza_review_claim_v2(%s::bigint, %s::text, %s::bigint, %s::timestamptz, "
        "%s::integer, %s::integer, %s::jsonb, %s::bigint[], %s::bigint[], %s::jsonb, %s::text) c"
        + joins
    )


def _edge(name: str) -> tuple[list[str], str]:
    """The sources and the target of the agent edge `name` (protocol.AGENT_EDGES)."""
    found = [
        (source, target) for (source, target), (edge, _) in AGENT_EDGES.items() if edge == name
    ]
    return sorted(source for source, _ in found), found[0][1]


@cache
def _rules() -> str:
    """The tables `liza_review_claim_v1` follows that live in Python, as its argument: so that
    each stays the one place that names them."""
    review_from, reviewing = _edge(Agent.start_review.__name__)
    ready_from, _ = _edge(Agent.ready.__name__)  # `ready` (STARTING → IDLE), then `start_review`
    finish_from, idle = _edge(Agent.finish_review.__name__)
    return json.dumps(
        {
            "snapshot": list(SNAPSHOT_FIELDS),
            "reviews_from": sorted({*review_from, *ready_from}),
            "reviewing": reviewing,
            # A dead claim's reviewer still REVIEWING finishes that review (`finish_review`).
            "idle": idle if finish_from == [reviewing] else None,
        }
    )


def _answered(answer: _ReviewClaimed, project: Project) -> Review:
    """The review `liza_review_claim_v1` answered, with its task (as the API presents it)."""
    task, review = answer.task, answer.review
    task.project = project  # already loaded: spare the serializers a query
    review.task, review.project = task, project
    return review


def _open_slot(task: Task, agent: Agent, *, now: datetime, config) -> None:
    """The task's open reviews, locked, and its review slot open to `agent` (the one rule,
    `review_slot_refusal`): a refusal is `forbidden` or a conflict, as the rule says."""
    reviews = list(Review.objects.select_for_update().filter(task=task, closed_at__isnull=True))
    refused = review_slot_refusal(task, agent, reviews=reviews, now=now, config=config)
    if refused is not None:
        error = (
            Forbidden(refused.message, refused.details)
            if refused.kind == "forbidden"
            else Conflict(refused.message, refused.details)
        )
        raise Attempt.on(task, actor=agent, action="claim_review", now=now).refuse(error, task=task)


def checked_review_claim(
    task: Task,
    agent: Agent,
    *,
    now: datetime,
    config: ProjectConfig,
    generation: int | None = None,
) -> tuple[Agent, Task]:
    """Inside a named review claim's transaction: its rows locked in the lock order and every
    check that comes before its writes (availability, the limits, the task's state, its slot);
    the agent and the task as locked. (The tests' reference model runs the same checks.)"""
    project = task.project
    # Lock order (locking): the project row when a limit is enforced (issue 24), the agents
    # (this one, the task's coder and pending reviewers, whose lapsed claims it may close) by
    # primary key, then the task, then the reviews.
    admission_lock(project=project, config=config)
    task = lock_task_and_its_agents(task, agent)
    agent = lock_agent(agent)
    # Read on the locked row: a leave or a registration that committed first is seen (as a
    # coder's claim sees them).
    refuse_if_superseded(agent, generation, action="claim_review", now=now, task=task)
    refuse_if_departed(agent, action="claim_review", now=now, task=task)
    _admit_reviewer(project, agent, task, now=now, config=config)
    claim = Attempt(project, agent, "claim_review", now)
    require_task_status(
        task, [TaskStatus.READY_FOR_REVIEW], to=TaskStatus.READY_FOR_REVIEW, attempt=claim
    )
    _open_slot(task, agent, now=now, config=config)
    return agent, task


def holder_busy(task: Task, agent: Agent, now: datetime, reviewer: str) -> Conflict:
    """A named review claim's refusal when the reviewer of a dead claim it would close is in
    the middle of its own operation (its row locked: a heartbeat right now)."""
    return Attempt.on(task, actor=agent, action="claim_review", now=now).refuse(
        Conflict(f"{reviewer} is active right now; try again", {"task": task.key}), task=task
    )


@agents_only
@fenced
@records_refusals
def review_claim(
    *, task: Task, agent: Agent, now: datetime, generation: int | None = None
) -> Review:
    """READY_FOR_REVIEW with a review slot open to `agent` → a review lease for it.

    The slot rule is `boards.coordination.selectors.reviews.review_slot_refusal`, the one `/work`
    reads. A claim whose lease is dead (`lease_alive`, grace included) is closed and its slot taken
    (seed 000 "Stale review lease allows supervisor to reassign"), in `liza_review_claim_v1`.
    """
    project = task.project
    attempt = Attempt(project, agent, "review_claim", now)
    require_role(attempt, agent_roles=REVIEWER, task=task)
    refuse_if_stopped(project, actor=agent, action="claim_review", now=now, task=task)
    refuse_if_over_budget(project, agent=agent, action="claim_review", now=now, task=task)
    config = config_of(project)
    with transaction.atomic():
        agent, task = checked_review_claim(
            task, agent, now=now, config=config, generation=generation
        )
        answer = _review_claim_sql(agent, mode="named", task=task, now=now, config=config)
        if answer.outcome == "busy":
            raise holder_busy(task, agent, now, answer.busy)
        _noted(answer)
    return _answered(answer, project)


def _takes_no_new_review(
    project: Project, agent: Agent, now: datetime, config, failures: list | None = None
) -> bool:
    """The reviewer may take no new review now: in error or overloaded (seed 003), or an
    enforced limit (issue 24) holds. `failures`: the agent's, read in the call's statement."""
    if not agent_availability(agent, now, failures).takes_work:
        return True
    return limits_enforced(config) and (
        admission_refusal(
            project=project, config=config, role=agent.role, now=now, into_column=False
        )
        is not None
    )


class _Undone(Exception):
    """Rolls back a review claim-next whose reviewer, checked after the call, may take no new
    review: it is then answered as before the call (`_held_or_refused`)."""


@agents_only
@fenced
@records_refusals
def review_claim_next(
    *, project: Project, agent: Agent, now: datetime, generation: int | None = None
) -> Review | None:
    """The server picks the review: the first READY_FOR_REVIEW task (priority, then age) whose
    slot — the very `liza_review_slot_v2` of `review_claim` and `/work` — opens to `agent`,
    claimed in the same call of `liza_review_claim_v1`. A reviewer holding a live review gets it
    back (a restarted reviewer goes on with it); one it gave back this round (`review_release`)
    it does not. None when there is none.

    A candidate another reviewer holds (row locked), or whose dead claim's reviewer is busy, is
    passed over; the next one is tried.

    One statement in a project without budgets or limits (issue 26): `liza_review_claim_v2`
    locks the agent and claims, the sprint and the agent's failures read beside it; the checks
    then run in their order on what it read, and a refusal rolls the claim back. With a budget
    or a limit it answers `check` before any write, and the checks run before a second call.
    """
    require_role(Attempt(project, agent, "review_claim_next", now), agent_roles=REVIEWER)
    config = config_of(project)
    try:
        with transaction.atomic():
            # The project row first when a limit is enforced (as in review_claim): its count
            # of reviewers at work must be read before the claim adds one.
            limited = admission_lock(project=project, config=config)
            answer = _review_claim_sql(
                agent, mode="next", now=now, config=config, check="always" if limited else "budgets"
            )
            agent = answer.agent
            agent.project = project  # already loaded: spare the refusals a query
            # On the agent row the call locked: a claim it made is rolled back.
            refuse_if_superseded(agent, generation, action="claim_review", now=now)
            refuse_if_stopped(
                project, actor=agent, action="claim_review", now=now, sprint=answer.sprint
            )
            if answer.outcome == "check":
                answer = _checked_next(project, agent, answer, now=now, config=config)
                if not isinstance(answer, _ReviewClaimed):
                    return answer
            else:
                # On the agent row the call locked: a claim it made is rolled back.
                refuse_if_departed(agent, action="claim_review", now=now)
                if _takes_no_new_review(project, agent, now, config, answer.failures):
                    raise _Undone
            _noted(answer)
    except _Undone:
        with transaction.atomic():
            return _held_or_refused(project, lock_agent(agent), now, config)
    return _answered(answer, project) if answer.outcome in ("claimed", "held") else None


def _checked_next(
    project: Project, agent: Agent, first: _ReviewClaimed, *, now: datetime, config
) -> _ReviewClaimed | Review | None:
    """Review claim-next in a project with budgets or an enforced limit: the checks that need
    them, in their order, then the call without the check; or, for a reviewer that may take no
    new review, its answer (`_held_or_refused`)."""
    # Read once for both questions: whether a spent budget refuses the claim, and which
    # tasks the pick passes over because their own or their goal's is spent.
    budgets = project_budgets(project=project) if first.has_budgets else []
    refuse_if_over_budget(project, agent=agent, action="claim_review", now=now, budgets=budgets)
    refuse_if_departed(agent, action="claim_review", now=now)
    if _takes_no_new_review(project, agent, now, config, first.failures):
        return _held_or_refused(project, agent, now, config)
    return _review_claim_sql(
        agent,
        mode="next",
        now=now,
        config=config,
        spent=spent_subjects(project=project, budgets=budgets),
    )


def _held_or_refused(project: Project, agent: Agent, now: datetime, config) -> Review | None:
    """A reviewer that may take no new review still gets its held review back; with a review
    to take, the claim of the first one is refused (naming it), as the claim would; else
    None."""
    held = held_review(project=project, reviewer=agent, now=now, config=config)
    if held is not None:
        return held
    first = next(
        iter(reviewable_tasks(project=project, reviewer=agent, now=now, config=config)), None
    )
    if first is None:
        return None
    _admit_reviewer(project, agent, first, now=now, config=config)
    return None  # not reached: one of the two refused


def _admit_reviewer(project: Project, agent: Agent, task: Task, *, now: datetime, config) -> None:
    """Whether `agent` may take a review of `task` now: available (seed 003), then admitted by
    the enforced limits (issue 24; the task stays READY_FOR_REVIEW, so no column grows)."""
    refuse_if_unavailable(agent, action="claim_review", now=now, task=task)
    admit(
        project=project,
        config=config,
        agent=agent,
        action="claim_review",
        now=now,
        into_column=False,
        task=task,
    )
