"""What each operation accepts: one validation of every input, whoever sends it.

The API validates request bodies with these serializers, the board's HTML forms and the Django
admin's action forms go through the same ones (boards.operations), so a bound, a required field
or a refused character is written once. A field a serializer does not know is a 400 naming it.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards import protocol as p
from boards.coordination.models.tasks import Review, Task


class InputSerializer(serializers.Serializer):
    """A request body: a field it does not know is a 400 naming it, never silently dropped.

    DRF ignores unknown keys; for the agent protocol that would turn a misspelt `depends_on`
    or `questions` into an operation that "succeeded" without the data (SPEC §6: validation →
    400 naming the field).
    """

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(name) for name in data if name not in self.fields)
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


class InputSerializerSchema(OpenApiSerializerExtension):
    """Say it in the OpenAPI schema too: request bodies take no other properties."""

    target_class = InputSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


def limit_field(name: str) -> serializers.IntegerField:
    """A per-task limit: within `protocol.TASK_LIMIT_BOUNDS`, null = the project's setting."""
    low, high = p.TASK_LIMIT_BOUNDS[name]
    return serializers.IntegerField(min_value=low, max_value=high, required=False, allow_null=True)


COMMIT = {"max_length": 64, "allow_blank": False}
KEY = {"max_length": 64, "allow_blank": False}


class ClaimInput(InputSerializer):
    base_commit = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="integration HEAD at claim time"
    )
    worktree = serializers.CharField(required=False, allow_blank=True, max_length=500)


class ChangedFileInput(InputSerializer):
    path = serializers.CharField(max_length=1000)
    added = serializers.IntegerField(min_value=-1, max_value=10_000_000)
    deleted = serializers.IntegerField(min_value=-1, max_value=10_000_000)


class ChangeSummaryInput(InputSerializer):
    """What the submission changed (agents.client.gitops.change_summary's bounds)."""

    files = ChangedFileInput(many=True, max_length=300)
    diff = serializers.CharField(
        max_length=60_000, allow_blank=True, required=False, trim_whitespace=False
    )
    truncated = serializers.BooleanField(required=False, default=False)


class SubmitInput(InputSerializer):
    review_commit = serializers.CharField(**COMMIT)
    tree_clean = serializers.BooleanField(
        help_text="attestation that `git status --porcelain` is empty (seed 002 Clean Sync)"
    )
    change_summary = ChangeSummaryInput(
        required=False, help_text="files changed with +/- counts and a bounded diff (issue 25)"
    )
    pr_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=p.PR_URL_MAX_LENGTH,
        help_text="the pull request's http(s) address, when the coder opened one (issue 25)",
    )

    def validate_pr_url(self, value: str) -> str:
        problem = p.pr_url_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class BlockInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)
    questions = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        min_length=1,
        max_length=p.MAX_BLOCKED_QUESTIONS,
    )
    attempted = serializers.ListField(
        child=serializers.CharField(max_length=1000), required=False, max_length=100
    )


class VerdictInput(InputSerializer):
    verdict = serializers.ChoiceField(choices=Review.Verdict.values)
    review_commit = serializers.CharField(**COMMIT)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class MergeInput(InputSerializer):
    merge_commit = serializers.CharField(**COMMIT)


class RunStartInput(InputSerializer):
    task = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    restart_reason = serializers.CharField(max_length=100, required=False, allow_blank=True)
    command = serializers.CharField(max_length=500, required=False, allow_blank=True)


class RunFinishInput(InputSerializer):
    exit_code = serializers.IntegerField(min_value=-255, max_value=255)
    stopped_by = serializers.CharField(max_length=100, required=False, allow_blank=True)
    output = serializers.CharField(max_length=200_000, required=False, allow_blank=True)


class QuotaPauseInput(InputSerializer):
    until = serializers.DateTimeField(help_text="no spawn before this time (at most 7 days)")
    provider = serializers.CharField(max_length=64)
    message = serializers.CharField(max_length=300, required=False, allow_blank=True)


class RunOutputInput(InputSerializer):
    text = serializers.CharField(max_length=16_000, allow_blank=True, trim_whitespace=False)


class RoundedDecimalField(serializers.DecimalField):
    """A decimal that takes more places than it keeps (a CLI's float cost, 0.12345678 USD):
    rounded half up to `decimal_places`, then checked as DRF checks any decimal."""

    def validate_precision(self, value):
        if value.is_finite() and value.adjusted() < self.max_digits:  # else: max_digits fails
            value = value.quantize(
                decimal.Decimal(1).scaleb(-self.decimal_places), rounding=decimal.ROUND_HALF_UP
            )
        return super().validate_precision(value)


def _tokens() -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=p.USAGE_TOKENS_MAX
    )


