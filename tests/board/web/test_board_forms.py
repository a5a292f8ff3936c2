"""The board's and the drawer's forms by role and state (boards/board/web/board.py, SPEC §7).

Split from the milestone file test_oversight_views.py (issue #22 item 3).
"""

from __future__ import annotations

import re

import pytest

from tests.board.web.helpers import read_columns
from tests.board.web.test_actions import (
    ADMIN,
    MEMBER,
    VIEWER,
    _awaiting,
    _checkpoint,
    _pause,
    _suspended,
    client_for,
)

pytestmark = pytest.mark.django_db


# -- role-aware pages --------------------------------------------------------------------------


def post_forms(html: str) -> list[str]:
    """The actions of the page's POST forms, sign-out excepted."""
    actions = re.findall(r'<form method="post" action="([^"]+)"', html)
    return [a for a in actions if a != "/logout/"]


def test_the_board_offers_forms_by_role(world):
    world.blocked("T-1", sprint_scope="planned")
    slug = world.project.slug
    pages = {
        who: client_for(world, who).get(f"/p/{slug}/").content.decode()
        for who in (VIEWER, MEMBER, ADMIN)
    }
    assert post_forms(pages[VIEWER]) == []
    assert post_forms(pages[MEMBER]) == [f"/p/{slug}/notes"]
    admin = post_forms(pages[ADMIN])
    for path in (
        "sprints/sprint-1/checkpoint",
        "sprints/sprint-1/abort",
        "pause",
        "goals/goal-1/complete",
        "goals/goal-1/abort",
        "sprints/sprint-1/deadline",
    ):
        assert f"/p/{slug}/{path}" in admin
    assert f"/p/{slug}/sprints/sprint-1/resume" not in admin  # not at a checkpoint
    assert f'href="/p/{slug}/inbox"' in pages[ADMIN]
    assert f'href="/p/{slug}/inbox"' not in pages[MEMBER]


def test_board_controls_follow_the_sprint_and_pause_state(world):
    _checkpoint(world)
    _pause(world)
    slug = world.project.slug
    html = client_for(world, ADMIN).get(f"/p/{slug}/controls").content.decode()
    forms = post_forms(html)
    assert f"/p/{slug}/sprints/sprint-1/resume" in forms
    assert f"/p/{slug}/sprints/sprint-1/checkpoint" not in forms
    assert f"/p/{slug}/resume" in forms and f"/p/{slug}/pause" not in forms


def test_the_drawer_offers_forms_by_role_and_status(world):
    world.blocked("T-1", sprint_scope="planned")
    world.claimed("T-2", coder="coder-2", sprint_scope="planned")
    slug = world.project.slug

    def drawer(who, key):
        return post_forms(client_for(world, who).get(f"/p/{slug}/tasks/{key}/").content.decode())

    assert drawer(VIEWER, "T-1") == []
    assert drawer(MEMBER, "T-1") == [f"/p/{slug}/tasks/T-1/notes"]
    blocked = drawer(ADMIN, "T-1")
    for action in ("release", "rescope", "abandon", "cancel", "suspend", "limits", "notes"):
        assert f"/p/{slug}/tasks/T-1/{action}" in blocked, action
    assert f"/p/{slug}/tasks/T-1/override-block" not in blocked  # already BLOCKED
    claimed = drawer(ADMIN, "T-2")
    for action in ("override-block", "release-claim", "cancel", "suspend", "limits"):
        assert f"/p/{slug}/tasks/T-2/{action}" in claimed, action
    assert f"/p/{slug}/tasks/T-2/release" not in claimed


def test_suspended_and_awaiting_cards_carry_a_badge(world):
    _suspended(world, "T-1")
    _awaiting(world, "T-2")
    html = client_for(world, VIEWER).get(f"/p/{world.project.slug}/").content.decode()
    columns = read_columns(html)
    assert "suspended" in columns["UNCLAIMED"].text
    assert "awaiting human approval" in columns["READY_FOR_REVIEW"].text
    drawer = client_for(world, ADMIN).get(f"/p/{world.project.slug}/tasks/T-2/").content
    assert f"/p/{world.project.slug}/tasks/T-2/approve".encode() in drawer
