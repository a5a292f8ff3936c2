"""The protocol's words as they travel over HTTP, for a client that cannot import the server.

`agents.client` is forbidden `boards.protocol` (it speaks only HTTP), so the few state names the
command line needs are spelled here, once; tests/agents/client checks they are the server's.
"""

from __future__ import annotations

# Seed 000's task states, in its order: the rows of `liza status`.
TASK_STATES: tuple[str, ...] = (
    "DRAFT",
    "UNCLAIMED",
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "MERGED",
    "BLOCKED",
    "ABANDONED",
    "SUPERSEDED",
    "INTEGRATION_FAILED",
)
VERDICTS: tuple[str, ...] = ("APPROVED", "REJECTED")

# The states by name, for the scripted agents (agents/client/demo_agents).
(
    DRAFT,
    UNCLAIMED,
    CLAIMED,
    READY_FOR_REVIEW,
    REJECTED,
    APPROVED,
    MERGED,
    BLOCKED,
    ABANDONED,
    SUPERSEDED,
    INTEGRATION_FAILED,
) = TASK_STATES
TERMINAL_TASK_STATES = frozenset({MERGED, ABANDONED, SUPERSEDED})
GOAL_IN_PROGRESS = "IN_PROGRESS"
GOAL_COMPLETED = "COMPLETED"
