"""The board (SPEC §7): columns of cards, in a constant number of queries whatever the count.

Cards are built from plain rows (`_TaskRow`) with the model's own derived values, so a 2,000-task
board costs five queries for its cards and no model instances.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, F, Q, QuerySet, Value, Window
from django.db.models.functions import RowNumber
from django.http import QueryDict

from agents.models import Agent
from boards import protocol as p
from boards.board.selectors.cards import ALERT_SEVERITY as ALERT_SEVERITY
from boards.board.selectors.cards import SPRINT_LANE, Selection, board_cards, with_lanes
from boards.board.selectors.cards import card_for as card_for
from boards.board.selectors.cards import card_tasks as card_tasks
from boards.board.selectors.drawer import drawer_state as drawer_state

# The header's reads (`selectors.header`), offered here with the rest of the board's.
from boards.board.selectors.header import blocked_tasks as blocked_tasks
from boards.board.selectors.header import board_header as board_header
from boards.board.selectors.header import header_counts as header_counts
from boards.board.selectors.header import header_rows as header_rows
from boards.board.selectors.header import open_alerts as open_alerts
from boards.coordination import rows
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.availability import agents_availability
from boards.coordination.selectors.filters import TaskFilter, filter_errors, in_sprint_q
from boards.coordination.selectors.limits import concurrency_shown
from boards.protocol import TaskStatus

# Cards rendered per column; beyond it the column shows its count and asks for a filter (search,
# swimlanes, `j`/`k` stay on what is shown), so a 5,000-task project stays usable. Terminal
# columns start collapsed (counts only). 50: a 900 px screen shows under ten cards a column, and
# 200 (8 open columns × 200 = 1,600 cards, 1.5 MB of HTML) cost ~300 ms a render at 5,000 tasks
# against ~100 ms now (bench/board.py, issue 13's 200 ms bound).
COLUMN_CARD_LIMIT = 50
# Column order follows the flow of work; the terminal columns come last.
BOARD_COLUMNS: tuple[str, ...] = (
    TaskStatus.DRAFT,
    TaskStatus.UNCLAIMED,
    TaskStatus.CLAIMED,
    TaskStatus.READY_FOR_REVIEW,
    TaskStatus.REJECTED,
    TaskStatus.APPROVED,
    TaskStatus.INTEGRATION_FAILED,
    TaskStatus.BLOCKED,
    TaskStatus.MERGED,
    TaskStatus.SUPERSEDED,
    TaskStatus.ABANDONED,
)
# Swimlanes (issue #13): what the board can group its cards by (`?lanes=`), display only.
LANES: dict[str, str] = {"goal": "goal", "sprint": "sprint", "assignee": "assignee"}
# The lane of a card with no goal, sprint or assignee.
NO_LANE = ""


@dataclass(frozen=True)
class BoardFilters:
    """The board's filters as the page shows them; validated by `TaskFilter`."""

    goal: str = ""
    sprint: str = ""  # "" = the open sprint (or everything when none is open), "all" = every task
    status: tuple[str, ...] = ()
    agent: str = ""
    priority: int | None = None
    criticality: str = ""
    q: str = ""
    expanded: tuple[str, ...] = ()  # terminal columns the viewer opened
    errors: tuple[tuple[str, str], ...] = ()  # (parameter, message) of refused parameters
    archived: bool = False  # also show tasks ended more than archive_after_days ago
    lanes: str = ""  # "" (no swimlanes) or one of LANES: a display choice, not a filter

    @classmethod
    def from_query(cls, params: QueryDict) -> BoardFilters:
        """Parse the board's query string through the API's own filter; a refused parameter is
        dropped and reported (`errors`), never a database error."""
        names = ("goal", "sprint", "status", "agent", "priority", "criticality", "q")
        data = QueryDict(mutable=True)
        for name in names:
            values = [v for v in params.getlist(name) if v != ""]
            if values:
                data.setlist(name, values)
        errors: dict[str, list[str]] = {}
        clean: dict[str, object] = {}
        if data:  # nothing given, nothing to check (the unfiltered board, most views)
            checked = TaskFilter(data=data, queryset=Task.objects.none())
            errors = filter_errors(checked) if not checked.is_valid() else {}
            clean = {k: v for k, v in (checked.form.cleaned_data or {}).items() if k not in errors}
        return cls(
            goal=clean.get("goal") or "",
            sprint=clean.get("sprint") or "",
            status=tuple(clean.get("status") or ()),
            agent=clean.get("agent") or "",
            priority=clean.get("priority") or None,
            criticality=clean.get("criticality") or "",
            q=clean.get("q") or "",
            expanded=tuple(s for s in params.getlist("open") if s in p.TERMINAL_TASK_STATES),
            errors=tuple((name, "; ".join(msgs)) for name, msgs in errors.items()),
            archived=params.get("archived") == "1",
            # An unknown grouping is simply not applied: it narrows nothing, so no 400.
            lanes=params.get("lanes", "") if params.get("lanes", "") in LANES else "",
        )

    @property
    def active(self) -> int:
        """How many of the folded filters narrow the board (the search box shows its own)."""
        chosen = (self.goal, self.sprint, self.status, self.agent, self.priority, self.criticality)
        return sum(1 for value in chosen if value)

    def as_data(self) -> dict[str, object]:
        data: dict[str, object] = {
            "goal": self.goal,
            "status": list(self.status),
            "agent": self.agent,
            "priority": str(self.priority) if self.priority else "",
            "criticality": self.criticality,
            "q": self.q,
        }
        if self.sprint:
            data["sprint"] = self.sprint
        return {k: v for k, v in data.items() if v not in ("", [])}


