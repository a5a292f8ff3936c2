"""The board loads in constant queries whatever the task count (SPEC §11), and stays usable at
5,000 tasks: terminal columns collapsed to counts, long columns cut with a message."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from boards import protocol as p
from boards.board.selectors.board import COLUMN_CARD_LIMIT
from tests.board.web.helpers import bulk_tasks, read_columns, sprint_world
from tests.factories import ProjectFactory
from tests.module_rows import shared_rows

pytestmark = pytest.mark.django_db

EVERY_STATE = list(p.TASK_STATES)
# The board page's statements, whatever the task count (swimlanes add one).
BOARD_QUERIES = 11


def _real_cards(world) -> None:
    """Cards reached through the services, with every relation a card shows."""
    world.unclaimed("dep-1", sprint_scope="planned")
    world.unclaimed("waits-1", sprint_scope="planned", depends_on=["dep-1"])
    world.claimed("claimed-1", coder="coder-1", sprint_scope="planned", depends_on=[])
    world.under_review("review-1", coder="coder-2", sprint_scope="planned")
    world.blocked("blocked-1", coder="coder-3", sprint_scope="planned")


def _board_queries(client: Client, slug: str, query: str = "") -> tuple[list[str], str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/p/{slug}/{query}")
    assert response.status_code == 200
    return [q["sql"] for q in queries.captured_queries], response.content.decode()


@pytest.fixture(scope="module")
def small_and_large(django_db_setup, django_db_blocker):
    """A 10-task and a 1000-task board, built once for the four layouts (the tests only read
    them; each test's own writes, the sign-ins, are rolled back after it)."""
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            small, large = sprint_world(ProjectFactory()), sprint_world(ProjectFactory())
            for world in (small, large):
                _real_cards(world)
            bulk_tasks(small, 10 - 5, EVERY_STATE)
            bulk_tasks(large, 1000 - 5, EVERY_STATE)
        yield small, large


@pytest.mark.parametrize("lanes", ["", "&lanes=goal", "&lanes=sprint", "&lanes=assignee"])
def test_the_board_query_count_is_the_same_for_10_and_1000_tasks(small_and_large, lanes):
    # Terminal columns opened: every card path runs; swimlanes add one query, whatever the size.
    query = "?open=MERGED&open=ABANDONED" + lanes
    small, large = small_and_large
    client = Client()
    client.force_login(small.admin)
    client.get(f"/p/{small.project.slug}/")  # the session's first use is not the board's
    small_sql, small_html = _board_queries(client, small.project.slug, query)
    client.force_login(large.admin)
    client.get(f"/p/{large.project.slug}/")
    large_sql, large_html = _board_queries(client, large.project.slug, query)

    assert len(small_sql) == len(large_sql), "\n".join(large_sql)
    # Issue #26 item 4: the header in two statements (the sprint, breaker and goal rows with
    # the filter menus' sprints and goals; counts and alerts with sprint metrics); the column
    # counts with the archived count in one; the shown cards' versions in one (the selection,
    # the security reviewers and every input together), the missing cards' rows in one.
    # Session, user, and the project with the member's role (one) included.
    assert len(large_sql) == BOARD_QUERIES + (1 if lanes else 0), len(large_sql)
    # Both boards really show cards with dependencies and open reviews.
    for html in (small_html, large_html):
        assert 'class="waiting-keys">dep-1<' in html
        assert "waiting on 1 dependency" in html
        assert "code-reviewer-1" in html
    assert small_html.count('<article class="card') < 20
    # The large board fills its columns to the cap: hundreds of cards, the same queries.
    assert large_html.count('<article class="card') >= 8 * COLUMN_CARD_LIMIT


def test_a_5000_task_board_renders_collapsed_and_cut():
    world = sprint_world()
    # Weighted towards done work, like a long-running project: most tasks are MERGED.
    statuses = ["MERGED"] * 4 + EVERY_STATE
    bulk_tasks(world, 5000, statuses)
    client = Client()
    client.force_login(world.admin)
    response = client.get(f"/p/{world.project.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    columns = read_columns(html)
    counts = {s: c.count for s, c in columns.items()}
    assert sum(counts.values()) == 5000
    assert "5000 tasks" in html
    for status in p.TERMINAL_TASK_STATES:
        column = columns[status]
        assert column.collapsed, status
        assert column.cards == [], status
        assert column.count > 0, status
        assert "expand" in column.text
    assert counts["MERGED"] > 1500
    for status in p.NON_TERMINAL_TASK_STATES:
        column = columns[status]
        assert not column.collapsed
        assert column.count > COLUMN_CARD_LIMIT, status
        assert len(column.cards) == COLUMN_CARD_LIMIT, status
        hidden = column.count - COLUMN_CARD_LIMIT
        assert f"{hidden} more — narrow the filters to see them" in column.text, status
        # The cards shown are the column's most urgent: priority 1 first.
        priorities = [int(card["data-priority"]) for card in column.cards]
        assert priorities == sorted(priorities), status
    # Opening a terminal column shows its first cards, still cut at the limit.
    opened = read_columns(client.get(f"/p/{world.project.slug}/?open=MERGED").content.decode())
    assert len(opened["MERGED"].cards) == COLUMN_CARD_LIMIT
    assert opened["SUPERSEDED"].collapsed
