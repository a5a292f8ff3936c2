"""Task writes: every edge of seed 000's task machine, its requirements and its limits.

Each public function is one transaction: lock the task row, check who acts and what the state
allows, set the fields of seed 000 "Transition Requirements", take the django-fsm transition,
save, write the Event. Refusals raise a `ProtocolError` and leave the row untouched; the
`records_refusals` decorator logs them afterwards (SPEC §4.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, OperationalError, transaction
from django_fsm import TransitionNotAllowed

from agents.models import Agent
from boards import events
from boards import protocol as p
from boards.errors import (
    Conflict,
    Forbidden,
    InvalidTransition,
    ProtocolValidationError,
)
from boards.models import Anomaly, Goal, HumanNote, Project, ProjectConfig, Review, Sprint, Task
from boards.services.common import (
    SYSTEM,
    Actor,
    clean_string_list,
    clean_text,
    config_of,
    is_agent,
    is_human,
    lease_alive,
    lock_agent,
    lock_task,
    open_sprint,
    record_event,
    records_refusals,
    refusal,
    refuse_if_stopped,
    require_lease_holder,
    require_role,
    require_task_status,
)

PLANNER = ("planner",)
CODER = ("coder",)
REVIEWER = ("code_reviewer",)


# ---------------------------------------------------------------------------------------------
# small shared pieces
# ---------------------------------------------------------------------------------------------


def _save(task: Task, now: datetime) -> None:
    task.updated = now
    task.save()


def _fsm(
    task: Task, method: str, *, actor: Actor, project: Project, now: datetime, to: str
) -> None:
    """Run a django-fsm transition; a refused guard becomes `invalid_transition`."""
    try:
        getattr(task, method)()
    except TransitionNotAllowed as exc:
        raise refusal(
            InvalidTransition(
                from_status=task.status,
                to_status=to,
                allowed=p.task_targets(task.status),
                message=f"{task.key}: {exc}",
            ),
            project=project,
            actor=actor,
            action=method,
            now=now,
            task=task,
            to_status=to,
        ) from exc


def _append_failed_by(task: Task, agent_id: str) -> None:
    """failed_by holds unique agent ids (seed 002 Validation Rules)."""
    if agent_id and agent_id not in task.failed_by:
        task.failed_by = [*task.failed_by, agent_id]


def _hypothesis_exhausted(task: Task) -> bool:
    # SPEC §5.1: two distinct coders failed the same task.
    return len(set(task.failed_by)) >= 2


def _agent_row(project: Project, agent_id: str) -> Agent | None:
    if not agent_id:
        return None
    return (
        Agent.objects.select_for_update(of=("self",))
        .filter(project=project, agent_id=agent_id)
        .first()
    )


class _HolderBusy(Exception):
    """The task's previous holder is in the middle of its own operation (a heartbeat)."""


