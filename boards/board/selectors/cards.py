"""A task's card on the board (`Card`): its fields, its order in a column, and the cards of a
queryset read in a constant number of queries (`board_cards`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import (
    BooleanField,
    F,
    Max,
    OuterRef,
    Prefetch,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from agents.models import Run
from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.reviews import (
    approvers,
    awaiting_human_approval,
    review_live,
    security_reviewer_ids,
)
from boards.protocol import TaskStatus


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
    # The levels of the task's open alerts (the watcher's), most severe first.
    alerts: tuple[str, ...] = ()
    # Issue #13: the human approval gate (seed 004) whether or not it is pending yet, when the
    # task entered its state (the last applied transition, else its creation), and the board's
    # own order as a string that sorts the same way (board.js places live cards by it).
    approval_gate: bool = False
    entered: str | None = None
    order: str = ""
    # Issue 24: when the run of its agent (under `liza supervise`) on this task started, while
    # it runs: the card says "agent running" and for how long.
    running_since: str | None = None
    # The pull request its coder reported with its last submission (http(s)), or "".
    pr_url: str = ""

    @property
    def summary(self) -> str:
        """The first line of the description, what a card shows of it."""
        return self.description.strip().split("\n", 1)[0].strip()


def _iso(value) -> str | None:
    return p.format_timestamp(value) if value else None


def _order(priority: int, created: datetime, pk: int) -> str:
    """The board's order (priority, created, id) as one string that sorts the same way:
    fixed-width numbers (seconds since 1970 to the microsecond, cheaper than a date format;
    a double keeps a microsecond apart until the year 2255)."""
    return f"{priority:02d}.{created.timestamp():017.6f}.{pk:012d}"


@dataclass(frozen=True, slots=True)
class _ReviewRow:
    """An open review claim as a card reads it (a plain row, no model instance)."""

    reviewer: str
    verdict: str
    lease_expires: object  # datetime | None
    closed_at: None = None


def card_for(task: Task, config, now) -> Card:
    """One card from a Task; needs `depends_on` and open `reviews` (see `card_tasks`)."""
    return _card(
        task,
        waiting_on=[d.key for d in task.depends_on.all() if d.status != TaskStatus.MERGED],
        open_reviews=[
            _ReviewRow(r.reviewer, r.verdict, r.lease_expires)
            for r in task.reviews.all()
            if r.closed_at is None
        ],
        config=config,
        now=now,
        security_ids=security_reviewer_ids(task.project_id),
        alerts=_open_alert_levels([task.pk]).get(task.pk, ()),
        entered=_entered_states([task.pk]).get(task.pk),
        running_since=_running_runs([task.pk]).get(task.pk),
    )


def _entered_states(task_ids: list[int]) -> dict[int, datetime]:
    """When each task entered its current state: its last applied transition (one query).

    A task with none (created in its state, or bulk-loaded) falls back to its creation."""
    return dict(
        Event.objects.filter(_among(Event, "task_id", task_ids), outcome=Event.Outcome.APPLIED)
        .exclude(to_status="")
        .exclude(from_status=F("to_status"))
        .values("task_id")
        .annotate(at=Max("timestamp"))
        .values_list("task_id", "at")
        .order_by()
    )


def _running_runs(task_ids: list[int]) -> dict[int, datetime]:
    """When the latest still-running supervised run of each task started (one query)."""
    return dict(
        Run.objects.filter(_among(Run, "task_id", task_ids), ended__isnull=True)
        .values("task_id")
        .annotate(at=Max("started"))
        .values_list("task_id", "at")
        .order_by()
    )


ALERT_SEVERITY = {Alert.Level.CRITICAL: 0, Alert.Level.WARNING: 1, Alert.Level.INFO: 2}


def _open_alert_levels(task_ids: list[int]) -> dict[int, tuple[str, ...]]:
    """Each task's open alert levels, most severe first: one query for any number of tasks."""
    levels: dict[int, list[str]] = {}
    for task_id, level in Alert.objects.filter(
        _among(Alert, "task_id", task_ids), resolved_at__isnull=True
    ).values_list("task_id", "level"):
        levels.setdefault(task_id, []).append(level)
    return {k: tuple(sorted(v, key=ALERT_SEVERITY.__getitem__)) for k, v in levels.items()}


