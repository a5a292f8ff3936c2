"""The agents' work: the coder's, its supervisor's (each spawn of an agent command) and the code
reviewer's operations."""

from __future__ import annotations

from agents import services as agent_services
from boards.coordination.services import (
    reviews,
    tasks,
)
from boards.operations import inputs as i
from boards.operations.base import (
    PROJECT,
    RUN,
    TASK,
    Operation,
)

WORK: list[Operation] = [
    # -- the coder ------------------------------------------------------------------------
    Operation(
        "task_claim_next",
        tasks.task_claim_next,
        PROJECT,
        i.ClaimInput,
        principal="agent",
    ),
    Operation("task_claim", tasks.task_claim, TASK, i.ClaimInput, principal="agent"),
    Operation(
        "task_submit_for_review",
        tasks.task_submit_for_review,
        TASK,
        i.SubmitInput,
        principal="agent",
    ),
    Operation("task_block", tasks.task_block, TASK, i.BlockInput, principal="agent"),
    Operation(
        "agent_handoff", agent_services.agent_handoff, TASK, i.HandoffInput, principal="agent"
    ),
    Operation("agent_handoff_pickup", agent_services.agent_handoff_pickup, TASK, principal="agent"),
    # -- the supervisor (`liza supervise`): each spawn of an agent command ----------------
    Operation(
        "run_start",
        agent_services.run_start,
        PROJECT,
        i.RunStartInput,
        principal="agent",
    ),
    Operation("run_finish", agent_services.run_finish, RUN, i.RunFinishInput, principal="agent"),
    Operation(
        "agent_quota_pause",
        agent_services.agent_quota_pause,
        PROJECT,
        i.QuotaPauseInput,
        principal="agent",
    ),
    Operation(
        "usage_record",
        agent_services.usage_record,
        PROJECT,
        i.UsageInput,
        principal="agent",
    ),
    Operation(
        "run_output_append",
        agent_services.run_output_append,
        RUN,
        i.RunOutputInput,
        principal="agent",
    ),
    # -- the code reviewer ---------------------------------------------------------------
    Operation("review_claim", reviews.review_claim, TASK, principal="agent"),
    Operation("review_claim_next", reviews.review_claim_next, PROJECT, principal="agent"),
    Operation("review_extend", reviews.review_extend, TASK, principal="agent"),
    Operation("review_verdict", reviews.review_verdict, TASK, i.VerdictInput, principal="agent"),
    Operation("task_report_merge", tasks.task_report_merge, TASK, i.MergeInput, principal="agent"),
    Operation(
        "task_report_integration_failure",
        tasks.task_report_integration_failure,
        TASK,
        i.ReasonInput,
        principal="agent",
    ),
]
