"""Seed 002's file schema as tables: which keys each section has, their kinds and their order.

Reading and writing both use these tables, so a key read from `state.yaml` is written back under
the same name and in the same place, which is what keeps export → import → export stable.
"""

from __future__ import annotations

from enum import Enum

from boards import protocol as p

STATE_FILE = "state.yaml"
LOG_FILE = "log.yaml"
ALERTS_FILE = "alerts.log"  # the original watcher's append-only alert lines
LIZA_DIR = ".liza"


class Kind(Enum):
    TEXT = "text"  # str; null → "" (the models keep "no value" as blank text)
    INT = "int"
    BOOL = "bool"
    LIST = "list"  # a list of JSON values; a single scalar counts as a one-item list
    TIME = "time"  # seed 002 "Timestamp Format"; null allowed
    TIME_REQUIRED = "time!"
    JSON = "json"  # any YAML value kept as JSON (metrics, details, retrospective)


# Seed 002 `tasks[]` (plus SPEC §4's scope, merge_commit, approved_by, criticality and per-task
# overrides), in the order export writes them. `id`, `status`, `depends_on`, `history` and the
# review-lease keys are handled on their own. Each key is also the model field's name.
TASK_FIELDS: dict[str, Kind] = {
    "description": Kind.TEXT,
    "priority": Kind.INT,
    "criticality": Kind.TEXT,
    "assigned_to": Kind.TEXT,
    "lease_expires": Kind.TIME,
    "worktree": Kind.TEXT,
    "base_commit": Kind.TEXT,
    "iteration": Kind.INT,
    "review_cycles_current": Kind.INT,
    "review_cycles_total": Kind.INT,
    "review_commit": Kind.TEXT,
    "approved_by": Kind.LIST,
    "merge_commit": Kind.TEXT,
    "spec_ref": Kind.TEXT,
    "done_when": Kind.TEXT,
    "scope": Kind.TEXT,
    "supersedes": Kind.TEXT,
    "superseded_by": Kind.LIST,
    "rescope_reason": Kind.TEXT,
    "rejection_reason": Kind.TEXT,
    "blocked_reason": Kind.TEXT,
    "blocked_questions": Kind.LIST,
    "attempted": Kind.LIST,
    "failed_by": Kind.LIST,
    "integration_fix": Kind.BOOL,
    "handoff_pending": Kind.BOOL,
    "max_iterations": Kind.INT,
    "max_review_cycles": Kind.INT,
    "lease_duration_override": Kind.INT,
    # SPEC §12 / seed 004: the human approval gate and the suspension overlay (written only
    # when set: a task without them reads back with the defaults).
    "needs_human_approval": Kind.BOOL,
    "suspended_at": Kind.TIME,
    "suspended_by": Kind.TEXT,
    "suspended_reason": Kind.TEXT,
    "created": Kind.TIME_REQUIRED,
}
# Seed 001 quorum: every approving reviewer, written only when there are several. Seed 002's
# `approved_by` stays one reviewer id, the one whose supervisor merges (original-liza.md T10);
# the original ignores this key.
QUORUM_APPROVED_BY = "quorum_approved_by"
# Written even when empty: seed 002 gives every task these.
TASK_ALWAYS: frozenset[str] = frozenset({"description", "priority", "created"})
# Where export puts the keys that are not plain fields (after the key named).
TASK_REVIEW_KEYS_AFTER = "review_commit"
# Seed 002 "Code Reviewer Lease Fields", derived from the open review round.
REVIEW_KEYS: tuple[str, ...] = ("reviewing_by", "review_lease_expires")
# Every key export may write in a task entry: an imported task keeps the ones its file wrote
# empty (Task.file_empty_keys); any other key of a task entry is not kept, with a warning.
TASK_KEYS: frozenset[str] = frozenset(
    {
        "id",
        "status",
        "depends_on",
        "history",
        "review_round",
        QUORUM_APPROVED_BY,
        *REVIEW_KEYS,
        *TASK_FIELDS,
    }
)
TASK_DEPENDS_ON_AFTER = "scope"

# An agent entry's keys beyond AGENT_FIELDS (the planner's task is spelled `task`).
AGENT_KEYS_HANDLED: frozenset[str] = frozenset({"status", "current_task", "task"})

# Seed 002 `agents.<id>` (plus `enabled` and seed 001's `security_reviewer`, written only when
# not the default). `current_task` (`task` for the planner) and `status` are handled on their own.
AGENT_FIELDS: dict[str, Kind] = {
    "role": Kind.TEXT,
    "lease_expires": Kind.TIME,
    "heartbeat": Kind.TIME,
    "terminal": Kind.TEXT,
    "iterations_total": Kind.INT,
    "context_percent": Kind.INT,
    "enabled": Kind.BOOL,
    "security_reviewer": Kind.BOOL,
}

# Seed 002 `discovered[]`; `id` is the model's disc_id.
DISCOVERY_FIELDS: dict[str, Kind] = {
    "by": Kind.TEXT,
    "during": Kind.TEXT,
    "description": Kind.TEXT,
    "severity": Kind.TEXT,
    "urgency": Kind.TEXT,
    "recommendation": Kind.TEXT,
    "created": Kind.TIME_REQUIRED,
    "converted_to_task": Kind.TEXT,
    # A human's triage (SPEC §7), written only when the discovery is no longer open.
    "triage": Kind.TEXT,
    "triage_note": Kind.TEXT,
}