class ModelUsageInput(InputSerializer):
    """One model's usage in a run so far (issue 24): running totals, not increments."""

    model = serializers.CharField(required=False, default="", allow_blank=True, max_length=100)
    input_tokens = _tokens()
    output_tokens = _tokens()
    cache_read_tokens = _tokens()
    cache_write_tokens = _tokens()
    # A float from JSON, checked finite and bounded; stored as a decimal of 6 places.
    cost_usd = RoundedDecimalField(
        required=False,
        default=0,
        max_digits=14,
        decimal_places=6,
        min_value=0,
        max_value=p.USAGE_COST_MAX_USD,
        coerce_to_string=False,
    )


class UsageInput(InputSerializer):
    usage = ModelUsageInput(many=True, max_length=p.USAGE_MODELS_MAX, allow_empty=False)
    run = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**62,
        help_text="the run's id (its supervisor knows it); else the agent's running run",
    )


class BudgetInput(InputSerializer):
    scope = serializers.ChoiceField(choices=p.BUDGET_SCOPES)
    subject = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=64,
        help_text="the goal, sprint, agent or task id; empty for the project",
    )
    limit_usd = RoundedDecimalField(
        required=False,
        allow_null=True,
        default=None,
        max_digits=14,
        decimal_places=2,
        min_value=p.BUDGET_BOUNDS["limit_usd"][0],
        max_value=p.BUDGET_BOUNDS["limit_usd"][1],
        coerce_to_string=False,
        help_text="USD; null or absent: no USD limit",
    )
    limit_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=p.BUDGET_BOUNDS["limit_tokens"][0],
        max_value=p.BUDGET_BOUNDS["limit_tokens"][1],
        help_text="tokens (input, output, cache read and write); null or absent: no token "
        "limit. With neither limit the budget is removed.",
    )


class ReasonInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)


class OverrideBlockInput(ReasonInput):
    questions = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        required=False,
        max_length=p.MAX_BLOCKED_QUESTIONS,
    )


class HandoffInput(InputSerializer):
    summary = serializers.CharField(max_length=500)
    next_action = serializers.CharField(max_length=500)
    context_used = serializers.CharField(required=False, allow_blank=True, max_length=16)
    approach = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    blockers = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    files_modified = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=500
    )
    next_steps = serializers.ListField(
        child=serializers.CharField(max_length=1000), required=False, max_length=100
    )


class DiscoveryInput(InputSerializer):
    description = serializers.CharField(max_length=5000)
    severity = serializers.ChoiceField(choices=p.DISCOVERY_SEVERITIES)
    urgency = serializers.ChoiceField(
        choices=p.DISCOVERY_URGENCIES, required=False, default="deferred"
    )
    during = serializers.CharField(required=False, allow_blank=True, max_length=64)
    recommendation = serializers.CharField(required=False, allow_blank=True, max_length=5000)


ANOMALY_DETAILS_MAX_CHARS = 10_000


def _holds_null_character(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_null_character(k) or _holds_null_character(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_null_character(v) for v in value)
    return False


class AnomalyInput(InputSerializer):
    type = serializers.ChoiceField(choices=p.ANOMALY_TYPES)
    details = serializers.DictField(help_text="the type's required fields (seed 002)")
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)

    def validate_details(self, details: dict) -> dict:
        # Stored as jsonb, and PostgreSQL refuses NUL in any jsonb string, key or value.
        if _holds_null_character(details):
            raise serializers.ValidationError("null characters are not allowed")
        if len(json.dumps(details)) > ANOMALY_DETAILS_MAX_CHARS:
            raise serializers.ValidationError(
                f"at most {ANOMALY_DETAILS_MAX_CHARS} characters of JSON"
            )
        return details


class LogInput(InputSerializer):
    action = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
    detail = serializers.CharField(max_length=500)
    task = serializers.CharField(required=False, allow_blank=True, max_length=64)


class NewTaskInput(InputSerializer):
    key = serializers.RegexField(p.TASK_KEY_RE, max_length=64)
    description = serializers.CharField(max_length=10_000)
    priority = serializers.IntegerField(
        min_value=p.PRIORITY_RANGE[0], max_value=p.PRIORITY_RANGE[1], required=False, default=3
    )
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)
    done_when = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    scope = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    criticality = serializers.ChoiceField(
        choices=Task.Criticality.choices, required=False, default="standard"
    )
    max_iterations = limit_field("max_iterations")
    max_review_cycles = limit_field("max_review_cycles")
    lease_duration_override = limit_field("lease_duration_override")
    needs_human_approval = serializers.BooleanField(
        required=False,
        help_text="a human approves before merge (seed 004); default: security-sensitive only",
    )
    depends_on = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=200
    )