def _lock_previous_holder(project: Project, agent_id: str) -> Agent | None:
    """Lock the agent a claim takes the task from, without waiting for it.

    The claimer already holds the task row; a heartbeat locks its agent row and then its task.
    Waiting here for the old holder's row could deadlock with that heartbeat, so a busy holder
    makes the claimer pass on this task for now (its heartbeat is refused with lease_lost).
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
            raise _HolderBusy(agent_id) from exc
        raise


def _release_agent(agent: Agent | None, task: Task, *, lost: str = "") -> None:
    """The agent no longer works on `task`: back to IDLE, no current task.

    `lost` says why, when the task was taken out of the agent's hands rather than finished or
    given up by the agent itself; its next heartbeat then tells it to exit 42.
    """
    if agent is None or agent.current_task_id != task.pk:
        # It already moved on (a restarted coder may be working on something else).
        return
    events.changed(agent.project_id, events.AGENT, agent.pk)
    agent.current_task = None
    if lost:
        agent.lost_task = task
        agent.lost_reason = lost[:200]
    if agent.status in ("WORKING", "WAITING") and agent.role == Agent.Role.CODER:
        agent.stop_work()
    agent.save()


def _close_review_round(task: Task, now: datetime, *, except_reviewer: str = "") -> None:
    """The task leaves READY_FOR_REVIEW: every open review of the round closes."""
    open_reviews = list(
        Review.objects.select_for_update().filter(task=task, closed_at__isnull=True)
    )
    for review in open_reviews:
        review.closed_at = now
        if not review.verdict:
            review.lease_expires = None
        review.save()
        if review.reviewer != except_reviewer and not review.verdict:
            reviewer = _agent_row(task.project, review.reviewer)
            if reviewer is not None and reviewer.status == "REVIEWING":
                reviewer.finish_review()
                reviewer.save()


def _after_terminal(task: Task, *, now: datetime) -> None:
    """A task reached a terminal state: the sprint may be complete (seed 000 triggers)."""
    from boards.services.sprints import sprint_complete_if_done

    sprint_complete_if_done(project=task.project, now=now)


# ---------------------------------------------------------------------------------------------
# planner operations (SPEC §6)
# ---------------------------------------------------------------------------------------------


def _check_no_cycle(task: Task, deps: Sequence[Task]) -> None:
    """Adding task → deps must not close a loop (seed 002 "no circular dependencies")."""
    target = task.pk
    stack = [d.pk for d in deps]
    seen: set[int] = set()
    parents: dict[int, int | None] = {d.pk: None for d in deps}
    while stack:
        current = stack.pop()
        if current == target:
            path = [task.key]
            node: int | None = current
            keys = dict(Task.objects.filter(pk__in=[*parents, target]).values_list("pk", "key"))
            chain = []
            while node is not None:
                chain.append(keys.get(node, "?"))
                node = parents.get(node)
            path.extend(reversed(chain))
            raise ProtocolValidationError(
                "depends_on", f"creates a dependency cycle: {' → '.join(path)}"
            )
        if current in seen:
            continue
        seen.add(current)
        for nxt in Task.depends_on.through.objects.filter(from_task_id=current).values_list(
            "to_task_id", flat=True
        ):
            parents.setdefault(nxt, current)
            stack.append(nxt)


def _resolve_keys(project: Project, keys: Sequence[str], field: str) -> list[Task]:
    keys = clean_string_list(list(keys), field)
    found = {t.key: t for t in Task.objects.filter(project=project, key__in=keys)}
    missing = [k for k in keys if k not in found]
    if missing:
        raise ProtocolValidationError(field, f"unknown task(s): {', '.join(missing)}")
    return [found[k] for k in keys]


def _new_task(
    *,
    project: Project,
    key: str,
    description: str,
    now: datetime,
    priority: Any = 3,
    spec_ref: str = "",
    done_when: str = "",
    scope: str = "",
    criticality: str = Task.Criticality.STANDARD,
    max_iterations: int | None = None,
    max_review_cycles: int | None = None,
    lease_duration_override: int | None = None,
    supersedes: str = "",
    needs_human_approval: bool | None = None,
) -> Task:
    key = clean_text(key, "key", max_length=64)
    if not p.TASK_KEY_RE.match(key):
        raise ProtocolValidationError("key", "letters, digits, '.', '_' or '-' (at most 64)")
    if Task.objects.filter(project=project, key=key).exists():
        raise Conflict(f"task {key} already exists", {"field": "key"})
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 5:
        raise ProtocolValidationError("priority", "an integer from 1 (highest) to 5")
    if criticality not in p.CRITICALITIES:
        raise ProtocolValidationError("criticality", f"one of {', '.join(p.CRITICALITIES)}")
    for name, value in (
        ("max_iterations", max_iterations),
        ("max_review_cycles", max_review_cycles),
        ("lease_duration_override", lease_duration_override),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ProtocolValidationError(name, "a positive integer")
    if needs_human_approval is None:
        # Seed 004 APPROVAL_REQUIRED: security-sensitive work waits for a human by default.
        needs_human_approval = criticality == Task.Criticality.SECURITY_SENSITIVE
    elif not isinstance(needs_human_approval, bool):
        raise ProtocolValidationError("needs_human_approval", "true or false")
    goal = Goal.objects.filter(project=project, status="IN_PROGRESS").first()
    try:
        with transaction.atomic():
            return _insert_task(
                project,
                goal,
                key,
                description,
                priority,
                now,
                spec_ref,
                done_when,
                scope,
                criticality,
                max_iterations,
                max_review_cycles,
                lease_duration_override,
                supersedes,
                needs_human_approval,
            )
    except IntegrityError as exc:
        # Two planners racing for one key: the loser gets the same answer as a late one.
        raise Conflict(f"task {key} already exists", {"field": "key"}) from exc


def _insert_task(
    project,
    goal,
    key,
    description,
    priority,
    now,
    spec_ref,
    done_when,
    scope,
    criticality,
    max_iterations,
    max_review_cycles,
    lease_duration_override,
    supersedes,
    needs_human_approval=False,
) -> Task:
    return Task.objects.create(
        project=project,
        goal=goal,
        key=key,
        description=clean_text(description, "description"),
        priority=priority,
        created=now,
        updated=now,
        spec_ref=clean_text(spec_ref, "spec_ref", required=False, max_length=500),
        done_when=clean_text(done_when, "done_when", required=False),
        scope=clean_text(scope, "scope", required=False),
        criticality=criticality,
        max_iterations=max_iterations,
        max_review_cycles=max_review_cycles,
        lease_duration_override=lease_duration_override,
        supersedes=supersedes,
        needs_human_approval=needs_human_approval,
    )


@records_refusals
def task_create(
    *,
    project: Project,
    actor: Actor,
    key: str,
    description: str,
    now: datetime,
    depends_on: Sequence[str] = (),
    sprint_scope: str | None = None,
    **fields: Any,
) -> Task:
    """The planner writes a new DRAFT task (coders must ignore it until it is finalized)."""
    require_role(actor, project, agent_roles=PLANNER)
    if sprint_scope not in (None, "planned", "stretch"):
        raise ProtocolValidationError("sprint_scope", "planned, stretch or null")
    with transaction.atomic():
        task = _new_task(project=project, key=key, description=description, now=now, **fields)
        if depends_on:
            deps = _resolve_keys(project, depends_on, "depends_on")
            task.depends_on.set(deps)
        if sprint_scope:
            sprint = open_sprint(project)
            if sprint is None:
                raise ProtocolValidationError("sprint_scope", "the project has no open sprint")
            getattr(sprint, sprint_scope).add(task)
        record_event(
            project=project,
            actor=actor,
            action="created",
            task=task,
            now=now,
            to_status=task.status,
            detail=f"{task.key}: {task.description}",
        )
    return task


@records_refusals
def task_set_dependencies(
    *, task: Task, actor: Actor, depends_on: Sequence[str], now: datetime
) -> Task:
    """Replace depends_on; cycles and unknown keys are refused with 400 naming the field."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    with transaction.atomic():
        # Dependency edits serialize per project: two concurrent edits could each pass the
        # cycle check against the other's uncommitted graph and close a loop together.
        Project.objects.select_for_update().get(pk=project.pk)
        task = lock_task(task)
        if task.is_terminal:
            raise ProtocolValidationError("depends_on", f"{task.key} is {task.status}")
        deps = _resolve_keys(project, depends_on, "depends_on")
        if any(d.pk == task.pk for d in deps):
            raise ProtocolValidationError("depends_on", f"{task.key} cannot depend on itself")
        if task.status == "CLAIMED" and any(d.status != "MERGED" for d in deps):
            raise ProtocolValidationError(
                "depends_on", "a CLAIMED task's dependencies must all be MERGED"
            )
        _check_no_cycle(task, deps)
        task.depends_on.set(deps)
        _save(task, now)
        record_event(
            project=project,
            actor=actor,
            action="dependencies_set",
            task=task,
            now=now,
            detail=f"{task.key} depends on {', '.join(d.key for d in deps) or 'nothing'}",
            data={"depends_on": [d.key for d in deps]},
        )
    return task


