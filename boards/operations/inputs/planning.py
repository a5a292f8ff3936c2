"""Planning: new tasks and their edits, dependencies, rescoping, goals, sprints, projects and
invitations, a discovery's triage into a task.
"""

from __future__ import annotations

from rest_framework import serializers

from boards import protocol as p
from boards.coordination.models.tasks import Task
from boards.operations.inputs.base import InputSerializer, ReasonInput, limit_field
from boards.operations.inputs.contract import contract_input


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


class RescopeInput(ReasonInput):
    new_tasks = NewTaskInput(many=True, allow_empty=False)


class ProjectInput(InputSerializer):
    slug = serializers.SlugField(max_length=64, help_text="in every URL; fixed once made")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)


class InviteInput(InputSerializer):
    who = serializers.CharField(max_length=254, help_text="an account's username or e-mail")
    role = serializers.ChoiceField(choices=["viewer", "member", "admin"])
    can_plan = serializers.BooleanField(
        required=False, default=False, help_text="members only: may plan goal, tasks, sprints"
    )


class ConvertTaskInput(CreateTaskInput):
    description = serializers.CharField(
        required=False, max_length=10_000, help_text="defaults to the discovery's description"
    )


class TriageInput(contract_input("discovery_triage")):
    task = ConvertTaskInput(required=False, help_text="convert only: the DRAFT task to create")
