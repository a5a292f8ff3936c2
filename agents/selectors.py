"""Agent reads: identities of a project and the key a bearer token presents."""

from __future__ import annotations

import hmac

from django.db.models import QuerySet

from agents.models import Agent, AgentKey
from boards.models import Project
from boards.selectors.access import in_project


def agent_get(*, project: Project, agent_id: str) -> Agent:
    return in_project(
        Agent.objects.select_related("current_task"), project, what="agent", agent_id=agent_id
    )


def agent_list(*, project: Project) -> QuerySet[Agent]:
    return Agent.objects.filter(project=project).select_related("current_task")


def key_get(*, project: Project, prefix: str) -> AgentKey:
    return in_project(AgentKey.objects.select_related("agent"), project, what="key", prefix=prefix)


def agent_key_lookup(*, plain: str) -> AgentKey | None:
    """The active key for a presented bearer token, or None (unknown, malformed or revoked)."""
    parts = plain.split("_", 2)
    if len(parts) != 3 or parts[0] != "liza" or len(parts[1]) != AgentKey.PREFIX_LEN:
        return None
    key = (
        # The project and its config too: every agent request needs both (ProjectView).
        AgentKey.objects.select_related("agent", "agent__project", "agent__project__config")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, AgentKey.hash(plain)):
        return None
    return key