def board_tasks(*, project: Project, filters: BoardFilters, sprint) -> QuerySet[Task]:
    """The tasks the board shows: `filters` through the shared `TaskFilter`; with no sprint
    chosen, the active sprint's tasks ("active sprint by default", SPEC §7)."""
    data = QueryDict(mutable=True)
    for name, value in filters.as_data().items():
        if isinstance(value, list):
            data.setlist(name, value)
        else:
            data[name] = value
    qs = Task.objects.filter(project=project)
    if data:  # with no filter the FilterSet (a form, its fields copied) returns `qs` unchanged
        qs = TaskFilter(data=data, queryset=qs).qs
    if not filters.sprint and sprint is not None:
        qs = qs.filter(in_sprint_q(sprint_pk=sprint.pk))
    return qs


def live_filters(*, filters: BoardFilters, sprint) -> dict[str, object]:
    """What `board_tasks` applies, for board.js to apply to live cards (`BoardRules.matches`):
    only the values the TaskFilter accepted, cleaned, and the default sprint written out; a
    filter left out narrows nothing. tests/data/task_filter_cases.json pins the two together."""
    data = filters.as_data()
    data.pop("status", None)
    if filters.status:
        data["status"] = list(filters.status)
    if filters.priority:
        data["priority"] = filters.priority
    if not filters.sprint and sprint is not None:
        data["sprint"] = sprint.sprint_id
    if data.get("sprint") == "all":
        del data["sprint"]
    return data


def archive_cutoff(config, now) -> datetime | None:
    """Tasks that ended before this are archived; None when archival is off (0 days)."""
    days = config.archive_after_days
    return now - timedelta(days=days) if days else None


def archived_q(cutoff: datetime) -> Q:
    """Terminal tasks whose last change (their end) is older than `cutoff`."""
    ended = Q(updated__lt=cutoff) | Q(updated__isnull=True, created__lt=cutoff)
    return Q(status__in=p.TERMINAL_TASK_STATES) & ended


