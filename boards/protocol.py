"""The tables of the Liza protocol, written once (seeds 000 and 002, SPEC §4–§5, §12).

Models, services, the validator, the importer and the tests all read these tables; nothing else
in the code base spells out a state name list or a transition table.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from urllib.parse import urlsplit


class TaskStatus(StrEnum):
    """Seed 000 "Task State Machine", in the order of seed 000's "Validation Rules"."""

    DRAFT = "DRAFT"
    UNCLAIMED = "UNCLAIMED"
    CLAIMED = "CLAIMED"
    READY_FOR_REVIEW = "READY_FOR_REVIEW"
    REJECTED = "REJECTED"
    APPROVED = "APPROVED"
    MERGED = "MERGED"
    BLOCKED = "BLOCKED"
    ABANDONED = "ABANDONED"
    SUPERSEDED = "SUPERSEDED"
    INTEGRATION_FAILED = "INTEGRATION_FAILED"


TASK_STATES: tuple[str, ...] = tuple(s.value for s in TaskStatus)
TERMINAL_TASK_STATES: frozenset[str] = frozenset({"MERGED", "ABANDONED", "SUPERSEDED"})
NON_TERMINAL_TASK_STATES: tuple[str, ...] = tuple(
    s for s in TASK_STATES if s not in TERMINAL_TASK_STATES
)
# A coder "holds" a task in these states (one at a time: SPEC §5.1, seed 000 agent machine).
ACTIVE_CODER_STATES: frozenset[str] = frozenset({"CLAIMED", "READY_FOR_REVIEW", "REJECTED"})

# The 13 edges of seed 000 "Task State Machine", each with the name of the model transition.
TASK_EDGES: dict[tuple[str, str], str] = {
    ("DRAFT", "UNCLAIMED"): "finalize",
    ("UNCLAIMED", "CLAIMED"): "claim",
    ("CLAIMED", "READY_FOR_REVIEW"): "submit_for_review",
    ("CLAIMED", "BLOCKED"): "block",
    ("READY_FOR_REVIEW", "APPROVED"): "approve",
    ("READY_FOR_REVIEW", "REJECTED"): "reject",
    ("REJECTED", "CLAIMED"): "reclaim",
    ("APPROVED", "MERGED"): "merge",
    ("APPROVED", "INTEGRATION_FAILED"): "fail_integration",
    ("BLOCKED", "UNCLAIMED"): "release",
    ("BLOCKED", "SUPERSEDED"): "supersede",
    ("BLOCKED", "ABANDONED"): "abandon",
    ("INTEGRATION_FAILED", "CLAIMED"): "claim_integration_fix",
}
# SPEC §5.1 "Override block": humans and the system (never agents) may block any non-terminal
# task. From CLAIMED it is a different edge from the coder's own `block` (no failed_by entry).
OVERRIDE_BLOCK_SOURCES: tuple[str, ...] = tuple(
    s for s in NON_TERMINAL_TASK_STATES if s not in ("BLOCKED",)
)
# Seed 000 "Forbidden Transitions", named so that their refusal can be tested by name.
FORBIDDEN_TASK_EDGES: tuple[tuple[str, str], ...] = (
    ("DRAFT", "CLAIMED"),
    ("CLAIMED", "MERGED"),
    ("CLAIMED", "APPROVED"),
    ("REJECTED", "APPROVED"),
    *((t, s) for t in sorted(TERMINAL_TASK_STATES) for s in TASK_STATES),
)


def task_targets(from_status: str) -> list[str]:
    """States reachable from `from_status` by a seed 000 edge (what an error lists as allowed)."""
    return [to for (frm, to) in TASK_EDGES if frm == from_status]


class AgentStatus(StrEnum):
    """Seed 000 "Agent State Machine"."""

    STARTING = "STARTING"
    IDLE = "IDLE"
    WORKING = "WORKING"
    REVIEWING = "REVIEWING"
    WAITING = "WAITING"
    HANDOFF = "HANDOFF"