@records_refusals
def task_finalize(*, task: Task, actor: Actor, now: datetime) -> Task:
    """DRAFT → UNCLAIMED: needs done_when and spec_ref (seed 002)."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task, ["DRAFT"], to="UNCLAIMED", action="finalize", actor=actor, now=now
        )
        for field in ("done_when", "spec_ref"):
            if not getattr(task, field):
                raise ProtocolValidationError(field, "is required to finalize a DRAFT task")
        _fsm(task, "finalize", actor=actor, project=project, now=now, to="UNCLAIMED")
        _save(task, now)
        record_event(
            project=project,
            actor=actor,
            action="finalized",
            task=task,
            now=now,
            from_status="DRAFT",
            to_status="UNCLAIMED",
            detail=f"{task.key} ready to claim",
        )
    return task


# ---------------------------------------------------------------------------------------------
# claims (seed 000 "Transition Requirements"; SPEC §5.1, §6)
# ---------------------------------------------------------------------------------------------


def claim_candidates(
    project: Project, agent_id: str, now: datetime, config: ProjectConfig
) -> list[Any]:
    """Querysets in seed order: own REJECTED, INTEGRATION_FAILED, UNCLAIMED, expired CLAIMED."""
    from django.db.models import Exists, OuterRef

    # A suspended task (seed 004 SUSPENDED, an overlay) is claimable by nobody until resumed.
    base = Task.objects.filter(project=project, suspended_at__isnull=True)
    unmet = Task.depends_on.through.objects.filter(from_task_id=OuterRef("pk")).exclude(
        to_task__status="MERGED"
    )
    order = ("priority", "created", "id")
    stale = now - timedelta(seconds=config.lease_grace)
    return [
        base.filter(status="REJECTED", assigned_to=agent_id).order_by(*order),
        base.filter(status="INTEGRATION_FAILED").order_by(*order),
        base.filter(status="UNCLAIMED").filter(~Exists(unmet)).order_by(*order),
        base.filter(status="CLAIMED", lease_expires__lt=stale)
        .filter(~Exists(unmet))
        .order_by(*order),
    ]


def _holder_task(agent: Agent) -> Task | None:
    """The task a coder already holds: one at a time among CLAIMED, READY_FOR_REVIEW and
    REJECTED (seed 000 agent machine; "No two agents assigned to same task")."""
    return (
        Task.objects.filter(
            project_id=agent.project_id,
            assigned_to=agent.agent_id,
            status__in=p.ACTIVE_CODER_STATES,
        )
        .only("key", "status")
        .first()
    )


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
    same_coder = previous == agent.agent_id
    from_status = task.status

    # Raises _HolderBusy before anything is changed.
    old_holder = _lock_previous_holder(project, previous) if previous and not same_coder else None
    if from_status == "REJECTED" and not same_coder:
        # SPEC §5.1: another coder may take a REJECTED task only once its coder's lease is dead.
        owner = old_holder
        if owner is not None and owner.has_live_lease(now):
            raise refusal(
                Conflict(f"{task.key} is being reworked by {previous}", {"task": task.key}),
                project=project,
                actor=agent,
                action="claim",
                now=now,
                task=task,
                to_status="CLAIMED",
            )

    takeover = bool(previous) and not same_coder and from_status in ("REJECTED", "CLAIMED")
    if takeover:
        # "failed_by gets the coder appended when ... another coder takes it over" (SPEC §5.1).
        _append_failed_by(task, previous)
        if _hypothesis_exhausted(task):
            _release_agent(old_holder, task, lost="blocked: hypothesis exhaustion")
            _limit_block(task, now=now, config=config, limit="hypothesis_exhaustion")
            return None

    if same_coder and from_status in ("REJECTED", "INTEGRATION_FAILED"):
        # Same coder continues: worktree and review counters kept, one more iteration.
        task.iteration = (task.iteration or 0) + 1
        if not task.worktree:
            task.worktree = worktree or f".worktrees/{task.key}"
    else:
        # New holder (seed 000): review_cycles_current reset, iteration 1, fresh worktree —
        # except INTEGRATION_FAILED, which keeps the worktree to resolve the failed merge.
        task.assigned_to = agent.agent_id
        task.review_cycles_current = 0
        task.iteration = 1
        if from_status != "INTEGRATION_FAILED" or not task.worktree:
            task.worktree = worktree or f".worktrees/{task.key}"

    if from_status == "INTEGRATION_FAILED":
        task.integration_fix = True
    if base_commit:
        task.base_commit = base_commit
    if not task.integration_fix and not task.base_commit:
        raise refusal(
            ProtocolValidationError("base_commit", "integration HEAD at claim time is required"),
            project=project,
            actor=agent,
            action="claim",
            now=now,
            task=task,
            to_status="CLAIMED",
        )
    task.lease_expires = task.lease_until(now=now, config=config)

    if from_status != "CLAIMED":
        method = {
            "UNCLAIMED": "claim",
            "REJECTED": "reclaim",
            "INTEGRATION_FAILED": "claim_integration_fix",
        }[from_status]
        _fsm(task, method, actor=agent, project=project, now=now, to="CLAIMED")
    _save(task, now)

    if old_holder is not None:
        _release_agent(old_holder, task, lost=f"taken over by {agent.agent_id}")
    if agent.status == "STARTING":
        agent.ready()
    if agent.status == "WAITING":
        agent.resume_work()
    elif agent.status == "IDLE":
        agent.start_work()
    # WORKING stays WORKING: the coder lost its previous task and goes straight on.
    agent.current_task = task
    agent.lost_task, agent.lost_reason = None, ""
    agent.iterations_total += 1
    agent.lease_expires = max(filter(None, [agent.lease_expires, task.lease_expires]))
    agent.heartbeat = now
    agent.save()

    action = "claimed" if from_status != "CLAIMED" else "reassigned"
    detail = f"{task.key}: {task.description}"
    if takeover:
        detail = f"{task.key} taken over from {previous} (lease expired)"
    elif task.integration_fix and from_status == "INTEGRATION_FAILED":
        detail = f"{task.key}: integration fix"
    record_event(
        project=project,
        actor=agent,
        action=action,
        task=task,
        now=now,
        from_status=from_status,
        to_status="CLAIMED",
        detail=detail,
        data={
            "iteration": task.iteration,
            "lease_expires": p.format_timestamp(task.lease_expires),
            **({"previous": previous} if takeover else {}),
        },
    )
    return task


def _check_claimer(
    project: Project, agent: Agent, now: datetime, *, task: Task | None
) -> Task | None:
    """Who may claim now; returns the agent's own REJECTED task, which it must take first."""
    require_role(agent, project, agent_roles=CODER, human=None)
    refuse_if_stopped(project, actor=agent, action="claim", now=now, task=task)
    if agent.status == "HANDOFF":
        raise refusal(
            Conflict(f"{agent.agent_id} handed off; register again to start fresh"),
            project=project,
            actor=agent,
            action="claim",
            now=now,
            task=task,
        )
    held = _holder_task(agent)
    if held is None or (task is not None and held.pk == task.pk):
        return None
    if held.status == "REJECTED" and task is None:
        return held
    raise refusal(
        Conflict(f"{agent.agent_id} already holds {held.key} ({held.status})", {"task": held.key}),
        project=project,
        actor=agent,
        action="claim",
        now=now,
        task=task,
    )


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
        # The agent row first: a second claim by the same coder waits here, then sees the
        # task the first one took (one task at a time, seed 000).
        agent = lock_agent(agent)
        _check_claimer(project, agent, now, task=task)
        task = lock_task(task)
        if task.is_suspended:
            raise refusal(
                Conflict(
                    f"{task.key} is suspended: {task.suspended_reason}",
                    {"task": task.key, "suspended": True},
                ),
                project=project,
                actor=agent,
                action="claim",
                now=now,
                task=task,
                to_status="CLAIMED",
            )
        if task.status == "CLAIMED":
            if task.assigned_to == agent.agent_id or lease_alive(task.lease_expires, now, config):
                raise refusal(
                    Conflict(
                        f"{task.key} is already claimed by {task.assigned_to}", {"task": task.key}
                    ),
                    project=project,
                    actor=agent,
                    action="claim",
                    now=now,
                    task=task,
                    to_status="CLAIMED",
                )
        else:
            require_task_status(
                task,
                ["UNCLAIMED", "REJECTED", "INTEGRATION_FAILED"],
                to="CLAIMED",
                action="claim",
                actor=agent,
                now=now,
            )
        if task.status in ("UNCLAIMED", "CLAIMED"):
            waiting = list(task.depends_on.exclude(status="MERGED").values_list("key", flat=True))
            if waiting:
                raise refusal(
                    Conflict(
                        f"{task.key} waits on {', '.join(waiting)}",
                        {"task": task.key, "waiting_on": waiting},
                    ),
                    project=project,
                    actor=agent,
                    action="claim",
                    now=now,
                    task=task,
                    to_status="CLAIMED",
                )
        task.project = project  # already loaded: spare _claim_locked a query
        try:
            claimed = _claim_locked(
                task, agent, now=now, config=config, worktree=worktree, base_commit=base_commit
            )
        except _HolderBusy as exc:
            raise refusal(
                Conflict(
                    f"{task.key}: its holder {task.assigned_to} is active right now; try again",
                    {"task": task.key},
                ),
                project=project,
                actor=agent,
                action="claim",
                now=now,
                task=task,
                to_status="CLAIMED",
            ) from exc
        blocked = claimed is None
    if blocked:
        # The limit's block is committed; the caller still did not get the task.
        raise Conflict(
            f"{task.key} was blocked: hypothesis exhaustion (two coders failed)",
            {"task": task.key, "status": "BLOCKED"},
        )
    return claimed


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
        agent = lock_agent(agent)  # before the holder check, as in task_claim
        own_rejected = _check_claimer(project, agent, now, task=None)
        querysets = claim_candidates(project, agent.agent_id, now, config)
        # Seed 000: REJECTED goes back to its own coder before it takes anything else; a coder
        # that holds nothing has no REJECTED task of its own, so that query is skipped.
        querysets = querysets[:1] if own_rejected is not None else querysets[1:]
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
                except _HolderBusy:
                    busy.append(task.pk)
                    continue
                if claimed is not None:
                    return claimed
                # A limit blocked that one; it left the queryset, try the next.
    return None