@dataclass
class Column:
    status: str
    count: int
    cards: list  # of Card, or of the page's card fragments (`board_state`'s `read_cards`)
    terminal: bool
    expanded: bool
    cards_html: str = ""  # the cards' markup, where `boards/_column.html` places it
    # The advisory WIP limit (ProjectConfig.wip_limits; None: none) and the card cap.
    limit: int | None = None
    cap: int = COLUMN_CARD_LIMIT
    lane: str | None = None  # the swimlane this column is a cell of (None: no swimlanes)
    html: str = ""  # the whole column's markup, filled in by the view (boards.board.web.columns)

    @property
    def hidden(self) -> int:
        return self.count - len(self.cards)

    @property
    def over_limit(self) -> bool:
        """Over the limit (issue #13). CLAIMED's is enforced at claim since issue 24
        (`selectors.limits`); a column can still be over after the limit was lowered."""
        return self.limit is not None and self.count > self.limit

    @property
    def at_limit(self) -> bool:
        return self.limit is not None and self.count == self.limit


@dataclass
class Lane:
    """One swimlane: the cells of the shown columns for one goal, sprint or assignee."""

    key: str
    columns: list[Column]

    @property
    def count(self) -> int:
        return sum(c.count for c in self.columns)


def board_state(
    *, project: Project, filters: BoardFilters, now, read_cards=None
) -> dict[str, object]:
    """Everything the board page shows, in a constant number of queries.

    The shown cards are `Card`s (`board_cards`), or what `read_cards(queryset, config=, now=)`
    makes of the shown tasks: the page passes its fragment reader
    (`boards.board.live.fragments.page_fragments`), whose items have a key and a status too."""
    header = board_header(project=project)
    config = header["config"]
    # "Active sprint by default": the open sprint's tasks, or every task when none is open.
    active = header["sprint"] if header["sprint"] is not None and header["sprint"].is_open else None
    cutoff = archive_cutoff(config, now)
    # Archival (issue #11): tasks that ended long ago leave the default view; history, search
    # (?archived=1), the API and exports still have them.
    cutoff = cutoff if not filters.archived else None
    shown = tuple(
        s for s in p.TASK_STATES if s not in p.TERMINAL_TASK_STATES or s in filters.expanded
    )
    # The shape's statements are built once per process (`rows.compiled`); the project, the
    # sprint and the cutoff are bound into them.
    shape = ("board", filters, shown, active is not None, cutoff is not None, COLUMN_CARD_LIMIT)
    values = [project.pk, *([active.pk] if active else []), *([cutoff] if cutoff else [])]
    build = functools.partial(_selection, filters, shown, active is not None, cutoff is not None)
    (counts_sql, counts_params), shown_sql = rows.compiled(shape, build, *values)
    with connection.cursor() as cursor:
        cursor.execute(counts_sql, counts_params)
        grouped = cursor.fetchall()
    counts = {status: n for status, n, _ in grouped if n}
    archived = sum(old for _, _, old in grouped)
    limits = wip_limits(config)
    cards = (read_cards or board_cards)(Selection(*shown_sql), config=config, now=now)
    by_status: dict[str, list] = {s: [] for s in p.TASK_STATES}
    for card in cards:
        by_status[card.status].append(card)
    columns = [
        Column(
            status=s,
            count=counts.get(s, 0),
            cards=by_status[s],
            terminal=s in p.TERMINAL_TASK_STATES,
            expanded=s not in p.TERMINAL_TASK_STATES or s in filters.expanded,
            limit=limits.get(s),
            cap=COLUMN_CARD_LIMIT,
        )
        for s in BOARD_COLUMNS
    ]
    lanes = []
    if filters.lanes:
        tasks = _scoped(Project(pk=project.pk), filters, active, cutoff)
        lanes = _lanes(tasks, columns, filters.lanes)
    agents = list(
        Agent.objects.filter(project=project)
        .select_related("current_task")
        .order_by("role", "agent_id")
    )
    # Seed 003 availability on the agents panel, in one query for all of them.
    available = agents_availability(project_id=project.pk, agents=agents, now=now)
    for agent in agents:
        agent.availability = available[agent.pk]
    alerts = list(open_alerts(project=project)[:20])
    return {
        **header,
        # Issue 24: the enforced concurrency caps, shown above the agents.
        "concurrency": concurrency_shown(project=project, config=config, now=now),
        "columns": columns,
        "lanes": lanes,
        "agents": agents,
        "alerts": alerts,
        "filters": filters,
        "live_filters": live_filters(filters=filters, sprint=active),
        "total": sum(counts.values()),
        "archived": archived,
    }


