"""What the board page tests share: a sprint world, tasks in bulk, and a reader of the columns.

A few tasks walk through the real services (tests/lifecycle.py). Volume is added with
`bulk_create` — status set in the constructor, never assigned afterwards — together with the
sprint scope, dependency edges and open review claims a real board has, so the page's queries
see every relation a card shows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser

from django.db import connection

from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.sprints import sprint_open
from tests.board.live.helpers import sprint_world
from tests.lifecycle import World

__all__ = ["ColumnView", "bulk_tasks", "read_columns", "sprint_world"]


# Per status: what a row in that state carries (seed 002 "Validation Rules", roughly).
def _fields(status: str, i: int, now) -> dict:
    coder = f"coder-{i % 3 + 1}"
    fields: dict = {"status": status}
    if status in ("CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED", "INTEGRATION_FAILED"):
        fields.update(
            assigned_to=coder,
            worktree=f".worktrees/bulk-{i}",
            base_commit="base0001",
            iteration=1 + i % 3,
        )
    if status == "CLAIMED":
        fields["lease_expires"] = now + timedelta(minutes=5)
    if status in ("READY_FOR_REVIEW", "APPROVED", "REJECTED"):
        fields["review_commit"] = f"{i:08x}"
    if status == "REJECTED":
        fields.update(rejection_reason="Needs tests", review_cycles_current=1)
    if status == "BLOCKED":
        fields.update(blocked_reason="Spec is silent", blocked_questions=["What now?"])
    return fields


def bulk_tasks(world: World, count: int, statuses: list[str], *, prefix: str = "bulk") -> None:
    """`count` tasks of the open sprint, cycling through `statuses`; every task after the first
    depends on its predecessor and every READY_FOR_REVIEW task has an open review claim."""
    project, now = world.project, world.now
    sprint = sprint_open(project=project)
    goal = sprint.goal if sprint else None
    cycle = itertools.cycle(statuses)
    rows = Task.objects.bulk_create(
        Task(
            project=project,
            goal=goal,
            key=f"{prefix}-{i}",
            description=f"Bulk task {i} of the board tests",
            priority=1 + i % 5,
            created=now + timedelta(microseconds=i),
            spec_ref=f"specs/{prefix}-{i}.md",
            done_when="it works",
            **_fields(next(cycle), i, now),
        )
        for i in range(count)
    )
    if sprint is not None:
        Through = sprint.planned.through
        Through.objects.bulk_create(Through(sprint=sprint, task=t) for t in rows)
    Deps = Task.depends_on.through
    Deps.objects.bulk_create(
        Deps(from_task=t, to_task=prev) for prev, t in itertools.pairwise(rows)
    )
    Review.objects.bulk_create(
        Review(
            project=project,
            task=t,
            reviewer="code-reviewer-1",
            review_commit=t.review_commit,
            claimed_at=now,
            lease_expires=now + timedelta(minutes=10),
        )
        for t in rows
        if t.status == "READY_FOR_REVIEW"
    )
    _analyze(Task, Task.depends_on.through, Review, *([Through] if sprint is not None else []))


def _analyze(*models) -> None:
    """The statistics a project this size has: autovacuum analyses a table long before it holds
    thousands of new rows, but never rows still inside a test's transaction. Without them the
    planner reads what earlier tests left (a flushed table that autovacuum recorded as pages
    without rows: none of these rows, it estimates) and joins them in nested loops; the board's
    statements then took seconds each, and one outlived the 30 s statement timeout in CI.
    ANALYZE inside the transaction counts the transaction's own rows."""
    tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


@dataclass
class ColumnView:
    status: str
    classes: set[str]
    count: int | None = None
    cards: list[dict[str, str]] = field(default_factory=list)
    text: str = ""

    @property
    def collapsed(self) -> bool:
        return "collapsed" in self.classes


class _ColumnReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.columns: dict[str, ColumnView] = {}
        self._current: ColumnView | None = None
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        if tag == "section" and "column" in classes:
            self._current = ColumnView(status=attrs["data-status"], classes=classes)
            self.columns[self._current.status] = self._current
            self._depth = 0
        if self._current is None:
            return
        if tag == "section":
            self._depth += 1
        if tag == "span" and "count" in classes:
            self._current.count = int(attrs["data-count"])
        if tag == "article" and "card" in classes:
            self._current.cards.append(attrs)

    def handle_endtag(self, tag):
        if self._current is not None and tag == "section":
            self._depth -= 1
            if self._depth == 0:
                self._current = None

    def handle_data(self, data):
        if self._current is not None:
            self._current.text += data


def read_columns(html: str) -> dict[str, ColumnView]:
    """The board's columns as the browser would show them: status, count, cards, text."""
    reader = _ColumnReader()
    reader.feed(html)
    return reader.columns


# Who may open a page any project member reads (insights, agent page, graph, activity), and the
# status each gets. Pages are for people: an agent's bearer key opens no session, so it is sent
# to sign in like anyone anonymous.
MEMBER_PAGE_MATRIX = [
    ("anonymous", 302),
    ("viewer", 200),
    ("member", 200),
    ("admin", 200),
    ("admin of another project", 404),
    ("no membership", 404),
    ("agent of this project", 302),
    ("agent of another project", 302),
]
