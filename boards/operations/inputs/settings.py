"""A project's settings (ConfigInput: every numeric setting within `protocol.CONFIG_BOUNDS`) and a
person's notification preferences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.base import InputSerializer


# Described to the OpenAPI schema (drf-spectacular cannot see inside a custom field): the API
# takes the map; the settings form's "NAME=3" spelling is the board's.
@extend_schema_field({"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}})
class LimitsField(serializers.Field):
    """A map of caps by name: {"CLAIMED": 3} from the API, "CLAIMED=3, BLOCKED=2" from the
    settings form (read by `parse`); one rule (`error`, from protocol) for both."""

    default_error_messages = {"invalid": "{message}"}

    def __init__(
        self,
        *,
        parse: Callable[[str], dict[str, object]],
        error: Callable[[object], str],
        **kwargs: Any,
    ) -> None:
        self.parse, self.error = parse, error
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        limits = self.parse(data) if isinstance(data, str) else data
        message = self.error(limits)
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
    # The board's advisory WIP limits.
    wip_limits = LimitsField(
        parse=p.wip_limits_parse,
        error=p.wip_limits_error,
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
    # Issue 24's concurrency caps.
    max_concurrent = LimitsField(
        parse=p.max_concurrent_parse,
        error=p.max_concurrent_error,
        required=False,
        help_text="agents at work at once (each with a live claim or review lease), enforced "
        "at claim, per role and for the project: e.g. coder=3, code_reviewer=2, project=5 (API: "
        '{"coder": 3}); empty: none',
    )
    max_stalls = serializers.IntegerField(
        required=False, min_value=1, max_value=100, help_text="the stall of a task that blocks it"
    )