# ---------------------------------------------------------------------------------------------
# coder operations
# ---------------------------------------------------------------------------------------------


@records_refusals
def task_submit_for_review(
    *, task: Task, agent: Agent, review_commit: str, now: datetime, tree_clean: bool = True
) -> Task:
    """CLAIMED → READY_FOR_REVIEW with the commit under review (seed 002 Clean Sync)."""
    project = task.project
    require_role(agent, project, agent_roles=CODER, human=None)
    review_commit = clean_text(review_commit, "review_commit", max_length=64)
    if tree_clean is not True:
        raise ProtocolValidationError(
            "tree_clean", "the worktree must be clean before review (seed 002 Clean Sync)"
        )
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            ["CLAIMED"],
            to="READY_FOR_REVIEW",
            action="submit_for_review",
            actor=agent,
            now=now,
        )
        require_lease_holder(task, agent, action="submit_for_review", now=now, config=config)
        agent = lock_agent(agent)
        task.review_commit = review_commit
        # "When task transitions to READY_FOR_REVIEW, the coder's lease becomes inactive."
        task.lease_expires = None
        _fsm(
            task, "submit_for_review", actor=agent, project=project, now=now, to="READY_FOR_REVIEW"
        )
        _save(task, now)
        if agent.status == "WORKING":
            agent.wait_for_review()
            agent.save()
        record_event(
            project=project,
            actor=agent,
            action="ready_for_review",
            task=task,
            now=now,
            from_status="CLAIMED",
            to_status="READY_FOR_REVIEW",
            detail=f"Iteration {task.iteration or 1}, commit {review_commit}",
            data={"commit": review_commit, "iteration": task.iteration},
        )
    return task


