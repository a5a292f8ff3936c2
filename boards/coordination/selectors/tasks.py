"""Task reads: lookups, the claim queue, dependencies and limits (seed 000, seed 002)."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

from django.db import connection
from django.db.models import IntegerField, Prefetch, QuerySet
from django.db.models.expressions import RawSQL

from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Goal, Project, ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.availability import departed_refusal
from boards.coordination.selectors.budgets import exhausted_subjects
from boards.coordination.selectors.leases import lease_alive
from boards.protocol import AgentStatus, GoalStatus, TaskStatus

# What a task's API representation reads besides the row: dependencies and the open reviews.
TASK_PREFETCH = (
    "depends_on",
    Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True)),
)


def task_prefetch_one(task: Task) -> None:
    """`TASK_PREFETCH` for one task (the row a claim has just saved), in one statement where
    `prefetch_related_objects` takes two ORM queries (~1.5 ms of Python each to compile, a
    third of an HTTP claim-next's CPU: bench/README.md): its dependencies and its open reviews,
    in their models' orders, left where the ORM's prefetch leaves them."""
    sql, width = _prefetch_one_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [task.pk, task.pk])
        found = cursor.fetchall()
    dependencies = [rows.from_row(Task, r[1 : 1 + width]) for r in found if r[0] == 0]
    reviews = [rows.from_row(Review, r[1 + width :]) for r in found if r[0] == 1]
    for review in reviews:
        review.task = task  # as the ORM's prefetch of a reverse foreign key does
    cache = task.__dict__.setdefault("_prefetched_objects_cache", {})
    for name, held in (("depends_on", dependencies), ("reviews", reviews)):
        manager = getattr(task, name)
        queryset = manager._apply_rel_filters(_OPEN_REVIEWS) if name == "reviews" else None
        queryset = queryset if queryset is not None else manager.get_queryset()
        queryset._result_cache, queryset._prefetch_done = held, True
        # The key the manager reads its prefetched rows under (a many-to-many's, a reverse
        # foreign key's).
        key = getattr(manager, "prefetch_cache_name", None) or manager.field.remote_field.cache_name
        cache[key] = queryset


_OPEN_REVIEWS = TASK_PREFETCH[1].queryset


@cache
def _prefetch_one_sql() -> tuple[str, int]:
    """Both prefetches as one UNION ALL: (kind, a dependency's columns, a review's columns),
    the other kind's columns NULL. The orders are the models' (the ORM's prefetch orders by
    them too)."""
    deps, reviews = Task._meta, Review._meta
    nulls = ", ".join(["NULL"] * rows.width(Review))
    task_nulls = ", ".join(["NULL"] * rows.width(Task))
    through = deps.get_field("depends_on").remote_field.through._meta.db_table
    sql = (
        f"(SELECT 0 AS kind, {rows.select_list(Task, 't')}, {nulls} "
        f"FROM {deps.db_table} t JOIN {through} d ON d.to_task_id = t.id "
        f"WHERE d.from_task_id = %s ORDER BY t.priority, t.created, t.id) "
        f"UNION ALL (SELECT 1, {task_nulls}, {rows.select_list(Review, 'r')} "
        f"FROM {reviews.db_table} r WHERE r.task_id = %s AND r.closed_at IS NULL "
        f"ORDER BY r.claimed_at, r.id)"
    )
    return sql, rows.width(Task)


def task_get(*, project: Project, key: str) -> Task:
    """The task `key` of `project`; another project's task is as missing as a non-existent one."""
    return in_project(Task.objects.select_related("project"), project, what="task", key=key)


def task_list(*, project: Project) -> QuerySet[Task]:
    return Task.objects.filter(project=project).prefetch_related(*TASK_PREFETCH)


def tasks_by_keys(*, project: Project, keys: list[str]) -> tuple[list[Task], list[str]]:
    """The tasks named by `keys`, in that order, and the keys that name none."""
    found = {t.key: t for t in Task.objects.filter(project=project, key__in=keys)}
    return [found[k] for k in keys if k in found], [k for k in keys if k not in found]


# -- the claim queue (SPEC §6 claim next) -------------------------------------------------------


CLAIM_ORDER = ("priority", "created", "id")


# -- retry with backoff (seed 003, SPEC §13) ----------------------------------------------------
# A CLAIMED task whose lease died is a crashed attempt of its coder. It is claimable again (by
# that coder or, as a takeover, by another) at lease_expires + lease_grace + backoff[n], n the
# coder's crashes on it before this one (`Task.crashes`); once n reaches the schedule's length
# the expiry exhausts the retries: claimable at once after the grace, and the claim (or the
# watcher) blocks it instead (`retry_exhausts`). `retry_at` answers it for one row (a named
# claim's refusal, `/work`'s Retry-After); the queue asks `liza_claim_queue_v1` (below).


def retry_exhausts(task: Task, config: ProjectConfig) -> bool:
    """This dead lease is one crash more than the schedule has steps: the task is blocked
    (`retry_exhausted`) rather than given out again."""
    return task.crashes >= len(config.retry_backoff)


def retry_at(task: Task, config: ProjectConfig) -> datetime | None:
    """When the CLAIMED `task`, its lease dead, may be claimed again; None without a lease."""
    if task.lease_expires is None:
        return None
    wait = 0 if retry_exhausts(task, config) else config.retry_backoff[task.crashes]
    return task.lease_expires + timedelta(seconds=config.lease_grace + wait)


def retry_waits(task: Task, now: datetime, config: ProjectConfig) -> bool:
    """The CLAIMED `task`'s lease is dead but its backoff has not passed: nobody may claim it
    yet (claimable strictly after `retry_at`, as the queue's bound)."""
    at = retry_at(task, config)
    return at is not None and now <= at


# The queue's predicate is SQL, written once in a migration (boards 0021,
# `liza_claim_queue_v1`): the task row → its queue (1 the coder's own REJECTED, 2
# INTEGRATION_FAILED, 3 UNCLAIMED with its dependencies MERGED, 4 CLAIMED with a dead lease past
# its backoff) or NULL. tests/coordination/selectors/test_tasks_claim_queue.py holds it equal to a
# Python reference model of the rule, and `retry_at` above to its backoff bound.
CLAIM_QUEUES = (
    TaskStatus.REJECTED,
    TaskStatus.INTEGRATION_FAILED,
    TaskStatus.UNCLAIMED,
    TaskStatus.CLAIMED,
)


def claim_queue(agent_id: str, now: datetime, config: ProjectConfig) -> RawSQL:
    """The expression `liza_claim_queue_v1(task row, ...)`: which queue a task is in for this
    coder at `now`, NULL when it is not claimable. On the task row itself, so that a
    `FOR UPDATE SKIP LOCKED` pick re-checks it on the version it locks."""
    return RawSQL(
        f"liza_claim_queue_v1({Task._meta.db_table}.*, %s, %s, %s, %s::integer[])",
        (agent_id, now, config.lease_grace, [int(s) for s in config.retry_backoff]),
        output_field=IntegerField(),
    )


def claim_candidates(
    project: Project, agent_id: str, now: datetime, config: ProjectConfig
) -> list[QuerySet[Task]]:
    """Claimable tasks, as querysets in seed order: the coder's own REJECTED, then
    INTEGRATION_FAILED, then UNCLAIMED whose dependencies are all MERGED, then CLAIMED tasks
    whose lease is dead and whose retry backoff has passed (`retry_at`), each by priority then
    age — which is `liza_claim_queue_v1`'s answer (`claim_queue`).

    A suspended task (seed 004 SUSPENDED, an overlay), a task of a completed or aborted goal
    (SPEC §13) and a pending handoff are claimable by nobody. `task_claim` (a named claim)
    refuses the same tasks with its own words.
    """
    tasks = Task.objects.filter(project=project).alias(queue=claim_queue(agent_id, now, config))
    # The status filter only narrows the scan to the queue's state (an index); the function
    # alone decides whether the row is claimable.
    # Issue 24: a task whose own budget or whose goal's is spent waits for an admin to raise it
    # (the queue function decides the protocol's rule; a budget reads the usage rows).
    if spent := exhausted_subjects(project=project):
        tasks = tasks.exclude(spent)
    return [
        tasks.filter(status=status, queue=n).order_by(*CLAIM_ORDER)
        for n, status in enumerate(CLAIM_QUEUES, start=1)
    ]


def holder_task(*, project_id: int, agent_id: str) -> Task | None:
    """The task a coder holds: one at a time among CLAIMED, READY_FOR_REVIEW and REJECTED
    (seed 000 agent machine; "No two agents assigned to same task")."""
    return (
        Task.objects.filter(
            project_id=project_id, assigned_to=agent_id, status__in=p.ACTIVE_CODER_STATES
        )
        .only("key", "status", "lease_expires", "crashes", "handoff_pending")
        # By id, as claim-next's statement reads it (`liza_claim_v3`): the board's order
        # (priority, age) would pick another of two held tasks, which the protocol never makes
        # but a random board of the claims' property test did.
        .order_by("pk")
        .first()
    )


def claimer_refusal(
    agent, held: Task | None, *, task: Task | None, now: datetime, config: ProjectConfig
) -> str | None:
    """Why `agent` may not claim `task` (claim-next when None) now, or None when it may.

    One task at a time (seed 000 agent machine): a coder holding a task (`holder_task`) claims
    nothing else, except that claim-next gives it back its own REJECTED task, or its own CLAIMED
    task (under a live lease a restarted session goes on with it; under a dead one it is
    retried once its backoff has passed, `retry_at`); a coder that handed off, or left (its
    session ended, `agent_leave`: its heartbeat is `not_registered` too), registers again first.
    """
    if agent.status == AgentStatus.HANDOFF:
        return f"{agent.agent_id} handed off; register again to start fresh"
    if (departed := departed_refusal(agent)) is not None:
        return departed
    if held is None or (task is not None and held.pk == task.pk):
        return None
    if task is None and held.status in (TaskStatus.REJECTED, TaskStatus.CLAIMED):
        return None
    return f"{agent.agent_id} already holds {held.key} ({held.status})"


def claim_next_queues(
    held: Task | None, *, column_full: bool = False
) -> tuple[list[int], Task | None]:
    """Where claim-next looks for a coder holding `held` (`holder_task`, not refused by
    `claimer_refusal`, not its own live claim): the queues of `liza_claim_queue_v1`, and the one
    task it is limited to. Its own dead claim is retried once its backoff has passed, nothing
    else meanwhile (one task at a time); its own REJECTED task goes back to it before anything
    else (seed 000); a coder holding nothing has no REJECTED task of its own (queue 1 skipped).
    `column_full`: the CLAIMED column is at its enforced WIP limit (issue 24), so only a task
    already in it (a retry, a takeover) may be claimed."""
    if held is not None and held.status == TaskStatus.CLAIMED:
        return [4], held
    queues = [1] if held is not None else [2, 3, 4]
    if column_full:
        queues = [n for n in queues if CLAIM_QUEUES[n - 1] == TaskStatus.CLAIMED]
    return queues, None


def claim_limit(agent_id: str, config: ProjectConfig) -> RawSQL:
    """The expression `liza_claim_limit_v1(task row, ...)`: the limit that makes a claim of
    this task by `agent_id` block it instead of giving it out (NULL: it is given out). The rule
    `liza_claim_v2` asks for the task it picked (boards migration 0030)."""
    return RawSQL(
        f"liza_claim_limit_v1({Task._meta.db_table}.*, %s, %s::integer[])",
        (agent_id, [int(s) for s in config.retry_backoff]),
    )


def claim_next_available(
    *, project: Project, agent, now: datetime, config: ProjectConfig, column_full: bool = False
) -> bool:
    """Whether `task_claim_next` would now give `agent` a task: its own checks, read-only (what
    `/work` answers). A stop (pause, checkpoint, abort), availability and the enforced limits
    are the caller's to check (`column_full`: see `claim_next_queues`).

    The queue, the spent budgets and "the claim blocks it instead" are the claim's own SQL
    (`liza_claim_queue_v1`, `liza_claim_limit_v1`), asked in one statement: a task the claim
    would block is passed over, as claim-next passes over it once it blocked it."""
    held = holder_task(project_id=project.pk, agent_id=agent.agent_id)
    if claimer_refusal(agent, held, task=None, now=now, config=config) is not None:
        return False
    if (
        held is not None
        and held.status == TaskStatus.CLAIMED
        and lease_alive(held.lease_expires, now, config)
    ):
        return True  # its own live claim, handed back
    queues, only = claim_next_queues(held, column_full=column_full)
    if not queues:
        return False
    tasks = Task.objects.filter(
        project=project, status__in=[CLAIM_QUEUES[n - 1] for n in queues]
    ).alias(
        queue=claim_queue(agent.agent_id, now, config), limit=claim_limit(agent.agent_id, config)
    )
    if only is not None:
        tasks = tasks.filter(pk=only.pk)
    if spent := exhausted_subjects(project=project):
        tasks = tasks.exclude(spent)
    return tasks.filter(queue__in=queues, limit__isnull=True).exists()


def waiting_on(task: Task) -> list[str]:
    """The keys of the dependencies of `task` that are not MERGED yet (seed 002)."""
    return list(task.depends_on.exclude(status=TaskStatus.MERGED).values_list("key", flat=True))


def work_may_still_come(project: Project) -> str | None:
    """Why a coder or a code reviewer with nothing to do now is not role-complete yet (seed 000
    exit 0), or None once nothing more can come to either role. One rule for both roles,
    `/work`'s; the planner's is its own (`selectors.work`).

    - A task is open past DRAFT: work can still come back to either role — a rejection, a
      BLOCKED task released, a dead lease taken over, an approved task whose merge fails. Seed
      000's literal rules (a coder: "no UNCLAIMED and no REJECTED of its own"; a reviewer: "no
      READY_FOR_REVIEW") stop a supervisor while that work is on its way, and nobody is left to
      take it.
    - A goal is IN_PROGRESS: its planner has still to write tasks (INITIAL_PLANNING, a next
      sprint, a converted discovery) or to declare it done. Exit 0 is "role complete for this
      goal" (seed 000), and a goal ends only by the planner's (or a human's) `goal_complete` or a
      human's abort — never by itself, since a goal spans sprints and "every task ended" is also
      where a next sprint starts. So an open goal with no task yet, or with every task ended,
      keeps coders and reviewers waiting; the planner's `/work` has work exactly then, so the
      wait ends with its decision (more tasks, or the goal COMPLETED).

    DRAFT tasks alone are `/work`'s "waiting for drafts" (their own answer). docs/decisions.md,
    "Role complete"."""
    if (
        Task.objects.filter(project=project)
        .non_terminal()
        .exclude(status=TaskStatus.DRAFT)
        .exists()
    ):
        return "work is in progress elsewhere"
    goal_id = (
        Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS)
        .values_list("goal_id", flat=True)
        .first()
    )
    if goal_id is not None:
        return f"goal {goal_id} is IN_PROGRESS: its planner may still write tasks or complete it"
    return None