def _card(
    task,
    *,
    waiting_on,
    open_reviews: list[_ReviewRow],
    config,
    now,
    security_ids: set[str],
    alerts: tuple[str, ...] = (),
    entered: datetime | None = None,
    running_since: datetime | None = None,
) -> Card:
    """The card of `task` (a Task or a `_TaskRow`): the rules are the selectors' own."""
    active = [r for r in open_reviews if review_live(r, now, config)]
    review_leases = [r.lease_expires for r in active]
    return Card(
        key=task.key,
        description=task.description,
        status=task.status,
        priority=task.priority,
        criticality=task.criticality,
        assigned_to=task.assigned_to,
        lease_expires=_iso(task.lease_expires) if task.status == TaskStatus.CLAIMED else None,
        iteration=task.iteration,
        max_iterations=task.effective_max_iterations(config),
        review_cycles_current=task.review_cycles_current,
        max_review_cycles=task.effective_max_review_cycles(config),
        waiting_on=tuple(sorted(waiting_on)),
        blocked_reason=task.blocked_reason if task.status == TaskStatus.BLOCKED else "",
        reviewing_by=tuple(r.reviewer for r in active),
        review_lease_expires=_iso(min(review_leases)) if review_leases else None,
        integration_fix=task.integration_fix,
        handoff_pending=task.handoff_pending,
        terminal=task.is_terminal,
        suspended=task.is_suspended,
        awaiting_human_approval=awaiting_human_approval(
            task, approvers(open_reviews), security_ids
        ),
        alerts=alerts,
        approval_gate=task.needs_human_approval,
        entered=_iso(entered or task.created),
        order=_order(task.priority, task.created, task.id),
        running_since=_iso(running_since) if not task.is_terminal else None,
        pr_url=task.pr_url,
    )


# A task's sprint lane: the first sprint (by creation) planning it, else one holding it as
# stretch. A subquery per row, so a task in two sprints is still one row and one card.
def _first_sprint(through) -> Subquery:
    return Subquery(
        through.objects.filter(task_id=OuterRef("pk"))
        .order_by("sprint__started", "sprint_id")
        .values("sprint__sprint_id")[:1]
    )


SPRINT_LANE = "lane_sprint"


def with_lanes(queryset: QuerySet) -> QuerySet:
    return queryset.annotate(
        lane_sprint=Coalesce(
            _first_sprint(Sprint.planned.through), _first_sprint(Sprint.stretch.through)
        )
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
    project_id: int
    created: datetime
    pr_url: str

    is_terminal = Task.is_terminal
    is_suspended = Task.is_suspended
    required_approvals = Task.required_approvals
    effective_max_iterations = Task.effective_max_iterations
    effective_max_review_cycles = Task.effective_max_review_cycles


_TASK_ROW_FIELDS = tuple(_TaskRow.__dataclass_fields__)
_PROJECT = _TASK_ROW_FIELDS.index("project_id")


def _among(model, column: str, ids: list[int]) -> RawSQL:
    """`column IN (ids)` with the ids written into the SQL.

    They are integers just read from the database. As parameters, each of up to 1,600 ids
    goes through Django's lookup and the driver's binding, which cost more than the query.
    A subquery re-running the board's selection instead is at the mercy of the planner: on a
    freshly loaded table (no statistics yet) PostgreSQL re-ran it for every review row, 5 s.
    """
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    if not ids:
        # Still a query (an empty one): the board costs the same queries whatever it shows.
        return RawSQL("FALSE", [], output_field=BooleanField())
    listed = ",".join(str(int(i)) for i in ids)
    return RawSQL(f"{table}.{column} IN ({listed})", [], output_field=BooleanField())


def _inputs_sql(ids: list[int], *, full: bool) -> tuple[str, list]:
    """One statement for the tasks `ids`: their rows (all a card reads when `full`, else the
    id, key and status) with each row's version, and beside them what a card shows from other
    rows, each read once for all the ids (the ids written in, see `_among`): the dependencies
    not yet MERGED (their keys), the open reviews (reviewer, verdict, lease, in claim order),
    the open alerts' levels, the start of a still-running run, and when `full` the time it
    entered its state (`_entered_states`' rule).

    The version is the row's (xmin, ctid): a write of the row, even a heartbeat or a second
    one in the same transaction, makes a new row version with a new pair; a lock does not. A
    card's age in its state comes from its last transition event, which the service that
    moved the task writes in the transaction that saved its row."""
    from django.db import connection

    q = connection.ops.quote_name
    task, edge = q(Task._meta.db_table), q(Task.depends_on.through._meta.db_table)
    review, alert, run, event = (q(m._meta.db_table) for m in (Review, Alert, Run, Event))
    listed = ",".join(str(int(i)) for i in ids) or "NULL"
    names = _TASK_ROW_FIELDS if full else ("id", "key", "status")
    columns = ", ".join(f"t.{q(Task._meta.get_field(name).column)}" for name in names)
    params: list = [TaskStatus.MERGED]
    entered_column, entered_join = "", ""
    if full:
        entered_column = ", en.at"
        entered_join = (
            f" LEFT JOIN (SELECT task_id, max({q('timestamp')}) AS at FROM {event}"
            f" WHERE task_id IN ({listed}) AND outcome = %s AND to_status <> ''"
            " AND from_status <> to_status GROUP BY task_id) en ON en.task_id = t.id"
        )
        params.append(Event.Outcome.APPLIED)
    in_order = "ORDER BY claimed_at, id"
    sql = (
        f"SELECT {columns}, w.keys, rv.reviewers, rv.verdicts, rv.leases, al.levels,"
        f" rn.started, t.xmin::text || ':' || t.ctid::text{entered_column} FROM {task} t"
        f" LEFT JOIN (SELECT e.from_task_id AS task_id, array_agg(d.{q('key')}) AS keys"
        f" FROM {edge} e JOIN {task} d ON d.id = e.to_task_id"
        f" WHERE e.from_task_id IN ({listed}) AND d.status <> %s GROUP BY e.from_task_id) w"
        " ON w.task_id = t.id"
        f" LEFT JOIN (SELECT task_id, array_agg(reviewer {in_order}) AS reviewers,"
        f" array_agg(verdict {in_order}) AS verdicts, array_agg(lease_expires {in_order})"
        f" AS leases FROM {review} WHERE task_id IN ({listed}) AND closed_at IS NULL"
        " GROUP BY task_id) rv ON rv.task_id = t.id"
        f" LEFT JOIN (SELECT task_id, array_agg(level) AS levels FROM {alert}"
        f" WHERE task_id IN ({listed}) AND resolved_at IS NULL GROUP BY task_id) al"
        " ON al.task_id = t.id"
        f" LEFT JOIN (SELECT task_id, max(started) AS started FROM {run}"
        f" WHERE task_id IN ({listed}) AND ended IS NULL GROUP BY task_id) rn"
        f" ON rn.task_id = t.id{entered_join}"
        f" WHERE t.id IN ({listed})"
    )
    return sql, params


def _read(ids: list[int], *, full: bool) -> dict[int, tuple]:
    from django.db import connection

    sql, params = _inputs_sql(ids, full=full)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: row for row in cursor.fetchall()}