@records_refusals
def task_block(
    *,
    task: Task,
    agent: Agent,
    reason: str,
    questions: Sequence[str],
    now: datetime,
    attempted: Sequence[str] = (),
) -> Task:
    """The coder cannot proceed: CLAIMED → BLOCKED with a diagnosis (seed 002 Mark blocked)."""
    project = task.project
    require_role(agent, project, agent_roles=CODER, human=None)
    reason = clean_text(reason, "reason", max_length=2000)
    questions = clean_string_list(
        list(questions or []), "questions", min_items=1, max_items=p.MAX_BLOCKED_QUESTIONS
    )
    attempted = clean_string_list(list(attempted or []), "attempted")
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(task, ["CLAIMED"], to="BLOCKED", action="block", actor=agent, now=now)
        require_lease_holder(task, agent, action="block", now=now, config=config)
        agent = lock_agent(agent)
        task.blocked_reason = reason
        task.blocked_questions = questions
        task.attempted = [*task.attempted, *attempted]
        task.lease_expires = None
        _append_failed_by(task, agent.agent_id)
        exhausted = _hypothesis_exhausted(task)
        if exhausted:
            task.blocked_reason = (
                f"Hypothesis exhaustion: {len(set(task.failed_by))} coders failed "
                f"({', '.join(task.failed_by)}). Last: {reason}"
            )
        _fsm(task, "block", actor=agent, project=project, now=now, to="BLOCKED")
        _save(task, now)
        _release_agent(agent, task)
        record_event(
            project=project,
            actor=agent,
            action="blocked",
            task=task,
            now=now,
            from_status="CLAIMED",
            to_status="BLOCKED",
            detail=reason,
            data={"questions": questions},
        )
        if exhausted:
            _limit_anomaly(task, now=now, limit="hypothesis_exhaustion")
    return task


