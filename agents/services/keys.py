"""Agent keys: issued, used, revoked, labelled."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.db import transaction

from agents.models import (
    Agent,
    AgentKey,
)
from boards.coordination import outbox, rows
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import clean_text
from boards.protocol import (
    Action,
    AgentStatus,
)
from liza_site import key_generation


@people(ADMIN)
@records_refusals
def agent_key_issue(
    *, agent: Agent, actor: Actor, now: datetime, label: str = ""
) -> tuple[AgentKey, str]:
    """Generate a key for `agent`; the plain key is returned once and never stored."""
    project = agent.project
    attempt = Attempt(project, actor, "agent_key_issue", now)
    require_role(attempt, agent_roles=(), system=True)
    label = clean_text(label, "label", required=False, max_length=100)
    prefix = secrets.token_hex(AgentKey.PREFIX_LEN // 2)
    plain = f"liza_{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key = AgentKey.objects.create(
            agent=agent,
            project=project,
            prefix=prefix,
            key_hash=AgentKey.hash(plain),
            label=label,
            created=now,
        )
        attempt.record(
            action=Action.KEY_ISSUED,
            detail=f"key {prefix}… issued for {agent.agent_id}" + (f" ({label})" if label else ""),
            data={"agent": agent.agent_id, "prefix": prefix},
        )
    return key, plain


# last_used_at is for humans reading the key list ("used 2026-11-27 23:40"); writing it on every
# request would add a write to every agent call, so it is refreshed at most every five minutes.
# Each worker judges by the value its cached key holds (agents.keycache, up to 300 s old): at
# once a minute, agents heartbeating every 30 s through two workers had their key rows written on
# 0.6 heartbeats in 1 (bench/fleet.py, 2,500 agents): ~200 writes a second at 10,000 agents.
LAST_USED_RESOLUTION = timedelta(seconds=300)


def agent_key_used(*, key: AgentKey, now: datetime) -> None:
    """Note that `key` authenticated a request (no event: it is not an action of the protocol)."""
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        AgentKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now


def agent_ready(*, agent: Agent) -> None:
    """Seed 000 STARTING → IDLE ("registration complete") once the agent's first write through
    the API succeeds (boards.api.base). Coders and reviewers also leave STARTING on their first
    heartbeat or claim; a planner that only plans does neither, and stayed STARTING for a whole
    run on the board (issue 25)."""
    with transaction.atomic():
        locked = Agent.objects.select_for_update().filter(pk=agent.pk).first()
        if locked is None or locked.status != AgentStatus.STARTING:
            return
        locked.ready()
        rows.save_fields(locked, ["status"])
        outbox.changed(locked.project_id, outbox.AGENT, locked.pk)


@people(ADMIN)
@records_refusals
def agent_key_revoke(*, key: AgentKey, actor: Actor, now: datetime) -> AgentKey:
    """Revoke a key: its next request is a 401. Revoking a revoked key changes nothing."""
    project = key.project
    attempt = Attempt(project, actor, "agent_key_revoke", now)
    require_role(attempt, agent_roles=(), system=True)
    with transaction.atomic():
        key = AgentKey.objects.select_for_update().select_related("agent").get(pk=key.pk)
        if key.revoked_at is None:
            key.revoked_at = now
            key.save(update_fields=["revoked_at"])
            key_generation.bump()  # its cached lookups too (agents.keycache)
            attempt.record(
                action=Action.KEY_REVOKED,
                detail=f"key {key.prefix}… of {key.agent.agent_id} revoked",
                data={"agent": key.agent.agent_id, "prefix": key.prefix},
            )
    return key


@people(ADMIN)
@records_refusals
def agent_key_label(*, key: AgentKey, actor: Actor, label: str, now: datetime) -> AgentKey:
    """A human's note on a key (what it is for); nothing the protocol reads."""
    project = key.project
    attempt = Attempt(project, actor, "agent_key_label", now)
    require_role(attempt, agent_roles=())
    label = clean_text(label, "label", required=False, max_length=100)
    with transaction.atomic():
        key = AgentKey.objects.select_for_update().select_related("agent").get(pk=key.pk)
        if key.label != label:
            old, key.label = key.label, label
            key.save(update_fields=["label"])
            attempt.record(
                action=Action.KEY_LABELLED,
                detail=f"key {key.prefix}… label {old or 'none'} → {label or 'none'}",
                data={"agent": key.agent.agent_id, "prefix": key.prefix},
            )
    return key
