"""The inbox pages (boards/board/web/pages.py, SPEC §7): the project's and staff's, what they list.

Split from the milestone file test_oversight_views.py (issue #22 item 3).
"""

from __future__ import annotations

import re

import pytest

from boards.coordination.models.records import Alert, Event
from tests.board.web.helpers import sprint_world
from tests.board.web.test_actions import (
    ADMIN,
    ANONYMOUS,
    ROLES,
    STAFF,
    _alert,
    _awaiting,
    _checkpoint,
    _discovery,
    _suspended,
    client_for,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ROLES)
def test_the_cross_project_inbox_is_for_staff(world, who):
    world.blocked("T-1")
    response = client_for(world, who).get("/inbox")
    expected = {ANONYMOUS: 302, STAFF: 200}.get(who, 403)
    assert response.status_code == expected
    assert ("T-1" in response.content.decode()) == (who == STAFF)


def test_the_inbox_lists_what_waits_for_a_human(world):
    slug = world.project.slug
    world.blocked("T-1")
    # Two distinct coders failed T-2: it is limit-blocked (hypothesis exhaustion).
    world.blocked("T-2", coder="coder-2")
    client_for(world, ADMIN).post(f"/p/{slug}/tasks/T-2/release", {"answer": "Try again"})
    world.claim("T-2", coder="coder-3")
    world.block("T-2", reason="Still stuck")
    world.integration_failed("T-3")
    _awaiting(world, "T-4")
    _suspended(world, "T-5")
    _discovery(world)
    _checkpoint(world)

    html = client_for(world, ADMIN).get(f"/p/{slug}/inbox").content.decode()
    blocked = html[html.index('id="blocked"') : html.index('id="awaiting-approval"')]
    assert 'data-task="T-1"' in blocked and 'data-task="T-2"' in blocked
    assert "Spec is silent on errors" in blocked and "What should happen on error?" in blocked
    assert "Read the spec" in blocked  # attempted
    t2 = blocked[blocked.index('data-task="T-2"') :]
    assert "limit reached" in t2 and "coder-2, coder-3" in t2
    assert "limit reached" not in blocked[: blocked.index('data-task="T-2"')]
    for section, marker in (
        ("integration-failed", 'data-task="T-3"'),
        ("awaiting-approval", 'data-task="T-4"'),
        ("suspended", 'data-task="T-5"'),
        ("discoveries", 'data-discovery="disc-1"'),
        ("checkpoints", 'data-sprint="sprint-1"'),
    ):
        assert f'id="{section}"' in html and marker in html, section
    for path in (
        "tasks/T-1/release",
        "tasks/T-1/rescope",
        "tasks/T-1/abandon",
        "tasks/T-4/approve",
        "tasks/T-4/reject",
        "tasks/T-5/resume",
        "discoveries/disc-1/triage",
        "sprints/sprint-1/resume",
        "sprints/sprint-1/abort",
    ):
        assert f'action="/p/{slug}/{path}"' in html, path


def test_the_staff_inbox_spans_projects_and_links_to_each(world):
    other = sprint_world()
    world.blocked("A-1")
    other.blocked("B-1")
    client = client_for(world, STAFF)
    html = client.get("/inbox").content.decode()
    assert f'href="/p/{world.project.slug}/"' in html and f'href="/p/{other.project.slug}/"' in html
    assert f'action="/p/{other.project.slug}/tasks/B-1/release"' in html
    response = client.post(
        f"/p/{other.project.slug}/tasks/B-1/release", {"answer": "Go", "next": "inbox-all"}
    )
    assert response["Location"] == "/inbox"
    assert other.task("B-1").status == "UNCLAIMED"


def test_the_inbox_lists_open_alerts_most_severe_first_and_acknowledging_one_keeps_it_listed(
    world,
):
    made = _alert(world)  # critical, on T-7 (itself BLOCKED: one inbox item already)
    Alert.objects.create(
        project=world.project, type=Alert.Type.STALE_PAUSE, level=Alert.Level.WARNING,
        message="paused for 3 h", created=world.tick(),
    )  # fmt: skip
    client = client_for(world, ADMIN)
    page = client.get(f"/p/{world.project.slug}/inbox").content.decode()
    section = page[page.index('id="alerts"') : page.index("</section>", page.index('id="alerts"'))]
    assert re.findall(r'data-alert="\d+"', section) == [
        f'data-alert="{made.prefix}"',
        f'data-alert="{Alert.objects.get(type=Alert.Type.STALE_PAUSE).pk}"',
    ]
    assert section.count(">Acknowledge</button>") == 2
    assert re.search(r'id="inbox-count">3<', page)  # the blocked task and two alerts

    response = client.post(f"/p/{world.project.slug}/alerts/{made.prefix}/acknowledge", {})
    assert response.status_code == 302
    page = client.get(f"/p/{world.project.slug}/inbox").content.decode()
    assert re.search(r'id="inbox-count">2<', page)  # no longer waiting
    assert "acknowledged by" in page and page.count(">Acknowledge</button>") == 1
    # Again: a conflict, said on the page, nothing changed.
    again = client.post(f"/p/{world.project.slug}/alerts/{made.prefix}/acknowledge", {})
    assert again.status_code in (302, 409)
    assert Event.objects.filter(action="alert_acknowledged", outcome="applied").count() == 1


def test_another_projects_alert_is_404_for_this_projects_admin(world):
    foreign = _alert(sprint_world())
    response = client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/alerts/{foreign.prefix}/acknowledge", {}
    )
    assert response.status_code == 404
    assert Alert.objects.get(pk=foreign.prefix).acknowledged_at is None