def _scoped(project: Project, filters: BoardFilters, sprint, cutoff) -> QuerySet[Task]:
    """`board_tasks` without the archived ones (those that ended before `cutoff`)."""
    tasks = board_tasks(project=project, filters=filters, sprint=sprint)
    return tasks.exclude(archived_q(cutoff)) if cutoff is not None else tasks


def _selection(filters, shown, in_sprint: bool, archiving: bool, project_pk, *values):
    """`board_state`'s two statements, from the ORM: the tasks by state (the archived ones
    counted apart) and the shown cards' ids — in each column its first COLUMN_CARD_LIMIT by
    the board's order (priority, created, id) — in that order."""
    values = list(values)
    sprint = Sprint(pk=values.pop(0)) if in_sprint else None
    cutoff = values.pop(0) if archiving else None
    tasks = board_tasks(project=Project(pk=project_pk), filters=filters, sprint=sprint)
    by_status = tasks.order_by().values_list("status")
    if cutoff is not None:
        old = archived_q(cutoff)
        grouped = by_status.annotate(n=Count("id", filter=~old), old=Count("id", filter=old))
    else:
        grouped = by_status.annotate(n=Count("id"), old=Value(0))
    ranked = _scoped(Project(pk=project_pk), filters, sprint, cutoff).filter(status__in=shown)
    ranked = ranked.annotate(
        rank=Window(
            RowNumber(),
            partition_by=[F("status")],
            order_by=[F("priority").asc(), F("created").asc(), F("id").asc()],
        )
    )
    cards = ranked.filter(rank__lte=COLUMN_CARD_LIMIT).order_by("priority", "created", "id")
    return [grouped.query.sql_with_params(), cards.values("id").query.sql_with_params()]


def wip_limits(config) -> dict[str, int]:
    """The project's advisory WIP limits by column (issue #13), the columns without one left
    out. CLAIMED's is enforced at claim (issue 24, `selectors.limits`); the others are shown."""
    return {s: int(n) for s, n in (config.wip_limits or {}).items() if s in BOARD_COLUMNS and n}


_LANE_VALUES = {"goal": F("goal__goal_id"), "assignee": F("assigned_to")}


def _lanes(tasks: QuerySet, columns: list[Column], by: str) -> list[Lane]:
    """The shown columns split into swimlanes by goal, sprint or assignee: one more query (each
    task's lane: a narrow row per task, so the counts are right for the cut columns too); the
    cards are the columns' own, so each column keeps its cap and its order. Lanes are sorted
    by key, the cards with none last."""
    value = _LANE_VALUES.get(by, F(SPRINT_LANE))
    scoped = with_lanes(tasks) if by == "sprint" else tasks
    # Each task's lane, for all of them (the counts) and the shown cards (by key): one query.
    lane_of: dict[str, str] = {}
    counts: dict[tuple[str, str], int] = {}
    for key, status, lane in scoped.order_by().values_list("key", "status", value):
        lane_of[key] = lane or NO_LANE
        counts[status, lane or NO_LANE] = counts.get((status, lane or NO_LANE), 0) + 1
    shown = [c for c in columns if c.expanded]
    keys = sorted(
        {k for s, k in counts if any(c.status == s for c in shown)}, key=lambda k: (k == NO_LANE, k)
    )
    return [
        Lane(
            key=key,
            columns=[
                Column(
                    status=c.status,
                    count=counts.get((c.status, key), 0),
                    cards=[card for card in c.cards if lane_of.get(card.key) == key],
                    terminal=c.terminal,
                    expanded=True,
                    limit=None,  # a column's WIP limit is the column's, shown in its heading
                    cap=c.cap,
                    lane=key,
                )
                for c in shown
            ],
        )
        for key in keys
    ]
