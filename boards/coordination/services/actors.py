"""Who acts: an `Agent`, a Django `User`, or the server itself (`SYSTEM`).

Every write service takes the acting principal explicitly (STYLE.md), never a thread-local
"current user"; the event log names it by `actor_ref`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from agents.models import Agent
from boards.coordination.models.records import Event


@dataclass(frozen=True)
class SystemActor:
    """The server itself: limits enforced, leases reclaimed, sprints completed."""

    name: str = "system"


SYSTEM = SystemActor()

Actor = Agent | AbstractBaseUser | SystemActor

PLANNER = ("planner",)
CODER = ("coder",)
REVIEWER = ("code_reviewer",)
ANY_AGENT = ("planner", "coder", "code_reviewer")


def actor_ref(actor: Actor) -> tuple[str, str]:
    """(actor kind, actor id) as the event log records them."""
    if isinstance(actor, Agent):
        return Event.ActorKind.AGENT, actor.agent_id
    if isinstance(actor, SystemActor):
        return Event.ActorKind.SYSTEM, actor.name
    return Event.ActorKind.HUMAN, actor.get_username()


def is_agent(actor: Actor) -> bool:
    return isinstance(actor, Agent)


def is_human(actor: Actor) -> bool:
    return not isinstance(actor, Agent | SystemActor)
