"""The agents' work: the coder's, its supervisor's (each spawn of an agent command) and the code
reviewer's operations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents import services as agent_services
from boards.coordination.services import reviews, tasks
from boards.operations import inputs as i
from boards.operations.base import PROJECT, RUN, TASK, Operation, op


def by_agent(service: Callable[..., Any], target: str, input: Any = None) -> Operation:
    """An agent's operation: its service takes the acting agent as `agent`."""
    return op(service, target, input, principal="agent")


WORK: list[Operation] = [
    # -- the coder ------------------------------------------------------------------------
    by_agent(tasks.task_claim_next, PROJECT),
    by_agent(tasks.task_claim, TASK),
    by_agent(tasks.task_submit_for_review, TASK, i.SubmitInput),
    by_agent(tasks.task_block, TASK),
    by_agent(agent_services.agent_handoff, TASK),
    by_agent(agent_services.agent_handoff_pickup, TASK),
    # -- the supervisor (`liza supervise`): each spawn of an agent command ----------------
    by_agent(agent_services.run_start, PROJECT),
    by_agent(agent_services.run_finish, RUN),
    by_agent(agent_services.agent_quota_pause, PROJECT),
    by_agent(agent_services.agent_leave, PROJECT),
    by_agent(agent_services.usage_record, PROJECT, i.UsageInput),
    by_agent(agent_services.run_output_append, RUN, i.RunOutputInput),
    # -- the code reviewer ---------------------------------------------------------------
    by_agent(reviews.review_claim, TASK),
    by_agent(reviews.review_claim_next, PROJECT),
    by_agent(reviews.review_extend, TASK),
    by_agent(reviews.review_release, TASK),
    by_agent(reviews.review_verdict, TASK),
    by_agent(tasks.task_report_merge, TASK),
    by_agent(tasks.task_report_integration_failure, TASK),
]