# ---------------------------------------------------------------------------------------------
# limits (SPEC §5.1): the system override-blocks and records the anomaly
# ---------------------------------------------------------------------------------------------

LIMIT_QUESTIONS = {
    "review_deadlock": [
        "Is the spec for this task ambiguous or contradictory?",
        "Should the task be rescoped or split?",
    ],
    "max_iterations": [
        "Is the task too large for one coder?",
        "Should the task be rescoped or abandoned?",
    ],
    "hypothesis_exhaustion": [
        "What did both coders miss: is the spec incomplete?",
        "Should the task be split into smaller tasks?",
    ],
}


def _limit_reason(task: Task, config: ProjectConfig, limit: str) -> str:
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
    return (
        f"Hypothesis exhaustion: {len(set(task.failed_by))} coders failed "
        f"({', '.join(task.failed_by)})"
    )


def _limit_anomaly(task: Task, *, now: datetime, limit: str) -> None:
    # max_iterations has no anomaly type of its own in seed 002; a coder looping over the same
    # rejection is what `retry_loop` records.
    if limit == "max_iterations":
        kind, details = (
            "retry_loop",
            {"count": task.iteration, "error_pattern": task.rejection_reason or "rejected"},
        )
    else:
        kind, details = (
            limit,
            {
                "failed_by": list(task.failed_by),
                "review_cycles_current": task.review_cycles_current,
            },
        )
    Anomaly.objects.create(
        project=task.project,
        task=task,
        timestamp=now,
        reporter=SYSTEM.name,
        type=kind,
        details=details,
    )


def _limit_block(task: Task, *, now: datetime, config: ProjectConfig, limit: str) -> None:
    """Override-block `task` (locked) because `limit` was reached."""
    from_status = task.status
    task.blocked_reason = _limit_reason(task, config, limit)
    task.blocked_questions = LIMIT_QUESTIONS[limit]
    task.lease_expires = None
    _fsm(task, "override_block", actor=SYSTEM, project=task.project, now=now, to="BLOCKED")
    _save(task, now)
    record_event(
        project=task.project,
        actor=SYSTEM,
        action="blocked",
        task=task,
        now=now,
        from_status=from_status,
        to_status="BLOCKED",
        detail=task.blocked_reason,
        data={"limit": limit},
    )
    _limit_anomaly(task, now=now, limit=limit)


def limit_reached(task: Task, config: ProjectConfig) -> str | None:
    """Which limit a just-rejected task hit, if any."""
    if task.review_cycles_current >= task.effective_max_review_cycles(config):
        return "review_deadlock"
    if (task.iteration or 0) >= task.effective_max_iterations(config):
        return "max_iterations"
    return None


def is_limit_blocked(task: Task, config: ProjectConfig) -> bool:
    """An exhausted BLOCKED task leaves only by rescope, abandon or a human's written release."""
    return (
        _hypothesis_exhausted(task)
        or task.review_cycles_current >= task.effective_max_review_cycles(config)
        or (task.iteration or 0) >= task.effective_max_iterations(config)
    )


# ---------------------------------------------------------------------------------------------
# reviewer operations
# ---------------------------------------------------------------------------------------------


@records_refusals
def task_report_merge(*, task: Task, agent: Agent, merge_commit: str, now: datetime) -> Task:
    """APPROVED → MERGED, by an approving reviewer; the worktree is cleaned up (seed 000)."""
    project = task.project
    require_role(agent, project, agent_roles=REVIEWER, human=None)
    merge_commit = clean_text(merge_commit, "merge_commit", max_length=64)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(task, ["APPROVED"], to="MERGED", action="merge", actor=agent, now=now)
        _require_approver(task, agent, now=now, action="merge")
        task.merge_commit = merge_commit
        task.worktree = ""
        task.lease_expires = None
        task.handoff_pending = False
        _fsm(task, "merge", actor=agent, project=project, now=now, to="MERGED")
        _save(task, now)
        record_event(
            project=project,
            actor=agent,
            action="merged",
            task=task,
            now=now,
            from_status="APPROVED",
            to_status="MERGED",
            detail=f"{task.key} merged as {merge_commit}",
            data={"merge_commit": merge_commit},
        )
        _after_terminal(task, now=now)
    return task