AGENT_STATES: tuple[str, ...] = tuple(s.value for s in AgentStatus)
# Seed 000 "Agent State Machine"; role None = every role, otherwise the only role allowed.
AGENT_EDGES: dict[tuple[str, str], tuple[str, str | None]] = {
    ("STARTING", "IDLE"): ("ready", None),
    ("IDLE", "WORKING"): ("start_work", "coder"),
    ("IDLE", "REVIEWING"): ("start_review", "code_reviewer"),
    ("WORKING", "WAITING"): ("wait_for_review", "coder"),
    ("WORKING", "IDLE"): ("stop_work", "coder"),
    ("WORKING", "HANDOFF"): ("hand_off", "coder"),
    ("REVIEWING", "IDLE"): ("finish_review", "code_reviewer"),
    ("REVIEWING", "HANDOFF"): ("hand_off", "code_reviewer"),
    ("WAITING", "WORKING"): ("resume_work", "coder"),
    ("WAITING", "IDLE"): ("stop_work", "coder"),
}
# "HANDOFF → (agent terminates, supervisor restarts fresh)": re-registering the same id starts
# the machine again at STARTING. Like the override block, this is the only edge beyond the table,
# and only registration (never a task operation) takes it.
AGENT_RESTART_SOURCES: tuple[str, ...] = AGENT_STATES

AGENT_ROLES: tuple[str, ...] = ("planner", "coder", "code_reviewer")
AGENT_ID_PREFIX: dict[str, str] = {
    "planner": "planner",
    "coder": "coder",
    "code_reviewer": "code-reviewer",
}
AGENT_ID_RE = re.compile(r"^(planner|coder|code-reviewer)-([1-9][0-9]*)$")


def agent_id_matches_role(agent_id: str, role: str) -> bool:
    match = AGENT_ID_RE.match(agent_id or "")
    return bool(match) and AGENT_ID_PREFIX.get(role) == match.group(1)


