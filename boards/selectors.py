"""Reads (STYLE.md selectors): every query takes the project, so none can cross tenants."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, Count, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL
from django.http import Http404

from boards import protocol as p
from boards.models import Event, Project, Review, Sprint, Task

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
        # Seed 000: "No UNCLAIMED tasks AND no REJECTED tasks assigned to this agent" — an
        # UNCLAIMED task still waiting on a dependency keeps the coder polling, and so does an
        # INTEGRATION_FAILED one (any coder may take it).
        complete = (
            not work
            and not tasks.filter(
                Q(status__in=("UNCLAIMED", "INTEGRATION_FAILED"))
                | Q(status="REJECTED", assigned_to=agent_id or "")
            ).exists()
        )
    elif role == "code_reviewer":
        ready = tasks.filter(status="READY_FOR_REVIEW")
        reviewable = ready.filter(suspended_at__isnull=True).prefetch_related("reviews")
        work = any(_review_slot_free(t, agent_id, now) for t in reviewable)
        complete = not ready.exists()
    elif role == "planner":
        from boards.models import Discovery, Goal

        work = (
            drafts > 0
            or tasks.filter(status="BLOCKED").exists()
            or Discovery.objects.filter(
                project=project, urgency="immediate", converted_to_task="", triage="open"
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
    suspended: bool = False
    awaiting_human_approval: bool = False


def _iso(value) -> str | None:
    return p.format_timestamp(value) if value else None


@dataclass(frozen=True, slots=True)
class _ReviewRow:
    """An open review claim as a card reads it (a plain row, no model instance)."""

    reviewer: str
    verdict: str
    lease_expires: object  # datetime | None
    closed_at: None = None

    is_active = Review.is_active  # the model's rule, on the row


def card_for(task: Task, config, now) -> Card:
    """One card from a Task; needs `depends_on` and open `reviews` (see `card_tasks`)."""
    return _card(
        task,
        waiting_on=[d.key for d in task.depends_on.all() if d.status != "MERGED"],
        open_reviews=[
            _ReviewRow(r.reviewer, r.verdict, r.lease_expires)
            for r in task.reviews.all()
            if r.closed_at is None
        ],
        config=config,
        now=now,
    )


def _card(task, *, waiting_on, open_reviews: list[_ReviewRow], config, now) -> Card:
    """The card of `task` (a Task or a `_TaskRow`): the rules live here once."""
    active = [r for r in open_reviews if r.is_active(now)]
    review_leases = [r.lease_expires for r in active]
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
        waiting_on=tuple(sorted(waiting_on)),
        blocked_reason=task.blocked_reason if task.status == "BLOCKED" else "",
        reviewing_by=tuple(r.reviewer for r in active),
        review_lease_expires=_iso(min(review_leases)) if review_leases else None,
        integration_fix=task.integration_fix,
        handoff_pending=task.handoff_pending,
        terminal=task.is_terminal,
        suspended=task.is_suspended,
        awaiting_human_approval=awaiting_human_approval(
            task, approvers={r.reviewer for r in open_reviews if r.verdict == "APPROVED"}
        ),
    )


@dataclass(slots=True)
class _TaskRow:
    """The columns a card reads, fetched as a plain row.

    A board shows up to COLUMN_CARD_LIMIT cards per column; building a Task and two prefetched
    related managers for each one cost more than everything else on the page. The derived
    values are the model's own methods, so the rules are not copied.
    """

    id: int
    key: str
    description: str
    status: str
    priority: int
    criticality: str
    assigned_to: str
    lease_expires: object
    iteration: int | None
    max_iterations: int | None
    review_cycles_current: int
    max_review_cycles: int | None
    blocked_reason: str
    integration_fix: bool
    handoff_pending: bool
    suspended_at: object
    needs_human_approval: bool

    is_terminal = Task.is_terminal
    is_suspended = Task.is_suspended
    required_approvals = Task.required_approvals
    effective_max_iterations = Task.effective_max_iterations
    effective_max_review_cycles = Task.effective_max_review_cycles


_TASK_ROW_FIELDS = tuple(_TaskRow.__dataclass_fields__)


def _among(model, column: str, ids: list[int]) -> RawSQL:
    """`column IN (ids)` with the ids written into the SQL.

    They are integers just read from the database. As parameters, each of up to 1,600 ids
    goes through Django's lookup and the driver's binding, which cost more than the query.
    A subquery re-running the board's selection instead is at the mercy of the planner: on a
    freshly loaded table (no statistics yet) PostgreSQL re-ran it for every review row, 5 s.
    """
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    listed = ",".join(str(int(i)) for i in ids)
    return RawSQL(f"{table}.{column} IN ({listed})", [], output_field=BooleanField())


def board_cards(queryset: QuerySet, *, config, now) -> list[Card]:
    """The cards of `queryset`'s tasks, in its order: three queries whatever their number."""
    rows = [_TaskRow(*values) for values in queryset.values_list(*_TASK_ROW_FIELDS)]
    waiting: dict[int, list[str]] = {}
    reviews: dict[int, list[_ReviewRow]] = {}
    if rows:
        ids = [row.id for row in rows]
        Edge = Task.depends_on.through
        edges = Edge.objects.filter(_among(Edge, "from_task_id", ids)).exclude(
            to_task__status="MERGED"
        )
        for task_id, key in edges.values_list("from_task_id", "to_task__key"):
            waiting.setdefault(task_id, []).append(key)
        open_reviews = Review.objects.filter(_among(Review, "task_id", ids), closed_at__isnull=True)
        for task_id, *review in open_reviews.values_list(
            "task_id", "reviewer", "verdict", "lease_expires"
        ):
            reviews.setdefault(task_id, []).append(_ReviewRow(*review))
    return [
        _card(
            row,
            waiting_on=waiting.get(row.id, ()),
            open_reviews=reviews.get(row.id, []),
            config=config,
            now=now,
        )
        for row in rows
    ]


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
    cards_html: str = ""  # the cards' markup, filled in by the view (boards.views.card_html)

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
    cards = board_cards(
        ranked.filter(rank__lte=COLUMN_CARD_LIMIT).order_by("priority", "created", "id"),
        config=config,
        now=now,
    )
    by_status: dict[str, list[Card]] = {s: [] for s in p.TASK_STATES}
    for card in cards:
        by_status[card.status].append(card)
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


