"""The agents' work: claims, submissions, blocks, verdicts, merges, handoffs, runs."""

from __future__ import annotations

from rest_framework import serializers

from boards import protocol as p
from boards.coordination.models.tasks import Review
from boards.operations.inputs.base import COMMIT, InputSerializer


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
