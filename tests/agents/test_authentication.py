"""A disabled agent's key is refused on every request, reads included (README: 403).

Before, only the services refused it, so every read — tasks, events, discoveries, anomalies,
agents, config, /work — still answered 200. Each endpoint of the role matrix's table is called
with the key of an agent that may call it, once that agent is disabled.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.services import agent_set_enabled
from tests.api.helpers import agent_client, assert_envelope, domain_snapshot
from tests.api.test_role_matrix import ENDPOINTS, Endpoint, Tenant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_every_endpoint_refuses_a_disabled_agents_key(endpoint: Endpoint):
    t = Tenant()
    values = endpoint.setup(t)
    # The agent the contract lets make the call, else one it refuses, else any coder.
    agent = t.agent(endpoint.right or next(iter(endpoint.wrong), "coder-1"))
    client = agent_client(agent)
    agent_set_enabled(agent=agent, actor=t.world.admin, enabled=False, now=timezone.now())
    before = domain_snapshot(t.project)

    response = endpoint.call(client, endpoint.url(t.slug, values))

    body = assert_envelope(response, 403, "permission_denied")
    assert agent.agent_id in body["message"]
    assert domain_snapshot(t.project) == before


def test_enabled_again_the_same_key_reads_again():
    t = Tenant()
    agent = t.agent("coder-1")
    client = agent_client(agent)
    url = f"/api/v1/projects/{t.slug}/tasks"
    assert client.get(url).status_code == 200
    agent_set_enabled(agent=agent, actor=t.world.admin, enabled=False, now=timezone.now())
    assert_envelope(client.get(url), 403, "permission_denied")
    agent_set_enabled(agent=agent, actor=t.world.admin, enabled=True, now=timezone.now())
    assert client.get(url).status_code == 200