class GoalStatus(StrEnum):
    """Seed 000 "Goal State Machine" (no CHECKPOINT: that is a sprint concern)."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


class SprintStatus(StrEnum):
    """Seed 000 "Sprint State Machine"."""

    IN_PROGRESS = "IN_PROGRESS"
    CHECKPOINT = "CHECKPOINT"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


GOAL_STATES: tuple[str, ...] = tuple(s.value for s in GoalStatus)
GOAL_EDGES: dict[tuple[str, str], str] = {
    ("IN_PROGRESS", "COMPLETED"): "complete",
    ("IN_PROGRESS", "ABORTED"): "abort",
}
SPRINT_STATES: tuple[str, ...] = tuple(s.value for s in SprintStatus)
SPRINT_EDGES: dict[tuple[str, str], str] = {
    ("IN_PROGRESS", "CHECKPOINT"): "checkpoint",
    ("IN_PROGRESS", "COMPLETED"): "complete",
    ("IN_PROGRESS", "ABORTED"): "abort",
    ("CHECKPOINT", "IN_PROGRESS"): "resume",
    ("CHECKPOINT", "ABORTED"): "abort",
}
TERMINAL_SPRINT_STATES: frozenset[str] = frozenset({"COMPLETED", "ABORTED"})
OPEN_SPRINT_STATES: tuple[str, ...] = ("IN_PROGRESS", "CHECKPOINT")
TERMINAL_GOAL_STATES: frozenset[str] = frozenset({"COMPLETED", "ABORTED"})


def goal_targets(from_status: str) -> list[str]:
    return [to for (frm, to) in GOAL_EDGES if frm == from_status]


def sprint_targets(from_status: str) -> list[str]:
    return [to for (frm, to) in SPRINT_EDGES if frm == from_status]


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

# Seed 002 `config` defaults, plus SPEC §4's lease_grace and archive_after_days.
CONFIG_DEFAULTS: dict[str, object] = {
    "max_coder_iterations": 10,
    "max_review_cycles": 5,
    "heartbeat_interval": 60,
    "lease_duration": 300,
    "coder_poll_interval": 30,
    "coder_max_wait": 300,
    "integration_branch": "integration",
    "escalation_webhook": None,
}
LEASE_GRACE_SECONDS = 60
# Every numeric setting's bounds (issue #27: no setting may hold a number that a date, an
# interval or a PostgreSQL column cannot; docs/security.md lists them). The one check: the
# API's and the settings form's input (operations.inputs.ConfigInput) and the model's clean()
# (the admin and the state.yaml import) both read this table.
DAY_SECONDS = 86_400
CONFIG_BOUNDS: dict[str, tuple[int, int]] = {
    "max_coder_iterations": (1, 1000),
    "max_review_cycles": (1, 1000),
    "heartbeat_interval": (0, DAY_SECONDS),
    "lease_duration": (1, 7 * DAY_SECONDS),
    "coder_poll_interval": (0, DAY_SECONDS),
    "coder_max_wait": (0, 7 * DAY_SECONDS),
    "lease_grace": (0, DAY_SECONDS),
    "archive_after_days": (0, 36_500),  # 100 years; 0 = never archive
    "watch_interval": (1, DAY_SECONDS),
    "review_churn_threshold": (1, 1000),
}
RETRY_BACKOFF_STEP_MAX = 7 * DAY_SECONDS  # one retry_backoff entry, in seconds
STATE_TIMEOUT_MAX_SECONDS = 365 * DAY_SECONDS  # one state_timeouts budget
ARCHIVE_AFTER_DAYS = 30
WATCH_INTERVAL_SECONDS = 10  # the original watcher's loop (liza-watch.sh)
REVIEW_CHURN_THRESHOLD = 8  # issue #11: the Go rewrite's #123 (a task with 8 review cycles)
STALL_TIMEOUT_SECONDS = 600  # issue 24: the progress watchdog (no output, no commit)
MAX_STALLS = 3  # issue 24: the stall of one task that blocks it

# The circuit breaker (original-liza.md §2.7, specs/protocols/circuit-breaker.md): each pattern
# with its one severity, in precedence order: when several match at once, the trigger names the
# LAST (liza-analyze.sh tests the six in this order and reports the last that matched); issue
# #11's review churn comes first so that it never hides one of the original's six.
BREAKER_PATTERNS: dict[str, str] = {
    "review_churn": "SCOPE_FLAW",
    "retry_cluster": "ARCHITECTURE_FLAW",
    "debt_accumulation": "SCOPE_FLAW",
    "assumption_cascade": "SPEC_FLAW",
    "workaround_pattern": "ARCHITECTURE_FLAW",
    "spec_gap_cluster": "SPEC_FLAW",
    "external_service_outage": "EXTERNAL_DEPENDENCY",
}
# What one reporter's anomalies weigh (issue #27, docs/decisions.md "Circuit breaker"): the
# patterns count distinct occurrences, so of one reporter's anomalies that share a pattern's
# value, at most BREAKER_PER_REPORTER count per BREAKER_REPORTER_WINDOW seconds; and one reporter
# logs at most ANOMALY_RATE_LIMIT anomalies per ANOMALY_RATE_WINDOW seconds (429 past it).
BREAKER_PER_REPORTER = 1
BREAKER_REPORTER_WINDOW = 60
ANOMALY_RATE_LIMIT = 20
ANOMALY_RATE_WINDOW = 60
# Severity classes and what the human does about each (circuit-breaker.md).
BREAKER_SEVERITIES: dict[str, str] = {
    "VISION_FLAW": "Stop: revisit the goal with the stakeholders before any more work.",
    "SCOPE_FLAW": "Pause: revise the requirements (rescope, split or abandon the tasks).",
    "SPEC_FLAW": "Pause: update the specs the evidence points at, and log the spec change.",
    "ARCHITECTURE_FLAW": "Pause: decide the design question and record it in a new ADR.",
    "TECH_STACK_FLAW": "Pause: reconsider the technology choice (no pattern yet).",
    "EXTERNAL_DEPENDENCY": "Halt and wait: the external service must be back before work resumes.",
}
# Seed 003 retry (SPEC §13): the wait after the nth lease expiry of a task's coder, in seconds;
# the (len + 1)th expiry of the same coder blocks the task (`retry_exhausted`).
RETRY_BACKOFF_SECONDS = (5, 30, 120)
RETRY_BACKOFF_MAX_STEPS = 10
# Seed 003 per-state timeouts: a warning at this share of a state's budget (spec 026).
STATE_TIMEOUT_WARN_RATIO = 0.8
STATE_TIMEOUT_ACTIONS = ("alert", "block")
MAX_BLOCKED_QUESTIONS = 3
# The board's advisory WIP limits (issue #13) apply to the columns work sits in, not to the
# terminal ones. Display only: no rule of the protocol reads them.
WIP_LIMIT_MAX = 10_000


def wip_limits_error(value: object) -> str:
    """Why `value` is not a {column: limit} map of non-terminal states to 1..WIP_LIMIT_MAX
    ("" when it is)."""
    if not isinstance(value, dict):
        return 'a map of column to limit, e.g. {"CLAIMED": 3}'
    allowed = [s for s in TASK_STATES if s not in TERMINAL_TASK_STATES]
    for status, limit in value.items():
        if status not in allowed:
            return f"{status!s:.40} is not a column with a WIP limit; one of {', '.join(allowed)}"
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= WIP_LIMIT_MAX:
            return f"{status}: a limit is a whole number from 1 to {WIP_LIMIT_MAX}"
    return ""


# Issue 24: usage and budgets. What one usage report may carry (per model, a run's totals so
# far) and what a budget may be set to: the input serializers and the services read these.
USAGE_TOKENS_MAX = 10**11  # one run's tokens of one kind for one model
USAGE_COST_MAX_USD = 100_000  # one run's cost for one model
USAGE_MODELS_MAX = 20  # models in one report
BUDGET_BOUNDS: dict[str, tuple[int, int]] = {
    "limit_usd": (0, 10_000_000),
    "limit_tokens": (1, 10**13),
}
BUDGET_SCOPES = ("project", "goal", "sprint", "agent", "task")
BUDGET_WARNING = 0.8  # the share of a budget that raises its alert (100 %: the hard stop)


# The keys of `ProjectConfig.max_concurrent` (issue 24, enforced at claim: selectors.limits).
CONCURRENCY_KEYS = ("coder", "code_reviewer", "project")
CONCURRENCY_MAX = 1000


def max_concurrent_text(value: dict[str, int]) -> str:
    """The settings form's spelling of `max_concurrent`: "coder=3, project=5"."""
    return ", ".join(f"{k}={value[k]}" for k in CONCURRENCY_KEYS if k in value)