# ---------------------------------------------------------------------------------------------
# human oversight (SPEC §7): what waits for a human
# ---------------------------------------------------------------------------------------------


def awaiting_human_approval(task: Task, approvers: set[str] | None = None) -> bool:
    """The reviewers approved the round and the human gate holds it (seed 004
    APPROVAL_REQUIRED). Reads `task.reviews.all()`, so a prefetch of the open reviews (the
    board's and the inbox's) spares the query; the board passes the open round's `approvers`
    it already read (its cards are plain rows)."""
    if task.status != "READY_FOR_REVIEW" or not task.needs_human_approval:
        return False
    if approvers is None:
        approvers = {
            r.reviewer
            for r in task.reviews.all()
            if r.closed_at is None and r.verdict == "APPROVED"
        }
    # Security-sensitive tasks also need a security-flagged approver; review_claim keeps the
    # last slot for one, so a full round has it.
    return len(approvers) >= task.required_approvals


@dataclass(frozen=True)
class InboxTask:
    """A task waiting for a human, with how long it has waited."""

    project: Project
    task: Task
    since: object  # datetime | None: when it entered its current state (its last event)
    age_seconds: int | None
    limit_blocked: bool = False

    @property
    def key(self) -> str:
        return self.task.key


@dataclass(frozen=True)
class InboxDiscovery:
    project: Project
    discovery: object  # Discovery
    age_seconds: int


@dataclass(frozen=True)
class InboxSprint:
    project: Project
    sprint: Sprint
    age_seconds: int | None  # time at CHECKPOINT


