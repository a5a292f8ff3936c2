"""Every oversight page per role (boards/board/web/pages.py, SPEC §7): anonymous, viewer, member,
admin, an admin of another project, staff.

Split from the milestone file test_oversight_views.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Membership
from tests.board.web.test_actions import (
    ROLES,
    client_for,
    expected_status,
)

pytestmark = pytest.mark.django_db


PAGES = [
    ("/p/{slug}/inbox", Membership.Role.ADMIN),
    ("/p/{slug}/settings", Membership.Role.ADMIN),
    ("/p/{slug}/agents", Membership.Role.ADMIN),
    ("/p/{slug}/controls", Membership.Role.MEMBER),
    ("/p/{slug}/breaker", Membership.Role.VIEWER),
    ("/p/{slug}/notifications", Membership.Role.VIEWER),
]


@pytest.mark.parametrize("who", ROLES)
@pytest.mark.parametrize(("path", "needs"), PAGES)
def test_page_role_matrix(world, path, needs, who):
    world.blocked("T-1", sprint_scope="planned")
    response = client_for(world, who).get(path.format(slug=world.project.slug))
    assert response.status_code == expected_status(who, needs, 200)
    if response.status_code != 200:
        assert "T-1" not in response.content.decode()
