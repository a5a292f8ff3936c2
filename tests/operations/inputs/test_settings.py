"""Issue #27: every numeric setting has an upper bound, checked by the one input validation.

A number past a bound is a 400 naming the setting (never accepted, then a 500 from every
claim-next, `/work` or board page that turns it into an interval or a date); at the bound
itself everything still answers.
"""

from __future__ import annotations

import pytest

from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.selectors.access import config_of
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_field_error,
    domain_snapshot,
    session_client,
)
from tests.api.test_role_matrix import Tenant

pytestmark = pytest.mark.django_db

HUGE = 99999999999999999999999


def _config(t: Tenant, body):
    return session_client(t.users["admin"]).patch(f"{api_base(t.slug)}/config", body, format="json")


@pytest.mark.parametrize(("name", "bounds"), sorted(p.CONFIG_BOUNDS.items()))
@pytest.mark.parametrize("past", ["one_more", "huge"])
def test_a_numeric_setting_past_its_bound_is_a_400_naming_it(name, bounds, past):
    t = Tenant()
    before = domain_snapshot(t.project)
    value = bounds[1] + 1 if past == "one_more" else HUGE
    assert_field_error(_config(t, {name: value}), name)
    assert domain_snapshot(t.project) == before


@pytest.mark.parametrize(
    "body",
    [
        {"retry_backoff": [HUGE]},
        {"retry_backoff": [5, p.RETRY_BACKOFF_STEP_MAX + 1]},
        {"state_timeouts": {"CLAIMED": {"seconds": HUGE}}},
        {"state_timeouts": {"CLAIMED": {"seconds": p.STATE_TIMEOUT_MAX_SECONDS + 1}}},
        {"wip_limits": {"CLAIMED": HUGE}},
    ],
)
def test_a_number_inside_a_setting_past_its_bound_is_a_400_naming_it(body):
    t = Tenant()
    before = domain_snapshot(t.project)
    assert_field_error(_config(t, body), next(iter(body)))
    assert domain_snapshot(t.project) == before


def test_every_setting_at_its_upper_bound_keeps_the_project_answering():
    """The finding: archive_after_days 2147483647 broke the board, a huge retry_backoff every
    claim-next and `/work`. At the documented maxima they all answer."""
    t = Tenant()
    highest = {name: high for name, (_, high) in p.CONFIG_BOUNDS.items()}
    body = {
        **highest,
        "retry_backoff": [p.RETRY_BACKOFF_STEP_MAX] * p.RETRY_BACKOFF_MAX_STEPS,
        "state_timeouts": {"CLAIMED": {"seconds": p.STATE_TIMEOUT_MAX_SECONDS}},
    }
    response = _config(t, body)
    assert response.status_code == 200, response.json()
    assert config_of(Project.objects.get(pk=t.project.pk)).archive_after_days == 36_500
    t.world.unclaimed("t1")
    admin = session_client(t.users["admin"])
    for path in (f"/p/{t.slug}/", f"/p/{t.slug}/fragment", f"/p/{t.slug}/?archived=1"):
        assert admin.get(path).status_code == 200, path
    coder = agent_client(t.agent("coder-1"))
    assert coder.get(f"{api_base(t.slug)}/work").status_code == 200
    claimed = coder.post(
        f"{api_base(t.slug)}/tasks/claim-next", {"base_commit": "abc1234"}, format="json"
    )
    assert claimed.status_code == 200, claimed.json()


def test_the_settings_form_refuses_a_number_past_its_bound():
    """The board's settings form goes through the same input: the page again with the error."""
    t = Tenant()
    admin = session_client(t.users["admin"])
    page = admin.post(f"/p/{t.slug}/settings", {"archive_after_days": "2147483647"})
    assert page.status_code == 400
    assert config_of(Project.objects.get(pk=t.project.pk)).archive_after_days == 30
