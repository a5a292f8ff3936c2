"""A coder's handoff of its claim to a successor session, and the pickup."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from agents.models import (
    Agent,
)
from boards.coordination.models.tasks import Handoff, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import agents_only, require_role
from boards.coordination.services.cleaning import clean_string_list, clean_text
from boards.coordination.services.locking import lock_own_claim
from boards.protocol import (
    AgentStatus,
    TaskStatus,
)


@agents_only
@records_refusals
def agent_handoff(
    *,
    agent: Agent,
    task: Task,
    now: datetime,
    summary: str,
    next_action: str,
    context_used: str = "",
    approach: str = "",
    blockers: str = "",
    files_modified: list[str] | None = None,
    next_steps: list[str] | None = None,
) -> Handoff:
    """Context exhaustion: write the handoff, set handoff_pending, agent → HANDOFF (seed 000)."""
    project = task.project
    attempt = Attempt(project, agent, "agent_handoff", now)
    require_role(attempt, agent_roles=("coder",), task=task)
    summary = clean_text(summary, "summary", max_length=500)
    next_action = clean_text(next_action, "next_action", max_length=500)
    config = config_of(project)
    with transaction.atomic():
        hand_off = Attempt(project, agent, "handoff", now)
        agent, task = lock_own_claim(hand_off, agent, task, to=TaskStatus.CLAIMED, config=config)
        handoff, _ = Handoff.objects.update_or_create(
            task=task,
            defaults={
                "project": project,
                "agent": agent.agent_id,
                "context_used": clean_text(
                    context_used, "context_used", required=False, max_length=16
                ),
                "timestamp": now,
                "summary": summary,
                "next_action": next_action,
                "approach": clean_text(approach, "approach", required=False),
                "blockers": clean_text(blockers, "blockers", required=False),
                "files_modified": clean_string_list(
                    files_modified, "files_modified", max_items=500
                ),
                "next_steps": clean_string_list(next_steps, "next_steps"),
            },
        )
        task.handoff_pending = True
        task.save(update_fields=["handoff_pending"])
        if agent.status in (AgentStatus.WORKING, AgentStatus.REVIEWING):
            agent.hand_off()
            agent.save()
        attempt.record(action="handoff", task=task, detail=f"{summary} → next: {next_action}")
    return handoff


@agents_only
@records_refusals
def agent_handoff_pickup(*, agent: Agent, task: Task, now: datetime) -> Handoff | None:
    """The next session reads the handoff and clears handoff_pending (seed 000)."""
    project = task.project
    attempt = Attempt(project, agent, "agent_handoff_pickup", now)
    require_role(attempt, agent_roles=("coder",), task=task)
    config = config_of(project)
    with transaction.atomic():
        pickup = Attempt(project, agent, "handoff_pickup", now)
        agent, task = lock_own_claim(pickup, agent, task, to=TaskStatus.CLAIMED, config=config)
        handoff = Handoff.objects.filter(task=task).first()
        if task.handoff_pending:
            task.handoff_pending = False
            task.save(update_fields=["handoff_pending"])
            attempt.record(
                action="handoff_read",
                task=task,
                detail=f"{agent.agent_id} resumed from the handoff",
            )
    return handoff
