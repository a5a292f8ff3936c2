"""A column's frame (`boards.board.web.columns`): drawn by `boards/_column.html` once per its
values and remembered, the cards placed inside; a page drawn from remembered frames is the page
drawn from nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.board.live import fragments
from boards.board.web.columns import CardSlots, forget_frames
from tests.board.live.helpers import sprint_world
from tests.board.web.helpers import read_columns
from tests.factories import member

pytestmark = pytest.mark.django_db

COLUMN = "boards/_column.html"


@pytest.fixture
def world():
    world = sprint_world()
    world.unclaimed("task-1", sprint_scope="planned")
    world.claimed("task-2", sprint_scope="planned")
    return world


@pytest.fixture
def client(world):
    client = Client()
    client.force_login(member(world.project, "viewer"))
    return client


def _page(client, world, query: str = "") -> tuple[str, int]:
    """The board's columns (the page around them shows the time and a token) and how many
    column frames were drawn for it."""
    response = client.get(f"/p/{world.project.slug}/{query}")
    assert response.status_code == 200
    html = response.content.decode()
    drawn = sum(1 for template in response.templates if template.name == COLUMN)
    return html[html.index('<div class="columns') : html.index('<aside class="side">')], drawn


def test_a_warm_board_draws_no_column_and_shows_the_same_columns(client, world):
    forget_frames()
    first, drawn = _page(client, world)
    assert drawn == 11  # every column of the board, the collapsed ones too
    again, drawn = _page(client, world)
    assert (again, drawn) == (first, 0)


def test_a_column_whose_count_changes_is_drawn_again_and_only_it(client, world):
    forget_frames()
    before, _ = _page(client, world)
    world.unclaimed("task-3", sprint_scope="planned")
    after, drawn = _page(client, world)
    assert drawn == 1
    columns = read_columns(after)
    assert columns["UNCLAIMED"].count == 2
    assert [card["data-key"] for card in columns["UNCLAIMED"].cards] == ["task-1", "task-3"]
    assert read_columns(before)["CLAIMED"] == columns["CLAIMED"]
    # Drawn from nothing (no frame, no card remembered), the page is the same.
    forget_frames()
    fragments.forget_local()
    cold, drawn = _page(client, world)
    assert (cold, drawn) == (after, 11)


@pytest.mark.parametrize("query", ["?lanes=assignee", "?open=MERGED", "?sprint=all&lanes=goal"])
def test_frames_follow_the_filters_and_swimlanes(client, world, query):
    forget_frames()
    plain, _ = _page(client, world)
    forget_frames()
    cold, drawn = _page(client, world, query)
    warm, again = _page(client, world, query)
    assert (warm, again) == (cold, 0)
    assert drawn > 0 and cold != plain


def test_the_resync_fragment_has_the_pages_columns_with_their_cards(client, world):
    page, _ = _page(client, world)
    response = client.get(f"/p/{world.project.slug}/fragment")
    columns = response.json()["columns"]
    assert "\x00" not in columns and "\x00" not in page
    assert columns.strip() == page.strip()
    assert [c["data-key"] for c in read_columns(columns)["CLAIMED"].cards] == ["task-2"]


def test_text_a_request_sends_cannot_pass_for_a_slot():
    from django.utils.html import escape

    from boards.board.live.fragments import CardFragment
    from boards.board.selectors.board import BoardFilters, Column

    slots = CardSlots()
    column = Column(
        status="CLAIMED",
        count=1,
        cards=[CardFragment("k", "CLAIMED", "<article/>")],
        terminal=False,
        expanded=True,
    )
    sent = escape("\x00<\x00slot 0\x00>\x00")  # e.g. a refused form's task key, shown again
    page = f"<p>{sent}</p>{slots.column_html(column, BoardFilters())}<p>{sent}</p>"
    filled = slots.fill(page)
    assert filled.count("<article/>") == 1
    assert filled.startswith(f"<p>{sent}</p>") and filled.endswith(f"<p>{sent}</p>")
