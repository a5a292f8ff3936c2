"""A task's card on the board (`Card`): its fields, its order in a column, and the cards of a
queryset read in a constant number of queries (`board_cards`)."""

from __future__ import annotations

import hashlib
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

from agents.models import Agent, Run
from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.leases import lease_stale_before
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


def _shown_ids(ids: list[int]) -> tuple[str, list]:
    """Tasks already chosen, in the order given, as `_inputs_sql`'s source (the ids written
    in, see `_among`)."""
    listed = ",".join(str(int(i)) for i in ids)
    return f"SELECT id, n FROM unnest('{{{listed}}}'::bigint[]) WITH ORDINALITY AS u(id, n)", []


@dataclass(frozen=True)
class Selection:
    """Tasks chosen by a statement of their ids, in its order (`board_state`'s, compiled once
    per shape: `rows.compiled`); taken where a queryset of tasks is."""

    sql: str
    params: list


def _shown_query(queryset: QuerySet | Selection) -> tuple[str, list]:
    """`queryset`'s tasks, in its order, as `_inputs_sql`'s source: its own SQL, run once."""
    if isinstance(queryset, Selection):
        sql, params = queryset.sql, queryset.params
    else:
        sql, params = queryset.values("id").query.sql_with_params()
    # Numbered as the ordered subquery yields them: nothing between the two reorders rows.
    return f"SELECT q.id, row_number() OVER () AS n FROM ({sql}) q", list(params)


def _inputs_sql(shown: tuple[str, list], *, full: bool, config, now) -> tuple[str, list]:
    """One statement for the tasks of `shown` (`_shown_ids`, `_shown_query`), in its order:
    their rows (all a card reads when `full`, else the id, key and status) with each one's
    version, and beside them what a card shows from other rows: the dependencies not yet
    MERGED (their keys), the open reviews (reviewer, verdict, lease, in claim order), the open
    alerts' levels, the start of a still-running run, the project's security reviewers, and when
    `full` the time it entered its state (`_entered_states`' rule). The selection runs once
    (materialized), so no input re-runs it. Each input is a LATERAL subquery on one task's
    index: grouped over all shown tasks instead, the planner (which cannot estimate the capped
    selection: one row, it guesses) rescanned every group for every card — 400 cards × 190
    dependency groups, and under load one such statement outlived the 30 s statement timeout.

    What a version covers (`_stamp`): the row's (xmin, ctid) — a write of the row, even a
    heartbeat or a second one in the same transaction, makes a new row version with a new
    pair; a lock does not —, the other rows' values above, each in a fixed order, and whether
    each open review is live *now* (`lease_alive` as a query bound: the one input that moves
    with the clock). A card's age in its state comes from its last transition event, which
    the service that moved the task writes in the transaction that saved its row. They come
    as one text, a row value's (unambiguous: NULL, empty and quoted fields differ), so a
    version costs a page one short string per card to decode and hash, not arrays of dates;
    the inputs a card shows come apart beside it when `full`."""
    from django.db import connection

    q = connection.ops.quote_name
    task, edge = q(Task._meta.db_table), q(Task.depends_on.through._meta.db_table)
    review, alert, run, event = (q(m._meta.db_table) for m in (Review, Alert, Run, Event))
    agent = q(Agent._meta.db_table)
    names = _TASK_ROW_FIELDS if full else ("id", "key", "status")
    columns = ", ".join(f"t.{q(Task._meta.get_field(name).column)}" for name in names)
    source, params = shown
    in_order = "ORDER BY claimed_at, id"
    # In the order of the placeholders: the source's, the dependencies' MERGED, the reviews'
    # liveness bound (`lease_alive` as a query bound), then the entered rule's.
    params = [*params, TaskStatus.MERGED, lease_stale_before(now, config)]
    entered_column, entered_join, card_inputs = "", "", ""
    if full:
        card_inputs = (
            ", w.keys, rv.reviewers, rv.verdicts, rv.leases, al.levels, rn.started, sec.ids"
        )
        entered_column = ", en.at"
        entered_join = (
            f" LEFT JOIN LATERAL (SELECT max({q('timestamp')}) AS at FROM {event}"
            " WHERE task_id = t.id AND outcome = %s AND to_status <> ''"
            " AND from_status <> to_status) en ON true"
        )
        params.append(Event.Outcome.APPLIED)
    sql = (
        f"WITH shown AS MATERIALIZED ({source}),"
        f" sec AS MATERIALIZED (SELECT project_id, array_agg(agent_id ORDER BY agent_id) AS ids"
        f" FROM {agent} WHERE security_reviewer AND project_id IN (SELECT t.project_id"
        f" FROM shown JOIN {task} t ON t.id = shown.id) GROUP BY project_id)"
        f" SELECT {columns}, ROW(t.xmin::text || ':' || t.ctid::text, w.keys, rv.reviewers,"
        " rv.verdicts, rv.leases, rv.live, al.levels, rn.started, sec.ids)::text"
        f"{card_inputs}{entered_column} FROM shown s JOIN {task} t ON t.id = s.id"
        f" LEFT JOIN LATERAL (SELECT array_agg(d.{q('key')} ORDER BY d.{q('key')}) AS keys"
        f" FROM {edge} e JOIN {task} d ON d.id = e.to_task_id"
        " WHERE e.from_task_id = t.id AND d.status <> %s) w ON true"
        f" LEFT JOIN LATERAL (SELECT array_agg(reviewer {in_order}) AS reviewers,"
        f" array_agg(verdict {in_order}) AS verdicts, array_agg(lease_expires {in_order})"
        " AS leases, array_agg(coalesce(verdict = '' AND lease_expires > %s, false)"
        f" {in_order}) AS live FROM {review} WHERE task_id = t.id AND closed_at IS NULL) rv"
        " ON true"
        f" LEFT JOIN LATERAL (SELECT array_agg(level ORDER BY level) AS levels FROM {alert}"
        " WHERE task_id = t.id AND resolved_at IS NULL) al ON true"
        f" LEFT JOIN LATERAL (SELECT max(started) AS started FROM {run}"
        " WHERE task_id = t.id AND ended IS NULL) rn ON true"
        f" LEFT JOIN sec ON sec.project_id = t.project_id{entered_join}"
        " ORDER BY s.n"
    )
    return sql, params


