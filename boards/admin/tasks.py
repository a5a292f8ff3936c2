"""The admin of tasks and what hangs off them: reviews, discoveries, handoffs, notes, spec changes,
anomalies, change summaries.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils import timezone

from boards.admin.base import (
    AppendOnlyAdmin,
    ServiceManagedAdmin,
    TaskKeyColumn,
    ViewOnlyInline,
    excerpt_column,
    service_actions,
    task_keys,
)
from boards.api.serializers.records import EVENT_FIELDS
from boards.api.serializers.tasks import REVIEW_FIELDS
from boards.coordination.models.records import (
    Anomaly,
    Event,
    SpecChange,
)
from boards.coordination.models.tasks import (
    ChangeSummary,
    Discovery,
    Handoff,
    HumanNote,
    Review,
    Task,
)
from boards.coordination.services.records import human_note_create


class EventInline(ViewOnlyInline):
    """The task's timeline (SPEC §4.1: task history is a view of the event log); view-only, so
    no Event is written through it."""

    model = Event
    fields = EVENT_FIELDS  # an event's line, as the API answers it
    ordering = ("timestamp", "id")
    verbose_name_plural = "timeline"


class ReviewInline(EventInline):
    model = Review
    fields = REVIEW_FIELDS  # a review under its task, as the API answers it
    ordering = ("claimed_at", "id")
    verbose_name_plural = "reviews"


@admin.register(Task)
class TaskAdmin(ServiceManagedAdmin):
    list_display = (
        "key",
        "project",
        "status",
        "priority",
        "criticality",
        "assigned_to",
        "iteration",
        "review_cycles",
        "lease_expires",
    )
    list_filter = (
        "status",
        "project",
        "criticality",
        "priority",
        "handoff_pending",
        "integration_fix",
    )
    search_fields = ("key", "description", "assigned_to", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project",)
    show_full_result_count = False
    exclude = ("depends_on",)
    readonly_fields = ("dependencies",)
    dependencies = task_keys("depends_on", description="depends on")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "project",
                    "goal",
                    "key",
                    "description",
                    "status",
                    "priority",
                    "criticality",
                    "spec_ref",
                    "done_when",
                    "scope",
                    "dependencies",
                )
            },
        ),
        (
            "Claim",
            {
                "fields": (
                    "assigned_to",
                    "worktree",
                    "base_commit",
                    "lease_expires",
                    "iteration",
                    "integration_fix",
                    "handoff_pending",
                )
            },
        ),
        (
            "Review and merge",
            {
                "fields": (
                    "review_commit",
                    "approved_by",
                    "review_cycles_current",
                    "review_cycles_total",
                    "rejection_reason",
                    "merge_commit",
                )
            },
        ),
        (
            "Blocked, failed, rescoped",
            {
                "fields": (
                    "blocked_reason",
                    "blocked_questions",
                    "attempted",
                    "failed_by",
                    "supersedes",
                    "superseded_by",
                    "rescope_reason",
                )
            },
        ),
        (
            "Per-task limits",
            {"fields": ("max_iterations", "max_review_cycles", "lease_duration_override")},
        ),
        ("Timestamps", {"fields": ("created", "updated")}),
    )
    inlines = (ReviewInline, EventInline)

    @admin.display(description="review cycles (current/total)")
    def review_cycles(self, obj: Task) -> str:
        return f"{obj.review_cycles_current}/{obj.review_cycles_total}"

    actions = service_actions(
        # SPEC §5.1: a human admin may move any non-terminal task to BLOCKED.
        override_block=("task_override_block", "Override block selected tasks"),
        release_blocked=("task_release", "Release BLOCKED tasks to UNCLAIMED"),
        abandon_blocked=("task_abandon", "Abandon BLOCKED tasks"),
        finalize_drafts=("task_finalize", "Finalize DRAFT tasks to UNCLAIMED"),
    )


@admin.register(Review)
class ReviewAdmin(TaskKeyColumn, ServiceManagedAdmin):
    list_display = (
        "task_key",
        "project",
        "reviewer",
        "verdict",
        "review_commit",
        "claimed_at",
        "lease_expires",
        "verdict_at",
        "closed_at",
    )
    list_filter = ("verdict", ("closed_at", admin.EmptyFieldListFilter), "project")
    search_fields = ("task__key", "reviewer", "review_commit", "project__slug")
    date_hierarchy = "claimed_at"
    list_select_related = ("project", "task")


@admin.register(Discovery)
class DiscoveryAdmin(ServiceManagedAdmin):
    list_display = (
        "disc_id",
        "project",
        "severity",
        "urgency",
        "by",
        "during",
        "converted_to_task",
        "created",
        "short_description",
    )
    list_filter = (
        "severity",
        "urgency",
        ("converted_to_task", admin.EmptyFieldListFilter),
        "project",
    )
    search_fields = ("disc_id", "description", "by", "during", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project",)
    short_description = excerpt_column("description")


@admin.register(Handoff)
class HandoffAdmin(TaskKeyColumn, ServiceManagedAdmin):
    list_display = ("task_key", "project", "agent", "timestamp", "summary", "next_action")
    list_filter = ("project",)
    search_fields = ("task__key", "agent", "summary", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project", "task")


class HumanNoteForm(forms.ModelForm):
    message = forms.CharField(widget=forms.Textarea, max_length=5000)

    class Meta:
        model = HumanNote
        fields = ("project", "task", "message")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        task, project = data.get("task"), data.get("project")
        if task is not None and project is not None and task.project_id != project.pk:
            raise ValidationError({"task": f"{task.key} is not a task of {project.slug}"})
        return data


@admin.register(HumanNote)
class HumanNoteAdmin(TaskKeyColumn, admin.ModelAdmin):
    # A note is written once through the service (which logs it); it stays as written.
    form = HumanNoteForm
    list_display = ("timestamp", "project", "task_key", "author", "short_message")
    list_filter = ("project",)
    search_fields = ("message", "task__key", "author__username", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project", "task", "author")
    autocomplete_fields = ("project", "task")
    short_message = excerpt_column("message")

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ("project", "task", "message")
        return ("project", "task", "timestamp", "author", "message")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: HumanNote, form, change: bool) -> None:
        note = human_note_create(
            project=obj.project,
            actor=request.user,
            message=obj.message,
            now=timezone.now(),
            task=obj.task.key if obj.task_id else None,
        )
        obj.pk, obj.timestamp, obj.author = note.pk, note.timestamp, note.author
        obj._state.adding = False


@admin.register(SpecChange)
class SpecChangeAdmin(AppendOnlyAdmin):
    list_display = ("timestamp", "project", "spec", "short_change", "triggered_by")
    list_filter = ("project",)
    search_fields = ("spec", "change", "triggered_by", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project",)
    short_change = excerpt_column("change")


@admin.register(Anomaly)
class AnomalyAdmin(TaskKeyColumn, ServiceManagedAdmin):
    list_display = ("timestamp", "project", "type", "task_key", "reporter")
    list_filter = ("type", "project")
    search_fields = ("reporter", "task__key", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project", "task")


@admin.register(ChangeSummary)
class ChangeSummaryAdmin(AppendOnlyAdmin):
    """What a submission changed, as the coder's client uploaded it
    (boards.coordination.services.tasks)."""

    list_display = ("created", "project", "task", "review_commit", "iteration", "truncated")
    list_filter = ("project", "truncated")
    search_fields = ("project__slug", "task__key", "review_commit")
    date_hierarchy = "created"
    list_select_related = ("project", "task")
