"""Reads (STYLE.md selectors): every query takes the project, so none can cross tenants."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum
from django.http import Http404

from boards import protocol as p
from boards.models import Event, Project, Sprint, Task

IN_PROGRESS_STATES = ("CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED", "INTEGRATION_FAILED")


def project_get(*, slug: str) -> Project:
    project = Project.objects.select_related("config").filter(slug=slug).first()
    if project is None:
        raise Http404("No such project.")
    return project


def task_get(*, project: Project, key: str) -> Task:
    """The task `key` of `project`; another project's task is as missing as a non-existent one."""
    task = Task.objects.filter(project=project, key=key).select_related("project").first()
    if task is None:
        raise Http404("No such task.")
    return task


def task_list(*, project: Project) -> QuerySet[Task]:
    return Task.objects.filter(project=project)


def task_history(*, task: Task) -> QuerySet[Event]:
    return Event.objects.filter(project_id=task.project_id, task=task).order_by("timestamp", "id")


def sprint_open(*, project: Project) -> Sprint | None:
    return Sprint.objects.filter(project=project, status__in=["IN_PROGRESS", "CHECKPOINT"]).first()


def sprint_metrics(sprint: Sprint) -> dict[str, object]:
    """Seed 002 `sprint.metrics`, computed over the sprint's planned tasks.

    Seed 002's example fixes the reading: with task-1 MERGED and task-4 SUPERSEDED it counts
    tasks_done 2 (terminal), task-2 REJECTED is "in progress", and the stretch task-6 is not
    among tasks_blocked.
    """
    planned = Task.objects.filter(planned_in=sprint)
    counts = planned.aggregate(
        tasks_done=Count("id", filter=Q(status__in=p.TERMINAL_TASK_STATES)),
        tasks_in_progress=Count("id", filter=Q(status__in=IN_PROGRESS_STATES)),
        tasks_blocked=Count("id", filter=Q(status="BLOCKED")),
        iterations_total=Sum("iteration", default=0),
        review_cycles_total=Sum("review_cycles_total", default=0),
    )
    events = Event.objects.filter(
        project_id=sprint.project_id, task__in=planned, outcome=Event.Outcome.APPLIED
    )
    if sprint.started:
        events = events.filter(timestamp__gte=sprint.started)
    verdicts = events.aggregate(
        approvals=Count("id", filter=Q(action="approved")),
        rejections=Count("id", filter=Q(action="rejected")),
        submitted=Count("id", filter=Q(action="ready_for_review")),
    )
    approvals, rejections = verdicts["approvals"], verdicts["rejections"]
    verdict_count = approvals + rejections
    approval_rate = round(100 * approvals / verdict_count) if verdict_count else None
    submitted = verdicts["submitted"]
    return {
        **counts,
        "review_verdict_approvals": approvals,
        "review_verdict_rejections": rejections,
        "review_verdict_count": verdict_count,
        "review_verdict_approval_rate_percent": approval_rate,
        "task_submitted_for_review_count": submitted,
        "task_outcome_approval_rate_percent": (
            round(100 * approvals / submitted) if submitted else None
        ),
        # SPEC §9: rubber-stamping warning above 95 % approvals over at least 5 verdicts.
        "rubber_stamp_warning": bool(
            approval_rate is not None and verdict_count >= 5 and approval_rate > 95
        ),
    }


def work_for_role(*, project: Project, role: str, agent_id: str | None, now) -> dict[str, object]:
    """Seed 000 "Exit Code 0 Semantics" and "DRAFT Task Waiting" for one role.

    `exit` is 0 when the role is complete, 42 when the agent must stop (paused project or
    sprint at CHECKPOINT), None while work may still come; `retry_after` says when to ask again.
    """
    from boards.services.common import config_of, open_sprint

    config = config_of(project)
    tasks = Task.objects.filter(project=project)
    drafts = tasks.filter(status="DRAFT").count()
    result = {
        "role": role,
        "work": False,
        "exit": None,
        "waiting_for_drafts": drafts,
        "retry_after": None,
        "reason": "",
    }
    sprint = open_sprint(project)
    if project.is_paused or (sprint is not None and sprint.status == "CHECKPOINT"):
        stop = "paused" if project.is_paused else "checkpoint"
        return {**result, "exit": 42, "reason": f"project {stop}: stop and restart later"}
    if role == "coder":
        from boards.services.tasks import claim_candidates

        own = tasks.filter(assigned_to=agent_id or "", status__in=("CLAIMED",)).exists()
        candidates = claim_candidates(project, agent_id or "", now, config)
        work = own or any(qs.exists() for qs in candidates)
        complete = (
            not work and not tasks.filter(status="REJECTED", assigned_to=agent_id or "").exists()
        )
    elif role == "code_reviewer":
        ready = tasks.filter(status="READY_FOR_REVIEW")
        work = any(_review_slot_free(t, agent_id, now) for t in ready.prefetch_related("reviews"))
        complete = not ready.exists()
    elif role == "planner":
        from boards.models import Discovery, Goal

        work = (
            drafts > 0
            or tasks.filter(status="BLOCKED").exists()
            or Discovery.objects.filter(
                project=project, urgency="immediate", converted_to_task=""
            ).exists()
        )
        goal_open = Goal.objects.filter(project=project, status="IN_PROGRESS").exists()
        complete = (
            not work
            and not goal_open
            and not tasks.exclude(status__in=p.TERMINAL_TASK_STATES).exists()
        )
    else:
        raise ValueError(role)
    if work:
        return {**result, "work": True, "reason": "work is available"}
    if complete and not (drafts and role != "planner"):
        return {**result, "exit": 0, "reason": "role complete"}
    reason = (
        f"{drafts} DRAFT task(s) may be finalized soon"
        if drafts
        else "work is in progress elsewhere"
    )
    return {**result, "retry_after": config.coder_poll_interval, "reason": reason}


