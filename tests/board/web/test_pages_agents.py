"""The agents page (boards/board/web/pages.py, SPEC §7): keys shown once, revoke, disable,
availability.

Split from the milestone file test_oversight_views.py (issue #22 item 3).
"""

from __future__ import annotations

import re

import pytest

from agents.models import Agent, AgentKey
from agents.services import agent_leave
from tests.board.web.test_actions import (
    ADMIN,
    _key,
    client_for,
)

pytestmark = pytest.mark.django_db


def test_a_new_agent_and_its_key_are_shown_once(world):
    client = client_for(world, ADMIN)
    response = client.post(
        f"/p/{world.project.slug}/agents/new", {"role": "code_reviewer", "security_reviewer": "on"}
    )
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    plain = re.search(r'id="plain-key">([^<]+)<', html).group(1)
    agent = Agent.objects.get(project=world.project, agent_id="code-reviewer-4")  # next free
    assert agent.security_reviewer
    key = AgentKey.objects.get(agent=agent)
    assert key.key_hash == AgentKey.hash(plain) and plain.startswith(f"liza_{key.prefix}_")
    # Never again: the agents page lists the key by its prefix only.
    page = client.get(f"/p/{world.project.slug}/agents").content.decode()
    assert key.prefix in page and plain not in page

    again = client.post(f"/p/{world.project.slug}/agents/code-reviewer-4/keys", {"label": "ci"})
    assert again.status_code == 201
    second = re.search(r'id="plain-key">([^<]+)<', again.content.decode()).group(1)
    assert second != plain and agent.keys.count() == 2


def test_revoke_and_disable_from_the_agents_page(world):
    key = _key(world)
    client = client_for(world, ADMIN)
    response = client.post(f"/p/{world.project.slug}/keys/{key.prefix}/revoke", {"next": "agents"})
    assert response["Location"] == f"/p/{world.project.slug}/agents"
    key.refresh_from_db()
    assert key.revoked_at is not None
    client.post(f"/p/{world.project.slug}/agents/coder-1/enabled", {"enabled": "0"})
    assert not world.coder.enabled
    page = client.get(f"/p/{world.project.slug}/agents").content.decode()
    assert "coder-1 disabled." in page
    client.post(f"/p/{world.project.slug}/agents/coder-1/enabled", {"enabled": "1"})
    assert world.coder.enabled


def test_the_agents_page_shows_availability_and_sets_it(world):
    client = client_for(world, ADMIN)
    page = client.get(f"/p/{world.project.slug}/agents").content.decode()
    assert "Set overloaded" in page
    client.post(
        f"/p/{world.project.slug}/agents/coder-1/availability",
        {"state": "overloaded", "next": "agents"},
    )
    assert world.coder.overloaded
    page = client.get(f"/p/{world.project.slug}/agents").content.decode()
    assert "availability-overloaded" in page
    assert "Set available" in page
    client.post(f"/p/{world.project.slug}/agents/coder-1/availability", {"state": "available"})
    assert not world.coder.overloaded


def test_an_agent_that_left_reads_as_left_on_the_agents_page(world):
    gone = agent_leave(project=world.project, agent=world.agent("coder-2"), now=world.tick())
    page = client_for(world, ADMIN).get(f"/p/{world.project.slug}/agents").content.decode()

    row = re.search(r'<tr class="agent-row[^"]*" data-agent="coder-2">.*?</tr>', page, re.S)[0]
    status = re.findall(r"<td>(.*?)</td>", row, re.S)[2]  # agent, role, status
    assert status.strip() == (
        '<span class="badge departed" title="its session ended; it registers again to start a '
        f'new one">left <time datetime="{gone.left_at.isoformat()}">'
        f"{gone.left_at:%Y-%m-%d %H:%M} UTC</time></span>"
    )