# Seed 002 `handoff.<task>`: required (summary, next_action) then optional fields.
HANDOFF_FIELDS: dict[str, Kind] = {
    "agent": Kind.TEXT,
    "context_used": Kind.TEXT,
    "timestamp": Kind.TIME_REQUIRED,
    "summary": Kind.TEXT,
    "next_action": Kind.TEXT,
    "approach": Kind.TEXT,
    "blockers": Kind.TEXT,
    "files_modified": Kind.LIST,
    "next_steps": Kind.LIST,
}
HANDOFF_OPTIONAL: frozenset[str] = frozenset(
    {"context_used", "approach", "blockers", "files_modified", "next_steps"}
)

SPEC_CHANGE_FIELDS: dict[str, Kind] = {
    "timestamp": Kind.TIME_REQUIRED,
    "spec": Kind.TEXT,
    "change": Kind.TEXT,
    "triggered_by": Kind.TEXT,
}

ANOMALY_FIELDS: dict[str, Kind] = {
    "timestamp": Kind.TIME_REQUIRED,
    "reporter": Kind.TEXT,
    "type": Kind.TEXT,
    "details": Kind.JSON,
}

SPRINT_TIMELINE: tuple[str, ...] = ("started", "deadline", "checkpoint_at", "ended")
# Seed 002 `sprint.metrics`, in the seed's order. JSON columns do not keep key order on
# PostgreSQL, so export puts known keys back in this order (then any others).
SPRINT_METRIC_KEYS: tuple[str, ...] = (
    "tasks_done",
    "tasks_in_progress",
    "tasks_blocked",
    "iterations_total",
    "review_cycles_total",
    "review_verdict_approvals",
    "review_verdict_rejections",
    "review_verdict_count",
    "review_verdict_approval_rate_percent",
    "task_submitted_for_review_count",
    "task_outcome_approval_rate_percent",
)
ALIGNMENT_KEYS: tuple[str, ...] = ("timestamp", "event", "summary")

# Extra config keys of SPEC §4 beyond seed 002's (written only when not the default). Keys an
# issue added (watch_interval, review_churn_threshold) are not written, and left out on import.
EXTRA_CONFIG_KEYS: tuple[str, ...] = ("lease_grace", "archive_after_days")

# Keys of a log.yaml entry (seed 002 "log.yaml Schema") and of a task `history` entry (seed 002
# task-1/task-7). Every other key of an entry is kept in Event.data and written back beside
# them; a data key that would collide with one of these is written under `data:` instead.
EVENT_COLUMN_KEYS: tuple[str, ...] = ("from", "to", "outcome", "actor_kind")
LOG_RESERVED: frozenset[str] = frozenset(
    {"timestamp", "agent", "action", "task", "detail", "data", *EVENT_COLUMN_KEYS}
)
HISTORY_RESERVED: frozenset[str] = frozenset({"time", "event", "agent", "data", *EVENT_COLUMN_KEYS})
BREAKER_CHECK_RESERVED: frozenset[str] = frozenset({"timestamp", "pattern", "result", "details"})

# The keys whose string values are timestamps, wherever they appear (seed 002 state.yaml and
# log.yaml); used to shift a whole blackboard in time (the demo).
TIMESTAMP_KEYS: frozenset[str] = frozenset(
    {
        "created",
        "timestamp",
        "time",
        "lease_expires",
        "review_lease_expires",
        "heartbeat",
        "last_check",
        *SPRINT_TIMELINE,
    }
)

# The sections read straight into one row each (reading.py, records.py).
GOAL_FIELDS: dict[str, Kind] = {
    "description": Kind.TEXT,
    "spec_ref": Kind.TEXT,
    "created": Kind.TIME_REQUIRED,
}
NOTE_FIELDS: dict[str, Kind] = {"timestamp": Kind.TIME_REQUIRED, "message": Kind.TEXT}
REVIEW_FIELDS: dict[str, Kind] = {
    "reviewer": Kind.TEXT,
    "verdict": Kind.TEXT,
    "reason": Kind.TEXT,
    "lease_expires": Kind.TIME,
}
CONFIG_FIELDS: dict[str, Kind] = {
    **{
        key: Kind.INT if isinstance(default, int) else Kind.TEXT
        for key, default in p.CONFIG_DEFAULTS.items()
    },
    **dict.fromkeys(EXTRA_CONFIG_KEYS, Kind.INT),
}
# Seed 002 section → the YAML shape it must have.
SECTION_SHAPES: dict[str, type] = {
    "goal": dict,
    "tasks": list,
    "agents": dict,
    "discovered": list,
    "handoff": dict,
    "human_notes": list,
    "spec_changes": list,
    "anomalies": list,
    "sprint": dict,
    "circuit_breaker": dict,
    "config": dict,
}
PROJECT_WIDE_NOTE = "project"  # seed 002 human_notes `for:` naming no task