def _review_slot_free(task: Task, agent_id: str | None, now) -> bool:
    reviews = [r for r in task.reviews.all() if r.closed_at is None]
    if agent_id and (agent_id == task.assigned_to or any(r.reviewer == agent_id for r in reviews)):
        return False
    taken = [r for r in reviews if r.verdict == "APPROVED" or r.is_active(now)]
    return len(taken) < task.required_approvals


# ---------------------------------------------------------------------------------------------
# the board (SPEC §7): one read, a constant number of queries whatever the task count
# ---------------------------------------------------------------------------------------------

# Cards rendered per column; beyond it the column shows its count and asks for a filter, so a
# 5,000-task project stays usable. Terminal columns start collapsed (counts only).
COLUMN_CARD_LIMIT = 200
# Column order follows the flow of work; the terminal columns come last.
BOARD_COLUMNS: tuple[str, ...] = (
    "DRAFT",
    "UNCLAIMED",
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "INTEGRATION_FAILED",
    "BLOCKED",
    "MERGED",
    "SUPERSEDED",
    "ABANDONED",
)


@dataclass(frozen=True)
class BoardFilters:
    goal: str = ""
    sprint: str = ""  # "" = the open sprint (or everything when none is open), "all" = every task
    status: tuple[str, ...] = ()
    agent: str = ""
    priority: int | None = None
    criticality: str = ""
    q: str = ""
    expanded: tuple[str, ...] = ()  # terminal columns the viewer opened

    @classmethod
    def from_query(cls, params) -> BoardFilters:
        priority = params.get("priority") or ""
        return cls(
            goal=params.get("goal", "")[:64],
            sprint=params.get("sprint", "")[:64],
            status=tuple(s for s in params.getlist("status") if s in p.TASK_STATES),
            agent=params.get("agent", "")[:64],
            priority=int(priority) if priority.isdigit() and 1 <= int(priority) <= 5 else None,
            criticality=params.get("criticality", "")
            if params.get("criticality") in p.CRITICALITIES
            else "",
            q=params.get("q", "")[:200],
            expanded=tuple(s for s in params.getlist("open") if s in p.TERMINAL_TASK_STATES),
        )


def board_tasks(*, project: Project, filters: BoardFilters, sprint: Sprint | None) -> QuerySet:
    qs = Task.objects.filter(project=project)
    if filters.sprint == "all":
        pass
    elif filters.sprint:
        qs = qs.filter(
            Q(planned_in__sprint_id=filters.sprint) | Q(stretch_in__sprint_id=filters.sprint)
        )
    elif sprint is not None:
        qs = qs.filter(Q(planned_in=sprint) | Q(stretch_in=sprint))
    if filters.goal:
        qs = qs.filter(goal__goal_id=filters.goal)
    if filters.status:
        qs = qs.filter(status__in=filters.status)
    if filters.agent:
        qs = qs.filter(assigned_to=filters.agent)
    if filters.priority:
        qs = qs.filter(priority=filters.priority)
    if filters.criticality:
        qs = qs.filter(criticality=filters.criticality)
    if filters.q:
        qs = qs.filter(Q(key__icontains=filters.q) | Q(description__icontains=filters.q))
    return qs


@dataclass(frozen=True)
class Card:
    """What a board card shows (SPEC §7), built once for the page and for live events."""

    key: str
    description: str
    status: str
    priority: int
    criticality: str
    assigned_to: str
    lease_expires: str | None
    iteration: int | None
    max_iterations: int
    review_cycles_current: int
    max_review_cycles: int
    waiting_on: tuple[str, ...]
    blocked_reason: str
    reviewing_by: tuple[str, ...]
    review_lease_expires: str | None
    integration_fix: bool
    handoff_pending: bool
    terminal: bool


def _iso(value) -> str | None:
    return p.format_timestamp(value) if value else None


