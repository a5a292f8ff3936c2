"""The agents' work: claims, submissions, blocks, verdicts, merges, handoffs, runs."""

from __future__ import annotations

from rest_framework import serializers

from boards import protocol as p
from boards.operations.inputs.base import InputSerializer
from boards.operations.inputs.contract import contract_input


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


class SubmitInput(contract_input("task_submit_for_review")):
    change_summary = ChangeSummaryInput(
        required=False, help_text="files changed with +/- counts and a bounded diff (issue 25)"
    )

    def validate_pr_url(self, value: str) -> str:
        problem = p.pr_url_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class RunOutputInput(contract_input("run_output_append")):
    # Output as written: its blank lines and indentation are the agent's.
    text = serializers.CharField(max_length=16_000, allow_blank=True, trim_whitespace=False)