@dataclass(frozen=True, slots=True)
class CardVersion:
    """A shown task's identity and everything its card depends on, as of `now`, without its
    wide row: the key of its rendered fragment (`boards.board.live.fragments`)."""

    id: int
    key: str
    status: str
    stamp: tuple


def _version(task_id, key, status, inputs: tuple, *, config, now):
    """(CardVersion, waiting-on keys, open reviews as rows) from `_inputs_sql`'s columns."""
    waiting, reviewers, verdicts, leases, alerts, running, version = inputs
    open_reviews = [
        _ReviewRow(*r) for r in zip(reviewers or (), verdicts or (), leases or (), strict=True)
    ]
    waiting, alerts = tuple(sorted(waiting or ())), tuple(alerts or ())
    stamp = (
        version,
        waiting,
        # Whether each open review is still live moves with the clock, not with a write.
        tuple(
            (r.reviewer, r.verdict, r.lease_expires, review_live(r, now, config))
            for r in open_reviews
        ),
        tuple(sorted(alerts)),
        running,
    )
    return CardVersion(task_id, key, status, stamp), waiting, open_reviews


def _ids(queryset: QuerySet) -> list[int]:
    return list(queryset.values_list("id", flat=True))


def card_versions(queryset: QuerySet, *, config, now) -> list[CardVersion]:
    """The versions of `queryset`'s cards, in its order: two narrow queries whatever their
    number (the ids, then each one's version and the inputs beside its row)."""
    ids = _ids(queryset)
    rows = _read(ids, full=False)
    return [
        _version(*rows[i][:3], rows[i][3:], config=config, now=now)[0] for i in ids if i in rows
    ]


def versioned_cards(
    queryset: QuerySet, *, config, now, security_ids: set[str] | None = None
) -> list[tuple[CardVersion, Card]]:
    """The cards of `queryset`'s tasks with their versions, in its order: three queries (the
    ids, the rows with what each card reads beside them, the project's security reviewers)
    whatever their number; `security_ids` given saves the last."""
    return cards_of_ids(_ids(queryset), config=config, now=now, security_ids=security_ids)


def cards_of_ids(
    ids: list[int], *, config, now, security_ids: set[str] | None = None
) -> list[tuple[CardVersion, Card]]:
    """`versioned_cards` of tasks already chosen, in the order of `ids` (one query, even for
    none: the board's queries do not depend on how many cards it renders)."""
    width = len(_TASK_ROW_FIELDS)
    rows = _read(ids, full=True)
    if security_ids is None:
        first = next(iter(rows.values()), None)
        security_ids = security_reviewer_ids(first[_PROJECT]) if first else set()
    out = []
    for task_id in ids:
        if task_id not in rows:
            continue  # gone since the ids were read
        values = rows[task_id]
        row = _TaskRow(*values[:width])
        card_version, waiting, open_reviews = _version(
            row.id, row.key, row.status, values[width:-1], config=config, now=now
        )
        alerts = card_version.stamp[3]
        card = _card(
            row,
            waiting_on=waiting,
            open_reviews=open_reviews,
            config=config,
            now=now,
            security_ids=security_ids,
            alerts=tuple(sorted(alerts, key=ALERT_SEVERITY.__getitem__)),
            entered=values[-1],
            running_since=card_version.stamp[4],
        )
        out.append((card_version, card))
    return out


def board_cards(queryset: QuerySet, *, config, now) -> list[Card]:
    """The cards of `queryset`'s tasks, in its order: three queries whatever their number."""
    return [card for _, card in versioned_cards(queryset, config=config, now=now)]


def card_tasks(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(
        Prefetch("depends_on", queryset=Task.objects.only("id", "key", "status")),
        Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True)),
    )
