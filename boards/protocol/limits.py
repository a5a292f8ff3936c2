"""Settings, their defaults and bounds, and the limits read at claim and on the forms: config,
retries, state timeouts, WIP, usage and budgets, concurrency, per-task limits, rubber-stamping.
"""

from __future__ import annotations

import re

from boards.protocol.states import TASK_STATES, TERMINAL_TASK_STATES

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
