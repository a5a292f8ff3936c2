"""Sprints, goals and the project; agents and their keys (project admins)."""

from __future__ import annotations

from agents import services as agent_services
from boards.coordination.services import (
    budgets,
    goals,
    projects,
    sprints,
    stops,
)
from boards.operations import inputs as i
from boards.operations.base import (
    AGENT,
    GOAL,
    KEY,
    PROJECT,
    SITE,
    SPRINT,
    Operation,
)
from boards.watch.services import notifications


def _agent_switch(*, enabled: bool) -> Operation:
    """agent_disable or agent_enable: one service (agent_set_enabled), its switch set."""
    verb = "enable" if enabled else "disable"
    return Operation(
        f"agent_{verb}",
        agent_services.agent_set_enabled,
        AGENT,
        arguments=lambda data: {"enabled": enabled},
        done=lambda a: f"{a.agent_id} {verb}d.",
    )


PROJECT_OPERATIONS: list[Operation] = [
    # -- sprints, goals, the project ------------------------------------------------------
    Operation(
        "sprint_checkpoint",
        sprints.sprint_checkpoint,
        SPRINT,
        done=lambda s: f"{s.sprint_id} is at CHECKPOINT: agents stop until you decide.",
    ),
    Operation(
        "sprint_resume",
        sprints.sprint_resume,
        SPRINT,
        done=lambda s: f"{s.sprint_id} continues.",
    ),
    Operation(
        "sprint_abort",
        stops.sprint_abort,
        SPRINT,
        done=lambda s: f"{s.sprint_id} aborted.",
    ),
    Operation(
        "sprint_set_deadline",
        sprints.sprint_set_deadline,
        SPRINT,
        done=lambda s: (
            f"{s.sprint_id}: deadline set to {s.deadline:%Y-%m-%d %H:%M} UTC."
            if s.deadline
            else f"{s.sprint_id}: deadline cleared."
        ),
    ),
    Operation(
        "goal_abort",
        goals.goal_abort,
        GOAL,
        done=lambda g: f"{g.goal_id} aborted.",
    ),
    Operation(
        "project_pause",
        projects.project_pause,
        PROJECT,
        done=lambda p: "Project paused: agents stop and claims are refused.",
    ),
    Operation(
        "project_resume", projects.project_resume, PROJECT, done=lambda p: "Project resumed."
    ),
    Operation(
        "project_open",
        projects.project_open,
        SITE,
        i.ProjectInput,
        done=lambda p: f"Project {p.slug} created: write its goal.",
    ),
    Operation(
        "membership_invite",
        projects.membership_invite,
        PROJECT,
        i.InviteInput,
        done=lambda m: (
            f"{m.user.get_username()} is {m.role}"
            + (" with the planner right" if m.can_plan else "")
            + " here."
        ),
    ),
    Operation(
        "config_update",
        projects.config_update,
        PROJECT,
        i.ConfigInput,
        done=lambda c: "Settings saved.",
    ),
    Operation(
        "notifications_set",
        notifications.notifications_set,
        PROJECT,
        i.NotificationsInput,
        done=lambda pref: "Notification preferences saved.",
    ),
    Operation(
        "budget_set",
        budgets.budget_set,
        PROJECT,
        i.BudgetInput,
        done=lambda b: (
            f"Budget of {b.label} set: {budgets.limit_text(b.limit_usd, b.limit_tokens)}."
            if b is not None
            else "Budget removed."
        ),
    ),
    # -- agents and keys (project admins) --------------------------------------------------
    _agent_switch(enabled=False),
    _agent_switch(enabled=True),
    Operation(
        "agent_set_availability",
        agent_services.agent_set_availability,
        AGENT,
        done=lambda a: f"{a.agent_id} is {'overloaded' if a.overloaded else 'available'}.",
    ),
    Operation(
        "agent_key_issue",
        agent_services.agent_key_issue,
        AGENT,
        done=lambda issued: f"New key {issued[0].prefix}… issued.",
    ),
    Operation(
        "agent_key_revoke",
        agent_services.agent_key_revoke,
        KEY,
        done=lambda k: f"Key {k.prefix}… of {k.agent.agent_id} revoked.",
    ),
]
