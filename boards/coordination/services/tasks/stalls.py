"""A stalled run (issue 24, the progress watchdog): its supervisor terminated an agent that made
no progress for `stall_timeout`. The task follows seed 003's retry policy as after a dead lease
(backoff, then its own coder's retry), and its `max_stalls`-th stall blocks it."""

from __future__ import annotations

from datetime import datetime, timedelta

from agents.models import Agent
from agents.selectors import task_stalls
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.audit import record_event
from boards.coordination.services.tasks.holders import lock_task_and_its_agents
from boards.coordination.services.tasks.overrides import task_override_block
from boards.protocol import Action, TaskStatus


def task_stalled(*, task: Task, agent: Agent, run_id: int, now: datetime) -> str:
    """Called in the transaction that ended the stalled run (its row already saved as STALLED).
    Returns what happened to the task ("" when it was no longer the agent's claim)."""
    project = task.project
    config = config_of(project)
    task = lock_task_and_its_agents(task)
    stalls = task_stalls(task=task)
    record_event(
        project=project,
        actor=agent,
        action=Action.RUN_STALLED,
        task=task,
        now=now,
        detail=f"{agent.agent_id}'s run {run_id} on {task.key} made no progress for "
        f"{config.stall_timeout} s and was terminated (stall {stalls}/{config.max_stalls})",
        data={"run": run_id, "agent": agent.agent_id, "stalls": stalls},
    )
    if task.status != TaskStatus.CLAIMED or task.assigned_to != agent.agent_id:
        return ""
    if stalls >= config.max_stalls:
        reason = (
            f"stalled {stalls} times: no output and no commit for {config.stall_timeout} s "
            f"(max_stalls {config.max_stalls})"
        )
        question = f"Why does the agent on {task.key} hang; is the task feasible as written?"
        task_override_block(task=task, actor=SYSTEM, reason=reason, now=now, questions=[question])
        return f"blocked: {reason}"
    # The lease ends now, as a dead lease: claimable again after seed 003's backoff for its
    # next retry (`retry_at`), by its own coder first; the watcher records the expiry.
    task.lease_expires = now - timedelta(seconds=config.lease_grace)
    task.save(update_fields=["lease_expires"])
    return "retried after the backoff"