def max_concurrent_parse(text: str) -> dict[str, object]:
    """The settings form's "coder=3, project=5" as a map (validated by max_concurrent_error)."""
    limits: dict[str, object] = {}
    for part in text.replace(";", ",").split(","):
        if part.strip():
            name, _, limit = part.partition("=")
            limit = limit.strip()
            limits[name.strip().lower()] = (
                int(limit) if limit.isascii() and limit.isdigit() else limit
            )
    return limits


def max_concurrent_error(value: object) -> str:
    """Why `value` is not a {role | "project": limit} map ("" when it is)."""
    if not isinstance(value, dict):
        return 'a map of role or "project" to a limit, e.g. {"coder": 3, "project": 5}'
    for name, limit in value.items():
        if name not in CONCURRENCY_KEYS:
            return f"{name!s:.40} is not one of {', '.join(CONCURRENCY_KEYS)}"
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= CONCURRENCY_MAX
        ):
            return f"{name}: a limit is a whole number from 1 to {CONCURRENCY_MAX}"
    return ""


def wip_limits_text(value: dict[str, int]) -> str:
    """The settings form's spelling of the WIP limits: "CLAIMED=3, BLOCKED=2"."""
    return ", ".join(f"{s}={value[s]}" for s in TASK_STATES if s in value)


def wip_limits_parse(text: str) -> dict[str, object]:
    """The settings form's "CLAIMED=3, BLOCKED=2" as a map (validated by wip_limits_error)."""
    limits: dict[str, object] = {}
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        status, _, limit = part.partition("=")
        limit = limit.strip()
        limits[status.strip().upper()] = (
            int(limit) if limit.isascii() and limit.isdigit() else limit
        )
    return limits


PRIORITY_RANGE = (1, 5)  # 1 highest
# Per-task overrides (seed 002 "Config Scope", "Lease Model" lease_duration_override): their
# bounds, written once for the API, the board's forms, the admin and the services.
TASK_LIMIT_BOUNDS: dict[str, tuple[int, int]] = {
    "max_iterations": (1, 1000),
    "max_review_cycles": (1, 1000),
    "lease_duration_override": (30, 86_400),
}

TASK_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


# Seed 002's sprint.metrics "tasks_in_progress": work that a coder or reviewer holds or that
# waits for its next step (REJECTED waits for its coder, APPROVED for its merge).
IN_PROGRESS_TASK_STATES: tuple[str, ...] = (
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "INTEGRATION_FAILED",
)

# Seed 002 `sprint.metrics` (SPEC §9): approving more than 95 % of at least 5 verdicts reads as
# rubber-stamping (a warning, never a refusal). The one place of the rule: the sprint metrics
# (a round of reviews) and insights (each reviewer) both ask `rubber_stamp`.
RUBBER_STAMP_PERCENT = 95
RUBBER_STAMP_MIN_VERDICTS = 5