# -- limits (SPEC §5.1) -------------------------------------------------------------------------


def hypothesis_exhausted(task: Task) -> bool:
    """Two distinct coders failed the same task (SPEC §5.1)."""
    return len(set(task.failed_by)) >= 2


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
        hypothesis_exhausted(task)
        or limit_reached(task, config) is not None
        or task.crashes > len(config.retry_backoff)  # blocked by `retry_exhausted`
    )


def dependency_cycle(task: Task, deps: list[Task]) -> list[str] | None:
    """The loop `task → deps` would close, as task keys, or None (seed 002 "no circular
    dependencies")."""
    target = task.pk
    stack = [d.pk for d in deps]
    seen: set[int] = set()
    parents: dict[int, int | None] = {d.pk: None for d in deps}
    edges = Task.depends_on.through.objects
    while stack:
        current = stack.pop()
        if current == target:
            keys = dict(Task.objects.filter(pk__in=[*parents, target]).values_list("pk", "key"))
            chain = []
            node: int | None = current
            while node is not None:
                chain.append(keys.get(node, "?"))
                node = parents.get(node)
            return [task.key, *reversed(chain)]
        if current in seen:
            continue
        seen.add(current)
        for nxt in edges.filter(from_task_id=current).values_list("to_task_id", flat=True):
            parents.setdefault(nxt, current)
            stack.append(nxt)
    return None