class CreateTaskInput(NewTaskInput):
    sprint_scope = serializers.ChoiceField(
        choices=["planned", "stretch"], required=False, allow_null=True
    )


class DependenciesInput(InputSerializer):
    depends_on = serializers.ListField(child=serializers.CharField(max_length=64), max_length=200)


class RescopeInput(ReasonInput):
    new_tasks = NewTaskInput(many=True, allow_empty=False)


class TaskEditInput(InputSerializer):
    """A planner's edit: only the fields given, and of those only the values that differ."""

    description = serializers.CharField(required=False, max_length=10_000)
    done_when = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)
    scope = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
    priority = serializers.IntegerField(
        min_value=p.PRIORITY_RANGE[0], max_value=p.PRIORITY_RANGE[1], required=False
    )
    criticality = serializers.ChoiceField(choices=Task.Criticality.choices, required=False)
    needs_human_approval = serializers.BooleanField(required=False)
    depends_on = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=200,
        help_text="replaces the task's dependencies; [] clears them",
    )


class ProjectInput(InputSerializer):
    slug = serializers.SlugField(max_length=64, help_text="in every URL; fixed once made")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)


class InviteInput(InputSerializer):
    who = serializers.CharField(max_length=254, help_text="an account's username or e-mail")
    role = serializers.ChoiceField(choices=["viewer", "member", "admin"])
    can_plan = serializers.BooleanField(
        required=False, default=False, help_text="members only: may plan goal, tasks, sprints"
    )


class GoalEditInput(InputSerializer):
    description = serializers.CharField(required=False, max_length=10_000)
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)


class GoalInput(InputSerializer):
    description = serializers.CharField(max_length=10_000)
    spec_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)


class SprintInput(InputSerializer):
    planned = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=1000
    )
    stretch = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, max_length=1000
    )
    deadline = serializers.DateTimeField(required=False, allow_null=True)


class ApprovalInput(InputSerializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class LimitsInput(InputSerializer):
    """Per-task overrides; null puts a limit back to the project's setting."""

    priority = serializers.IntegerField(
        min_value=p.PRIORITY_RANGE[0], max_value=p.PRIORITY_RANGE[1], required=False
    )
    max_iterations = limit_field("max_iterations")
    max_review_cycles = limit_field("max_review_cycles")
    lease_duration_override = limit_field("lease_duration_override")
    needs_human_approval = serializers.BooleanField(required=False)


class DecisionInput(InputSerializer):
    decision = serializers.CharField(max_length=2000, help_text="recorded in the retrospective")


class DeadlineInput(InputSerializer):
    deadline = serializers.DateTimeField(allow_null=True, help_text="in the future; null clears")


class NoteInput(InputSerializer):
    message = serializers.CharField(max_length=5000)
    task = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="omit for a project note"
    )


class ConvertTaskInput(CreateTaskInput):
    description = serializers.CharField(
        required=False, max_length=10_000, help_text="defaults to the discovery's description"
    )


class TriageInput(InputSerializer):
    decision = serializers.ChoiceField(choices=["convert", "defer", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    task = ConvertTaskInput(required=False, help_text="convert only: the DRAFT task to create")


# Described to the OpenAPI schema (drf-spectacular cannot see inside a custom field): the API
# takes the map; the settings form's "CLAIMED=3" spelling is the board's.
@extend_schema_field({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}})
class WipLimitsField(serializers.Field):
    """The board's advisory WIP limits: {"CLAIMED": 3} from the API, "CLAIMED=3, BLOCKED=2"
    from the settings form; one rule (protocol.wip_limits_error) for both."""

    default_error_messages = {"invalid": "{message}"}

    def to_internal_value(self, data):
        limits = p.wip_limits_parse(data) if isinstance(data, str) else data
        message = p.wip_limits_error(limits)
        if message:
            self.fail("invalid", message=message)
        return limits

    def to_representation(self, value):
        return value


@extend_schema_field({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}})
class MaxConcurrentField(serializers.Field):
    """Issue 24's concurrency caps: {"coder": 3, "project": 5} from the API, "coder=3,
    project=5" from the settings form; one rule (protocol.max_concurrent_error) for both."""

    default_error_messages = {"invalid": "{message}"}

    def to_internal_value(self, data):
        limits = p.max_concurrent_parse(data) if isinstance(data, str) else data
        message = p.max_concurrent_error(limits)
        if message:
            self.fail("invalid", message=message)
        return limits

    def to_representation(self, value):
        return value


def config_number(name: str) -> serializers.IntegerField:
    """A numeric setting: within `protocol.CONFIG_BOUNDS`."""
    low, high = p.CONFIG_BOUNDS[name]
    return serializers.IntegerField(required=False, min_value=low, max_value=high)