def _read(shown: tuple[str, list], *, full: bool, config, now) -> list[tuple]:
    from django.db import connection

    sql, params = _inputs_sql(shown, full=full, config=config, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _stamp(salt: str, inputs: str) -> str:
    """A card's version: `salt` and its inputs as read (`_inputs_sql`'s row text), hashed.
    The only work per card when its fragment is cached."""
    return hashlib.blake2b(f"{salt}|{inputs}".encode(), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class CardVersion:
    """A shown task's identity and the version of everything its card depends on, as of `now`
    (`_stamp`), without its wide row: the key of its rendered fragment
    (`boards.board.live.fragments`)."""

    id: int
    key: str
    status: str
    stamp: str


def card_versions(queryset: QuerySet, *, config, now, salt: str = "") -> list[CardVersion]:
    """The versions of `queryset`'s cards, in its order: one narrow statement whatever their
    number. `salt`: what every card of the project reads besides the rows its version covers
    (`boards.board.live.fragments.project_salt`)."""
    rows = _read(_shown_query(queryset), full=False, config=config, now=now)
    return [CardVersion(r[0], r[1], r[2], _stamp(salt, r[3])) for r in rows]


def versioned_cards(
    queryset: QuerySet, *, config, now, salt: str = ""
) -> list[tuple[CardVersion, Card]]:
    """The cards of `queryset`'s tasks with their versions, in its order: one statement (the
    rows with what each card reads beside them) whatever their number."""
    return _versioned(_shown_query(queryset), config=config, now=now, salt=salt)


def cards_of_ids(ids: list[int], *, config, now, salt: str = "") -> list[tuple[CardVersion, Card]]:
    """`versioned_cards` of tasks already chosen, in the order of `ids` (one statement, even
    for none: the board's queries do not depend on how many cards it renders)."""
    return _versioned(_shown_ids(ids), config=config, now=now, salt=salt)


def _versioned(shown, *, config, now, salt: str) -> list[tuple[CardVersion, Card]]:
    width = len(_TASK_ROW_FIELDS)
    out = []
    for values in _read(shown, full=True, config=config, now=now):
        row = _TaskRow(*values[:width])
        inputs, waiting, reviewers, verdicts, leases, alerts, running, security = values[
            width : width + 8
        ]
        open_reviews = [
            _ReviewRow(*r) for r in zip(reviewers or (), verdicts or (), leases or (), strict=True)
        ]
        card = _card(
            row,
            waiting_on=waiting or (),
            open_reviews=open_reviews,
            config=config,
            now=now,
            security_ids=set(security or ()),
            alerts=tuple(sorted(alerts or (), key=ALERT_SEVERITY.__getitem__)),
            entered=values[-1],
            running_since=running,
        )
        out.append((CardVersion(row.id, row.key, row.status, _stamp(salt, inputs)), card))
    return out


def board_cards(queryset: QuerySet, *, config, now) -> list[Card]:
    """The cards of `queryset`'s tasks, in its order: one statement whatever their number."""
    return [card for _, card in versioned_cards(queryset, config=config, now=now)]


def card_tasks(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(
        Prefetch("depends_on", queryset=Task.objects.only("id", "key", "status")),
        Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True)),
    )