@records_refusals
def task_report_integration_failure(
    *, task: Task, agent: Agent, reason: str, now: datetime
) -> Task:
    """APPROVED → INTEGRATION_FAILED: merge conflict or failing integration tests."""
    project = task.project
    require_role(agent, project, agent_roles=REVIEWER, human=None)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            ["APPROVED"],
            to="INTEGRATION_FAILED",
            action="integration_failure",
            actor=agent,
            now=now,
        )
        _require_approver(task, agent, now=now, action="integration_failure")
        _fsm(
            task, "fail_integration", actor=agent, project=project, now=now, to="INTEGRATION_FAILED"
        )
        _save(task, now)
        record_event(
            project=project,
            actor=agent,
            action="integration_failed",
            task=task,
            now=now,
            from_status="APPROVED",
            to_status="INTEGRATION_FAILED",
            detail=reason,
        )
    return task


def _require_approver(task: Task, agent: Agent, *, now: datetime, action: str) -> None:
    if agent.agent_id not in (task.approved_by or []):
        raise refusal(
            Forbidden(f"only an approving reviewer of {task.key} may report its merge"),
            project=task.project,
            actor=agent,
            action=action,
            now=now,
            task=task,
        )


# ---------------------------------------------------------------------------------------------
# resolving BLOCKED (planner and humans) and the override block
# ---------------------------------------------------------------------------------------------


@records_refusals
def task_release(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → UNCLAIMED: failed_by kept, worktree deleted (seed 000 requirements).

    A task blocked by a limit returns only by a human's written release (SPEC §5.1).
    """
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task, ["BLOCKED"], to="UNCLAIMED", action="release", actor=actor, now=now
        )
        if is_limit_blocked(task, config) and not is_human(actor):
            raise refusal(
                Forbidden(
                    f"{task.key} reached a limit ({task.blocked_reason}); only rescope, "
                    "abandon or a human's written release can move it"
                ),
                project=project,
                actor=actor,
                action="release",
                now=now,
                task=task,
                to_status="UNCLAIMED",
            )
        previous = task.assigned_to
        task.worktree = ""
        task.base_commit = ""
        task.assigned_to = ""
        task.lease_expires = None
        task.integration_fix = False
        task.blocked_reason = ""
        task.blocked_questions = []
        _fsm(task, "release", actor=actor, project=project, now=now, to="UNCLAIMED")
        _save(task, now)
        holder = _agent_row(project, previous)
        if holder is not None and holder.current_task_id == task.pk:
            _release_agent(holder, task, lost="released to UNCLAIMED")
        if is_human(actor):
            # The answer is what the next coder needs: it travels with the task (seed 002).
            HumanNote.objects.create(
                project=project, task=task, timestamp=now, message=reason, author=actor
            )
        record_event(
            project=project,
            actor=actor,
            action="released",
            task=task,
            now=now,
            from_status="BLOCKED",
            to_status="UNCLAIMED",
            detail=reason,
        )
    return task


@records_refusals
def task_abandon(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → ABANDONED with a rationale."""
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task, ["BLOCKED"], to="ABANDONED", action="abandon", actor=actor, now=now
        )
        task.worktree = ""
        task.lease_expires = None
        _fsm(task, "abandon", actor=actor, project=project, now=now, to="ABANDONED")
        _save(task, now)
        record_event(
            project=project,
            actor=actor,
            action="abandoned",
            task=task,
            now=now,
            from_status="BLOCKED",
            to_status="ABANDONED",
            detail=reason,
        )
        _after_terminal(task, now=now)
    return task


