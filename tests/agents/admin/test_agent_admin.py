"""Agents and keys in the admin: keys issued once and revoked through the services."""

from __future__ import annotations

from django.forms.models import model_to_dict

from agents import keycache
from agents.models import Agent, AgentKey
from agents.selectors import agent_key_lookup
from boards.coordination.models.records import Event
from tests.admin.helpers import (
    KEY_RE,
    add_url,
    admin_url,
    changelist_url,
    page_messages,
    run_action,
)
from tests.api.helpers import api_base, bearer


def _agent_form(agent, **changes):
    data = {
        "enabled": "on" if agent.enabled else "",
        "security_reviewer": "on" if agent.security_reviewer else "",
        # The read-only keys inline still sends its management form.
        "keys-TOTAL_FORMS": str(agent.keys.count()),
        "keys-INITIAL_FORMS": str(agent.keys.count()),
        "keys-MIN_NUM_FORMS": "0",
        "keys-MAX_NUM_FORMS": "0",
    }
    for i, key in enumerate(agent.keys.all()):
        data[f"keys-{i}-id"] = str(key.pk)
        data[f"keys-{i}-agent"] = str(agent.pk)
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def test_issue_key_shows_the_plain_key_once_and_it_authenticates(admin_client, board):
    agent = board.world.agent("coder-2")

    response = run_action(admin_client, Agent, "issue_key", [agent], index="0")

    # Shown on the action's own response, which no cache may keep ...
    assert response.status_code == 200
    assert response.redirect_chain == []
    assert "no-store" in response["Cache-Control"].split(", ")
    shown = KEY_RE.findall(response.content.decode())
    assert len(shown) == 1
    key = agent_key_lookup(plain=shown[0])
    assert key is not None and key.agent == agent
    assert shown[0] not in key.key_hash
    # ... and nowhere else: not a message, not in the session, not on any later page.
    assert not any(shown[0] in message for message in page_messages(response))
    session = admin_client.session
    assert all(shown[0] not in str(value) for value in session.values())
    for url in (changelist_url(AgentKey), changelist_url(Agent), "/"):
        assert shown[0] not in admin_client.get(url).content.decode()
    assert not AgentKey.objects.filter(key_hash__contains=shown[0]).exists()


def test_revoke_action_on_keys_makes_lookup_fail(admin_client, board):
    assert agent_key_lookup(plain=board.plain_key) == board.key

    response = run_action(admin_client, AgentKey, "revoke", [board.key], index="0")

    assert response.status_code == 200
    assert agent_key_lookup(plain=board.plain_key) is None
    board.key.refresh_from_db()
    assert board.key.revoked_at is not None


def test_revoke_keys_action_on_agents_revokes_all_their_active_keys(admin_client, board):
    agent = board.world.agent("coder-1")
    assert agent_key_lookup(plain=board.plain_key) is not None

    run_action(admin_client, Agent, "revoke_keys", [agent], index="0")

    assert agent_key_lookup(plain=board.plain_key) is None
    assert not agent.keys.filter(revoked_at__isnull=True).exists()


def test_keys_have_no_add_form_and_no_delete(admin_client, board):
    assert admin_client.get(add_url(AgentKey)).status_code == 403
    assert admin_client.post(admin_url(board.key, "delete"), {"post": "yes"}).status_code == 403
    assert AgentKey.objects.filter(pk=board.key.pk).exists()


def test_key_hash_is_neither_shown_nor_editable(admin_client, board):
    key = board.key
    before = model_to_dict(key)

    page = admin_client.get(admin_url(key))
    response = admin_client.post(
        admin_url(key), {"label": "laptop", "key_hash": "0" * 64, "prefix": "forged"}
    )

    assert list(page.context["adminform"].form.fields) == ["label"]
    assert key.key_hash not in page.content.decode()
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.label == "laptop"
    assert model_to_dict(key, exclude=["label"]) == {
        k: v for k, v in before.items() if k != "label"
    }
    assert agent_key_lookup(plain=board.plain_key) == key


def test_agents_are_not_added_nor_deleted_in_the_admin(admin_client, board):
    agent = board.world.agent("coder-1")

    assert admin_client.get(add_url(Agent)).status_code == 403
    assert admin_client.post(admin_url(agent, "delete"), {"post": "yes"}).status_code == 403
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_disabling_an_agent_in_the_admin_goes_through_the_service(admin_client, admin_user, board):
    """The admin's "enabled" checkbox disables like the board's button and the API: the agent's
    claim is taken back (its task returns to the queue, it is told it lost it) and the change
    is audited as `agent_disabled`. (The first release saved the field directly and left the
    agent WORKING on its task.)"""
    agent = board.world.agent("coder-1")
    task = agent.current_task
    assert (agent.status, task.status) == ("WORKING", "CLAIMED")

    page = admin_client.get(admin_url(agent))
    response = admin_client.post(
        admin_url(agent),
        _agent_form(agent, enabled="", status="IDLE", current_task="", lease_expires=""),
    )

    assert sorted(page.context["adminform"].form.fields) == ["enabled", "security_reviewer"]
    assert response.status_code == 302
    agent.refresh_from_db()
    task.refresh_from_db()
    assert agent.enabled is False
    assert (agent.status, agent.current_task, agent.lost_task) == ("IDLE", None, task)
    assert (task.status, task.assigned_to) == ("UNCLAIMED", "")
    event = Event.objects.get(action="agent_disabled")
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert event.data == {"agent": "coder-1", "released": [task.key]}


def test_an_unchanged_agent_form_writes_nothing(admin_client, board):
    agent = board.world.agent("coder-2")

    response = admin_client.post(admin_url(agent), _agent_form(agent))

    assert response.status_code == 302
    assert not Event.objects.filter(action="agent_updated").exists()


def test_agent_filters(admin_client, board):
    response = admin_client.get(changelist_url(Agent), {"role__exact": "coder"})

    shown = {a.agent_id for a in response.context["cl"].result_list}
    assert shown == {"coder-1", "coder-2", "coder-3"}


def test_set_availability_action_goes_through_the_service(admin_client, admin_user, board):
    agent = board.world.agent("coder-2")

    response = run_action(
        admin_client, Agent, "set_availability", [agent], apply="1", state="overloaded"
    )

    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.overloaded is True
    event = Event.objects.get(action="agent_availability_set")
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert event.detail == "coder-2: enabled → overloaded"
    run_action(admin_client, Agent, "set_availability", [agent], apply="1", state="available")
    agent.refresh_from_db()
    assert agent.overloaded is False


def test_the_admin_deletes_no_agent_key_or_project_behind_the_hot_paths_cache(admin_client, board):
    """The admin is no way around agents.keycache: its delete views refuse agents, keys and
    projects (the event log protects them), so a key cached by the hot path stays true. (Any
    other delete, cascades included, is counted: tests/agents/test_keycache.py.)"""
    keycache.clear()
    agent = board.world.agent("coder-1")
    client = bearer(board.plain_key)
    url = f"{api_base(board.world.project.slug)}/agents/heartbeat"
    before = client.post(url, {}, format="json")
    for obj in (board.key, agent, board.world.project):
        assert admin_client.post(admin_url(obj, "delete"), {"post": "yes"}).status_code == 403
        assert type(obj).objects.filter(pk=obj.pk).exists()
    after = client.post(url, {}, format="json")
    drf = client.post(url + "?via=drf", {}, format="json")
    assert before.status_code == after.status_code == drf.status_code != 500
    keycache.clear()
