"""What the log and the records speak: event actions, anomaly types and their required fields,
discovery severities, criticalities and their approvals, notification events (seed 002).
"""

from __future__ import annotations

from enum import StrEnum

# Seed 002 "Anomaly Types" and "Required Details Fields".
ANOMALY_REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "retry_loop": ("count", "error_pattern"),
    "trade_off": ("what", "why", "debt_created"),
    "spec_ambiguity": (),
    "external_blocker": ("blocker_service",),
    "assumption_violated": ("assumption", "reality"),
    "scope_deviation": (),
    "workaround": (),
    "debt_created": (),
    "spec_changed": (),
    "hypothesis_exhaustion": (),
    "spec_gap": (),
    "review_deadlock": (),
    "system_ambiguity": ("protocol_section", "question"),
}
ANOMALY_TYPES: tuple[str, ...] = tuple(ANOMALY_REQUIRED_FIELDS)

DISCOVERY_SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "low")
DISCOVERY_URGENCIES: tuple[str, ...] = ("immediate", "deferred")

# SPEC §12 / seed 001: approving reviewers needed per criticality.
CRITICALITIES: tuple[str, ...] = ("standard", "complex", "security-sensitive")
REQUIRED_APPROVALS: dict[str, int] = {"standard": 1, "complex": 2, "security-sensitive": 2}


class Action(StrEnum):
    """What the server itself writes in the event log's `action` (seed 002 log.yaml names).

    Agents may log activity under other words (seed 002 "Log activity"); a refused operation is
    logged as `<operation>_failed` (seed 002 calls a lost claim race `claim_failed`).
    """

    # tasks
    CREATED = "created"
    FINALIZED = "finalized"
    DEPENDENCIES_SET = "dependencies_set"
    EDITED = "edited"
    CLAIMED = "claimed"
    REASSIGNED = "reassigned"
    READY_FOR_REVIEW = "ready_for_review"
    BLOCKED = "blocked"
    OVERRIDE_BLOCKED = "override_blocked"
    RELEASED = "released"
    ABANDONED = "abandoned"
    RESCOPED = "rescoped"
    MERGED = "merged"
    INTEGRATION_FAILED = "integration_failed"
    LIMITS_SET = "limits_set"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    HANDOFF = "handoff"
    HANDOFF_READ = "handoff_read"
    LEASE_EXPIRED = "lease_expired"  # the watcher took a dead lease out of its coder's hands
    # reviews
    REVIEW_CLAIMED = "review_claimed"
    REVIEW_EXTENDED = "review_extended"
    REVIEW_RECLAIMED = "review_reclaimed"
    REVIEW_CLAIM_RELEASED = "review_claim_released"  # a human or the watcher closed a claim
    REVIEW_RELEASED = "review_released"  # its reviewer gave it back (the review slot reads it)
    APPROVED = "approved"
    REJECTED = "rejected"
    AWAITING_HUMAN_APPROVAL = "awaiting_human_approval"
    HUMAN_APPROVED = "human_approved"
    HUMAN_REJECTED = "human_rejected"
    # goals, sprints, the project
    GOAL_CREATED = "goal_created"
    GOAL_EDITED = "goal_edited"
    GOAL_COMPLETED = "goal_completed"
    GOAL_ABORTED = "goal_aborted"
    SPRINT_STARTED = "sprint_started"
    SPRINT_CHECKPOINT = "sprint_checkpoint"
    SPRINT_RESUMED = "sprint_resumed"
    SPRINT_COMPLETED = "sprint_completed"
    SPRINT_ABORTED = "sprint_aborted"
    SPRINT_DEADLINE_SET = "sprint_deadline_set"
    PROJECT_CREATED = "project_created"
    PROJECT_PAUSED = "project_paused"
    PROJECT_RESUMED = "project_resumed"
    CONFIG_UPDATED = "config_updated"
    ALERT_ACKNOWLEDGED = "alert_acknowledged"
    CIRCUIT_BREAKER_TRIGGERED = "circuit_breaker_triggered"
    CIRCUIT_BREAKER_RESOLVED = "circuit_breaker_resolved"
    MEMBERSHIP_SET = "membership_set"
    NOTIFICATIONS_SET = "notifications_set"
    # records
    DISCOVERED = "discovered"
    DISCOVERY_CONVERTED = "discovery_converted"
    DISCOVERY_DEFERRED = "discovery_deferred"
    DISCOVERY_REJECTED = "discovery_rejected"
    ANOMALY = "anomaly"
    HUMAN_NOTE = "human_note"
    SPEC_CHANGED = "spec_changed"
    # agents and keys
    REGISTERED = "registered"
    RESTARTED = "restarted"
    # Its session ended (`agent_leave`, its supervisor stopping): the identity is free at once
    # (SPEC §5.2 "HANDOFF → (deregistered)").
    DEREGISTERED = "deregistered"
    AGENT_CRASHED = "agent_crashed"  # a supervised agent command exited neither 0 nor 42
    RUN_STALLED = "run_stalled"  # issue 24: the progress watchdog terminated a run
    QUOTA_PAUSED = "quota_paused"  # issue 24: a provider's quota wall pauses a supervisor
    BUDGET_SET = "budget_set"  # issue 24: an admin set, raised or removed a budget
    AGENT_CREATED = "agent_created"
    AGENT_UPDATED = "agent_updated"
    AGENT_ENABLED = "agent_enabled"
    AGENT_DISABLED = "agent_disabled"
    KEY_ISSUED = "key_issued"
    KEY_REVOKED = "key_revoked"
    KEY_LABELLED = "key_labelled"


class NotifyEvent(StrEnum):
    """Issue 24: what a person may ask to be told about (their notification preferences). Each
    is fed by the alert that says so (`services.notifications.event_of`); `budget` is fed by
    a budget alert once one exists (its alert type is named `budget`)."""

    BLOCKED = "blocked"  # a task BLOCKED, its questions waiting for a human
    APPROVAL = "approval"  # a task held at the human approval gate
    BUDGET = "budget"
    STALL = "stall"  # RUN STALLED: the progress watchdog stopped a run
    QUOTA = "quota"  # an agent paused by its provider's quota
    CRITICAL = "critical"  # any critical alert


# The longest a digest may gather (minutes); 0 sends each sweep's news at once.
NOTIFY_DIGEST_MAX_MINUTES = 24 * 60