@records_refusals
def task_rescope(
    *, task: Task, actor: Actor, reason: str, new_tasks: Sequence[dict[str, Any]], now: datetime
) -> list[Task]:
    """BLOCKED → SUPERSEDED, replaced by new tasks (seed 002 Rescope task).

    The new tasks carry `supersedes`, inherit the old task's dependencies unless they name
    their own, take its place in every dependent's depends_on and in the sprint scope, and the
    goal's alignment_history records the change.
    """
    project = task.project
    require_role(actor, project, agent_roles=PLANNER)
    reason = clean_text(reason, "reason", max_length=2000)
    if not isinstance(new_tasks, list | tuple) or not new_tasks:
        raise ProtocolValidationError("new_tasks", "at least one replacement task is required")
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task, ["BLOCKED"], to="SUPERSEDED", action="rescope", actor=actor, now=now
        )
        old_deps = list(task.depends_on.all())
        created: list[Task] = []
        for index, spec in enumerate(new_tasks):
            if not isinstance(spec, dict):
                raise ProtocolValidationError(f"new_tasks[{index}]", "must be an object")
            spec = dict(spec)
            deps = spec.pop("depends_on", None)
            allowed = {
                "key",
                "description",
                "priority",
                "spec_ref",
                "done_when",
                "scope",
                "criticality",
                "max_iterations",
                "max_review_cycles",
                "lease_duration_override",
                "needs_human_approval",
            }
            unknown = sorted(set(spec) - allowed)
            if unknown:
                raise ProtocolValidationError(
                    f"new_tasks[{index}]", f"unknown field(s) {', '.join(unknown)}"
                )
            spec.setdefault("priority", task.priority)
            spec.setdefault("spec_ref", task.spec_ref)
            spec.setdefault("criticality", task.criticality)
            if task.needs_human_approval:
                # The human gate travels to the replacements (seed 004 APPROVAL_REQUIRED).
                spec.setdefault("needs_human_approval", True)
            try:
                new = _new_task(project=project, now=now, supersedes=task.key, **spec)
            except TypeError as exc:
                raise ProtocolValidationError(
                    f"new_tasks[{index}]", "key and description are required"
                ) from exc
            record_event(
                project=project,
                actor=actor,
                action="created",
                task=new,
                now=now,
                to_status=new.status,
                detail=f"{new.key} (rescoped from {task.key})",
            )
            dep_tasks = (
                old_deps
                if deps is None
                else _resolve_keys(
                    project,
                    [d for d in deps if d not in {c.key for c in created}],
                    f"new_tasks[{index}].depends_on",
                )
                + [c for c in created if c.key in (deps or [])]
            )
            new.depends_on.set(dep_tasks)
            if new.done_when and new.spec_ref:
                new.finalize()
                _save(new, now)
                record_event(
                    project=project,
                    actor=actor,
                    action="finalized",
                    task=new,
                    now=now,
                    from_status="DRAFT",
                    to_status="UNCLAIMED",
                    detail=f"{new.key} ready to claim",
                )
            created.append(new)
        for dependent in task.dependents.all():
            dependent.depends_on.remove(task)
            dependent.depends_on.add(*created)
        for sprint in Sprint.objects.filter(project=project, planned=task):
            sprint.planned.add(*created)
        for sprint in Sprint.objects.filter(project=project, stretch=task):
            sprint.stretch.add(*created)
        task.superseded_by = [c.key for c in created]
        task.rescope_reason = reason
        task.worktree = ""
        task.lease_expires = None
        _fsm(task, "supersede", actor=actor, project=project, now=now, to="SUPERSEDED")
        _save(task, now)
        keys = ", ".join(task.superseded_by)
        goal = task.goal or Goal.objects.filter(project=project, status="IN_PROGRESS").first()
        if goal is not None:
            from boards.services.goals import goal_record_alignment

            goal_record_alignment(
                goal=goal,
                event=f"rescope_{task.key}",
                summary=f"{task.key} split into {keys}: {reason}",
                now=now,
            )
        record_event(
            project=project,
            actor=actor,
            action="rescoped",
            task=task,
            now=now,
            from_status="BLOCKED",
            to_status="SUPERSEDED",
            detail=f"SUPERSEDED → {keys} ({reason})",
            data={"superseded_by": task.superseded_by},
        )
        _after_terminal(task, now=now)
    return created


@records_refusals
def task_override_block(
    *, task: Task, actor: Actor, reason: str, now: datetime, questions: Sequence[str] = ()
) -> Task:
    """SPEC §5.1 override block: a human admin (or the system) blocks any non-terminal task.

    Never available to agents. Whoever held the task is released; its next write gets
    lease_lost and exits 42.
    """
    project = task.project
    if is_agent(actor):
        raise refusal(
            InvalidTransition(
                from_status=task.status,
                to_status="BLOCKED",
                allowed=p.task_targets(task.status),
                message="agents cannot override-block a task",
            ),
            project=project,
            actor=actor,
            action="override_block",
            now=now,
            task=task,
            to_status="BLOCKED",
        )
    require_role(actor, project, agent_roles=(), system=True)
    reason = clean_text(reason, "reason", max_length=2000)
    questions = clean_string_list(
        list(questions or []), "questions", max_items=p.MAX_BLOCKED_QUESTIONS
    )
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            p.OVERRIDE_BLOCK_SOURCES,
            to="BLOCKED",
            action="override_block",
            actor=actor,
            now=now,
        )
        from_status = task.status
        task.blocked_reason = reason
        task.blocked_questions = questions or [f"What should happen to {task.key}?"]
        task.lease_expires = None
        if from_status == "READY_FOR_REVIEW":
            _close_review_round(task, now)
        _fsm(task, "override_block", actor=actor, project=project, now=now, to="BLOCKED")
        _save(task, now)
        holder = _agent_row(project, task.assigned_to)
        if holder is not None and holder.current_task_id == task.pk:
            _release_agent(holder, task, lost=f"override-blocked: {reason}")
        record_event(
            project=project,
            actor=actor,
            action="override_blocked",
            task=task,
            now=now,
            from_status=from_status,
            to_status="BLOCKED",
            detail=reason,
            data={"questions": task.blocked_questions},
        )
    return task