class NotificationsInput(InputSerializer):
    """A member's notifications (issue 24): which events, e-mail, a digest; a chat webhook (and
    another member's choices, named by `user`) only for project admins. Fields left out stay."""

    user = serializers.CharField(
        required=False, max_length=150, help_text="admins: another member's username"
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=[str(e) for e in p.NotifyEvent]),
        required=False,
        max_length=len(p.NotifyEvent),
        help_text="what to be told of: " + ", ".join(p.NotifyEvent),
    )
    email = serializers.BooleanField(required=False, help_text="by e-mail, to the user's address")
    digest_minutes = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=p.NOTIFY_DIGEST_MAX_MINUTES,
        help_text="0: each sweep's news at once; N: one message gathering N minutes",
    )
    chat_url = serializers.URLField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="admins: a Slack or Discord incoming-webhook URL (a public address); '' removes",
    )
    chat_format = serializers.ChoiceField(
        required=False, choices=["slack", "discord"], help_text="admins: the chat's format"
    )


class ConfigInput(InputSerializer):
    max_coder_iterations = config_number("max_coder_iterations")
    max_review_cycles = config_number("max_review_cycles")
    heartbeat_interval = config_number("heartbeat_interval")
    lease_duration = config_number("lease_duration")
    coder_poll_interval = config_number("coder_poll_interval")
    coder_max_wait = config_number("coder_max_wait")
    integration_branch = serializers.CharField(required=False, max_length=200)
    escalation_webhook = serializers.URLField(required=False, allow_blank=True, allow_null=True)
    webhook_secret = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=200,
        write_only=True,
        trim_whitespace=False,
        help_text="signs each webhook delivery (HMAC-SHA256); write-only: never shown again; "
        "empty or null removes it",
    )
    lease_grace = config_number("lease_grace")
    archive_after_days = config_number("archive_after_days")
    watch_interval = config_number("watch_interval")
    review_churn_threshold = config_number("review_churn_threshold")
    retry_backoff = serializers.JSONField(
        required=False, help_text="seconds to wait after a coder's 1st, 2nd, … lease expiry"
    )
    state_timeouts = serializers.JSONField(
        required=False, help_text='{"CLAIMED": {"seconds": 3600, "action": "alert|block"}}'
    )
    wip_limits = WipLimitsField(
        required=False,
        help_text="per column, e.g. CLAIMED=3, READY_FOR_REVIEW=4 (empty: none); CLAIMED's is "
        "enforced at claim, the others are shown on the board",
    )
    repo_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="the repository (https://github.com/org/repo, a GitLab or Gitea one) or a "
        "template with {branch}, {commit}, {pr}: branches and commits become links",
    )
    stall_timeout = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=86_400,
        help_text="seconds without output or commit before a supervised run is stalled",
    )
    max_concurrent = MaxConcurrentField(
        required=False,
        help_text="agents at work at once (each with a live claim or review lease), enforced "
        "at claim, per role and for the project: e.g. coder=3, code_reviewer=2, project=5 (API: "
        '{"coder": 3}); empty: none',
    )
    max_stalls = serializers.IntegerField(
        required=False, min_value=1, max_value=100, help_text="the stall of a task that blocks it"
    )


class AvailabilityInput(InputSerializer):
    state = serializers.ChoiceField(
        choices=["available", "overloaded"],
        help_text="overloaded: keeps what it holds, takes nothing new; available: also clears"
        " an error state",
    )


class RegisterInput(InputSerializer):
    agent_id = serializers.CharField(
        required=False, max_length=64, help_text="must be the key's agent when given"
    )
    role = serializers.ChoiceField(choices=p.AGENT_ROLES, required=False)
    terminal = serializers.CharField(required=False, allow_blank=True, max_length=200)


class HeartbeatInput(InputSerializer):
    context_percent = serializers.IntegerField(
        min_value=0, max_value=100, required=False, allow_null=True
    )
    # Issue 24: the supervised run's last progress (output, a commit), as its supervisor saw it.
    progress_at = serializers.DateTimeField(required=False, allow_null=True)


class AgentCreateInput(InputSerializer):
    role = serializers.ChoiceField(choices=p.AGENT_ROLES)
    agent_id = serializers.CharField(required=False, allow_blank=True, max_length=64)
    security_reviewer = serializers.BooleanField(required=False, default=False)
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)


class KeyInput(InputSerializer):
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)


class EventQueryInput(serializers.Serializer):
    """The event list's query parameters (`limit` is clamped to 1–1000 by the view)."""

    task = serializers.CharField(required=False, allow_blank=True, max_length=64)
    after = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**62)
    limit = serializers.IntegerField(
        required=False, default=200, min_value=-(2**62), max_value=2**62
    )