@dataclass(frozen=True)
class InboxPause:
    project: Project
    age_seconds: int


def _age(since, now) -> int | None:
    return max(0, int((now - since).total_seconds())) if since is not None else None


def inbox(*, project: Project | None, now) -> dict[str, object]:
    """Everything that waits for a human, oldest first, in a constant number of queries.

    `project=None` reads every project (site staff). Keys: `blocked` (with their reason,
    questions, attempted, failed_by via the task, and `limit_blocked`: only a human's written
    release, a rescope or an abandon moves them), `integration_failed`, `awaiting_approval`
    (the human gate), `suspended`, `discoveries` (immediate and not triaged), `checkpoints`
    (sprints at CHECKPOINT), `paused` (projects), and `count`, the number of items.
    """
    from django.db.models import OuterRef, Prefetch, Subquery

    from boards.models import Discovery, ProjectConfig, Review
    from boards.services.tasks import is_limit_blocked

    scope = {} if project is None else {"project": project}
    # When the task entered its current state: its latest applied event that moved it there.
    entered = (
        Event.objects.filter(
            task=OuterRef("pk"), to_status=OuterRef("status"), outcome=Event.Outcome.APPLIED
        )
        .order_by("-timestamp", "-id")
        .values("timestamp")[:1]
    )
    rows = list(
        Task.objects.filter(**scope)
        .filter(
            Q(status__in=("BLOCKED", "INTEGRATION_FAILED"))
            | Q(status="READY_FOR_REVIEW", needs_human_approval=True)
            | Q(suspended_at__isnull=False)
        )
        .exclude(status__in=p.TERMINAL_TASK_STATES)
        .select_related("project")
        .annotate(entered=Subquery(entered))
        .prefetch_related(
            Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True))
        )
        .order_by("created", "id")
    )
    configs = {
        c.project_id: c
        for c in ProjectConfig.objects.filter(project_id__in={t.project_id for t in rows})
    }

    def item(task: Task, *, since=None, limit_blocked: bool = False) -> InboxTask:
        since = since or task.entered or task.updated or task.created
        return InboxTask(task.project, task, since, _age(since, now), limit_blocked)

    blocked, failed, awaiting, suspended = [], [], [], []
    for task in rows:
        if task.is_suspended:
            suspended.append(item(task, since=task.suspended_at))
        if task.status == "BLOCKED":
            config = configs.get(task.project_id) or ProjectConfig(project=task.project)
            blocked.append(item(task, limit_blocked=is_limit_blocked(task, config)))
        elif task.status == "INTEGRATION_FAILED":
            failed.append(item(task))
        elif awaiting_human_approval(task):
            awaiting.append(item(task))

    discoveries = [
        InboxDiscovery(d.project, d, _age(d.created, now))
        for d in Discovery.objects.filter(
            **scope, urgency="immediate", triage="open", converted_to_task=""
        )
        .select_related("project")
        .order_by("created", "id")
    ]
    checkpoints = [
        InboxSprint(s.project, s, _age(s.checkpoint_at, now))
        for s in Sprint.objects.filter(**scope, status="CHECKPOINT")
        .select_related("project", "goal")
        .order_by("checkpoint_at", "id")
    ]
    projects = Project.objects.filter(paused_at__isnull=False)
    if project is not None:
        projects = projects.filter(pk=project.pk)
    paused = [InboxPause(pr, _age(pr.paused_at, now)) for pr in projects.order_by("paused_at")]

    def oldest_first(items: list[InboxTask]) -> list[InboxTask]:
        return sorted(items, key=lambda i: (i.since, i.task.pk))

    result: dict[str, object] = {
        "blocked": oldest_first(blocked),
        "integration_failed": oldest_first(failed),
        "awaiting_approval": oldest_first(awaiting),
        "suspended": oldest_first(suspended),
        "discoveries": discoveries,
        "checkpoints": checkpoints,
        "paused": paused,
    }
    result["count"] = sum(len(v) for v in result.values())  # type: ignore[arg-type]
    return result