def rubber_stamp(approvals: int, verdicts: int) -> bool:
    """More than 95 % approvals over at least 5 verdicts (exact, not the rounded percentage)."""
    return (
        verdicts >= RUBBER_STAMP_MIN_VERDICTS and 100 * approvals > RUBBER_STAMP_PERCENT * verdicts
    )


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
    REVIEW_CLAIM_RELEASED = "review_claim_released"
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


# Seed 002 "Timestamp Format": ISO 8601 UTC with a Z suffix, to the second.
def format_timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: object) -> datetime:
    """Parse a state.yaml timestamp (YAML may already have made it a datetime).

    Raises ValueError for anything that is not an ISO-8601 instant.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


# -- secrets in URLs (issue #27) ---------------------------------------------------------------
# A webhook URL often carries its token (in the path, the query or the credentials). The event
# log, the delivery log, alerts and log lines show a URL only as `redact_url` leaves it: scheme,
# host and port. Only the config answer and the settings page show the whole URL, to admins.
SECRET_URL_SETTINGS: tuple[str, ...] = ("escalation_webhook",)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """`https://hooks.example.com/…` for `https://user:pw@hooks.example.com/T0/B0/xyz?t=1`."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "…"
    if not parts.scheme or not host:
        return "…"
    netloc = f"[{host}]" if ":" in host else host
    netloc = f"{netloc}:{port}" if port else netloc
    credentials = "…@" if "@" in parts.netloc else ""
    rest = "" if parts.path in ("", "/") and not parts.query and not parts.fragment else "/…"
    return f"{parts.scheme}://{credentials}{netloc}{rest}"


def redact_urls(text: str) -> str:
    """Every URL inside `text` (an error message, a log line) redacted."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def config_change_detail(changes: dict[str, object]) -> str:
    """A `config_updated` event's one-line detail from its `changes` ({name: {old, new}}): a
    secret-bearing URL only as "changed", so the line is the same for every reader (the live
    activity feed renders it once for all)."""
    parts = []
    for name, change in changes.items():
        if name in SECRET_URL_SETTINGS:
            parts.append(f"{name} changed")
        elif isinstance(change, dict):
            parts.append(f"{name} {change.get('old') or 'none'} → {change.get('new') or 'none'}")
        else:
            parts.append(f"{name} {change}")
    return ", ".join(parts)


def config_changes_shown(changes: dict[str, object], *, admin: bool) -> dict[str, object]:
    """A `config_updated` event's `changes` for one reader: admins see a webhook's URLs redacted
    (scheme, host, port), everyone else that it "changed"."""
    shown: dict[str, object] = {}
    for name, change in changes.items():
        if name in SECRET_URL_SETTINGS:
            if admin and isinstance(change, dict):
                change = {k: redact_url(str(v or "")) for k, v in change.items()}
            else:
                change = "changed"
        shown[name] = change
    return shown


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


# -- links to the code host (issue 25) ---------------------------------------------------------

# What a `repo_url` template may name; a plain repository address is read by its host instead
# (boards.board.selectors.code_links).
REPO_URL_PLACEHOLDERS = ("branch", "commit", "pr")


def pr_url_problem(value: object) -> str | None:
    """Why `value` is not a pull request's address (http(s), a host, at most 500 characters, no
    space), or None (blank is none): what a coder may report with its submission (issue 25)."""
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    if not isinstance(value, str) or len(value) > PR_URL_MAX_LENGTH:
        return f"an address of at most {PR_URL_MAX_LENGTH} characters"
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() or ord(c) < 32 for c in value)
    ):
        return "an http:// or https:// address"
    return None


PR_URL_MAX_LENGTH = 500


def repo_url_problem(value: object) -> str | None:
    """Why `value` is not a repository address or URL template, or None (blank is none)."""
    import re
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    if not isinstance(value, str) or len(value) > 500:
        return "an address of at most 500 characters"
    shown = re.sub(r"\{(?:" + "|".join(REPO_URL_PLACEHOLDERS) + r")\}", "x", value)
    if "{" in shown or "}" in shown:
        return "the only placeholders are {branch}, {commit} and {pr}"
    parts = urlsplit(shown)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in value)
    ):
        return "an http:// or https:// address"
    return None