def card_for(task: Task, config, now) -> Card:
    """Needs `depends_on` and open `reviews` (prefetched on the board, fetched for one card)."""
    reviews = [r for r in task.reviews.all() if r.is_active(now)]
    review_leases = [r.lease_expires for r in reviews]
    return Card(
        key=task.key,
        description=task.description,
        status=task.status,
        priority=task.priority,
        criticality=task.criticality,
        assigned_to=task.assigned_to,
        lease_expires=_iso(task.lease_expires) if task.status == "CLAIMED" else None,
        iteration=task.iteration,
        max_iterations=task.effective_max_iterations(config),
        review_cycles_current=task.review_cycles_current,
        max_review_cycles=task.effective_max_review_cycles(config),
        waiting_on=tuple(sorted(d.key for d in task.depends_on.all() if d.status != "MERGED")),
        blocked_reason=task.blocked_reason if task.status == "BLOCKED" else "",
        reviewing_by=tuple(r.reviewer for r in reviews),
        review_lease_expires=_iso(min(review_leases)) if review_leases else None,
        integration_fix=task.integration_fix,
        handoff_pending=task.handoff_pending,
        terminal=task.is_terminal,
    )


def card_tasks(queryset: QuerySet) -> QuerySet:
    from django.db.models import Prefetch

    from boards.models import Review

    return queryset.prefetch_related(
        Prefetch("depends_on", queryset=Task.objects.only("id", "key", "status")),
        Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True)),
    )


@dataclass
class Column:
    status: str
    count: int
    cards: list[Card]
    terminal: bool
    expanded: bool

    @property
    def hidden(self) -> int:
        return self.count - len(self.cards)


def board_state(*, project: Project, filters: BoardFilters, now) -> dict[str, object]:
    """Everything the board page shows, in a constant number of queries."""
    from django.db.models import F, Window
    from django.db.models.functions import RowNumber

    from agents.models import Agent
    from boards.models import Alert

    header = board_header(project=project)
    config = header["config"]
    # "Active sprint by default": the open sprint's tasks, or every task when none is open.
    active = header["sprint"] if header["sprint"] is not None and header["sprint"].is_open else None
    tasks = board_tasks(project=project, filters=filters, sprint=active)
    counts = dict(tasks.order_by().values_list("status").annotate(n=Count("id")))
    shown = [s for s in p.TASK_STATES if s not in p.TERMINAL_TASK_STATES or s in filters.expanded]
    ranked = tasks.filter(status__in=shown).annotate(
        rank=Window(
            RowNumber(),
            partition_by=[F("status")],
            order_by=[F("priority").asc(), F("created").asc(), F("id").asc()],
        )
    )
    rows = list(
        card_tasks(ranked.filter(rank__lte=COLUMN_CARD_LIMIT)).order_by("priority", "created", "id")
    )
    by_status: dict[str, list[Card]] = {s: [] for s in p.TASK_STATES}
    for task in rows:
        by_status[task.status].append(card_for(task, config, now))
    columns = [
        Column(
            status=s,
            count=counts.get(s, 0),
            cards=by_status[s],
            terminal=s in p.TERMINAL_TASK_STATES,
            expanded=s not in p.TERMINAL_TASK_STATES or s in filters.expanded,
        )
        for s in BOARD_COLUMNS
    ]
    agents = list(
        Agent.objects.filter(project=project)
        .select_related("current_task")
        .order_by("role", "agent_id")
    )
    alerts = list(Alert.objects.filter(project=project, resolved_at__isnull=True)[:20])
    return {
        **header,
        "columns": columns,
        "agents": agents,
        "alerts": alerts,
        "filters": filters,
        "total": sum(counts.values()),
    }


def board_header(*, project: Project) -> dict[str, object]:
    """The board header: goal, sprint status and deadline, live metrics (seed 002)."""
    from boards.models import Goal
    from boards.services.common import config_of

    sprint = sprint_open(project=project) or (
        Sprint.objects.filter(project=project).order_by("-started", "-id").first()
    )
    goal = (
        Goal.objects.filter(project=project, status="IN_PROGRESS").first()
        or Goal.objects.filter(project=project).order_by("-created").first()
    )
    return {
        "project": project,
        "config": config_of(project),
        "goal": goal,
        "sprint": sprint,
        "metrics": sprint_metrics(sprint) if sprint else None,
    }


def time_in_states(*, task: Task, now) -> list[tuple[str, float]]:
    """Seconds spent in each state so far (seed 003 observability), from the event log."""
    spent: dict[str, float] = {}
    current, since = None, task.created
    for event in (
        task_history(task=task).filter(outcome=Event.Outcome.APPLIED).exclude(to_status="")
    ):
        if current is not None and since is not None:
            spent[current] = spent.get(current, 0.0) + (event.timestamp - since).total_seconds()
        current, since = event.to_status, event.timestamp
    if current is None:
        current = task.status
    if since is not None:
        spent[current] = spent.get(current, 0.0) + max(0.0, (now - since).total_seconds())
    return [(s, spent[s]) for s in p.TASK_STATES if s in spent]
