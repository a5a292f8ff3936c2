"""Django admin for the boards app (SPEC §7: "Django admin covers every model, with transitions
as admin actions through the same services").

The admin is one more caller of the services (STYLE.md "Where things live"):

- `status` is a protected FSM field: it is read-only in every form, and it only ever moves
  through an admin action that calls the service of that transition with `actor=request.user`
  and `now=timezone.now()`. A refusal becomes an error message for that row, never a 500.
- Domain rows (goals, sprints, tasks, reviews, records, breaker, alerts) are created by
  services only: no add or delete here, and their change forms are view-only except the few
  fields listed in `editable_fields`, which carry no protocol meaning and are saved with
  `update_fields` so a form never writes back a stale copy of anything a service owns.
- The log (Event, SpecChange) is append-only (SPEC §4.1): no add, change or delete for anyone.

The shared machinery (view-only bases, the action runner) lives here; `agents/admin.py` uses it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.text import Truncator

from boards import protocol as p
from boards.errors import ProtocolError
from boards.models import (
    Alert,
    Anomaly,
    CircuitBreaker,
    CircuitBreakerCheck,
    Discovery,
    Event,
    Goal,
    Handoff,
    HumanNote,
    Membership,
    Project,
    ProjectConfig,
    Review,
    SpecChange,
    Sprint,
    Task,
)
from boards.services.common import record_event
from boards.services.goals import goal_abort, goal_complete
from boards.services.projects import project_create
from boards.services.records import human_note_create
from boards.services.sprints import sprint_abort, sprint_checkpoint, sprint_resume
from boards.services.tasks import task_abandon, task_finalize, task_override_block, task_release

admin.site.site_header = "Liza Board administration"
admin.site.site_title = "Liza Board admin"
admin.site.index_title = "Projects, boards and agents"

# What a service may refuse with (errors.py): shown per row, never a 500.
SERVICE_ERRORS = (ProtocolError, ValidationError, PermissionDenied)


def error_text(exc: Exception) -> str:
    if isinstance(exc, ProtocolError):
        return exc.message
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc) or "permission denied"


def model_field_names(model: type[models.Model]) -> tuple[str, ...]:
    """Every concrete and many-to-many field of `model` except the automatic primary key."""
    opts = model._meta
    return tuple(
        f.name for f in [*opts.fields, *opts.many_to_many] if not (f.primary_key and f.auto_created)
    )


def excerpt(text: str, length: int = 80) -> str:
    return Truncator(text).chars(length)


# ---------------------------------------------------------------------------------------------
# base classes
# ---------------------------------------------------------------------------------------------


class AppendOnlyAdmin(admin.ModelAdmin):
    """The log: visible, never written from the admin, by anybody (superusers included)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ServiceManagedAdmin(admin.ModelAdmin):
    """A domain model whose rows only services create and move.

    `editable_fields` names the fields a change form may write: presentation or configuration
    with no protocol meaning. Everything else, `status` always, is read-only; with no editable
    field the change view is view-only (no save button, a POST is refused with 403).
    """

    editable_fields: tuple[str, ...] = ()

    def __init__(self, model: type[models.Model], admin_site: admin.AdminSite) -> None:
        if "status" in self.editable_fields:
            raise ImproperlyConfigured(f"{type(self).__name__}: status is never editable")
        super().__init__(model, admin_site)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(self.editable_fields) and super().has_change_permission(request, obj)

    def has_transition_permission(self, request: HttpRequest) -> bool:
        """Running a service from an action: the Django `change` permission on the model.

        (`has_change_permission` above is about the form; the services then check the
        protocol role themselves, and site staff count as admins of every project.)
        """
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        hidden = set(self.exclude or ())
        fields = [
            name
            for name in model_field_names(self.model)
            if name not in self.editable_fields and name not in hidden
        ]
        helpers_ = [name for name in self.readonly_fields if name not in fields]
        return (*fields, *helpers_)

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool):
        changed = [name for name in form.changed_data if name in self.editable_fields]
        if change and changed:
            # Only the edited columns: services keep writing the rest of the row concurrently.
            obj.save(update_fields=changed)
            self.after_edit(
                request,
                obj,
                {name: (form.initial.get(name), getattr(obj, name)) for name in changed},
            )

    def after_edit(
        self, request: HttpRequest, obj: Any, changes: dict[str, tuple[Any, Any]]
    ) -> None:
        """Hook: audit an edit of `editable_fields` (old, new) in the event log."""


def describe_changes(changes: dict[str, tuple[Any, Any]]) -> str:
    return ", ".join(f"{name} {old} → {new}" for name, (old, new) in changes.items())


# ---------------------------------------------------------------------------------------------
# actions that run a service on each selected row
# ---------------------------------------------------------------------------------------------


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        max_length=2000,
        help_text="Recorded in the event log as the detail of the transition.",
    )


class DecisionForm(forms.Form):
    decision = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        max_length=2000,
        help_text="The checkpoint decision, kept in the sprint's retrospective.",
    )


class OverrideBlockForm(ReasonForm):
    questions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        required=False,
        help_text=(
            f"One question per line, at most {p.MAX_BLOCKED_QUESTIONS}; "
            "empty = “What should happen to <task>?”."
        ),
    )

    def clean_questions(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["questions"].splitlines()]
        questions = [line for line in lines if line]
        if len(questions) > p.MAX_BLOCKED_QUESTIONS:
            raise ValidationError(f"at most {p.MAX_BLOCKED_QUESTIONS} questions")
        return questions


# apply(obj, actor=..., now=..., **form.cleaned_data) -> the object after the transition
Apply = Callable[..., Any]


def service_action(
    *,
    description: str,
    form_class: type[forms.Form] | None = None,
    permission: str = "transition",
) -> Callable[[Apply], Callable[..., Any]]:
    """Turn `apply` into an admin action run on each selected row, one service call each.

    With a `form_class`, the action first shows an intermediate page listing the selection and
    asking for the form (reason, decision…); the confirmed POST carries `apply=1` and the form.
    Each row gets its own success or error message: one refusal does not stop the others.
    """

    def decorator(apply: Apply) -> Callable[..., Any]:
        @admin.action(description=description, permissions=[permission])
        @functools.wraps(apply)
        def action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet):
            params: dict[str, Any] = {}
            if form_class is not None:
                if not request.POST.get("apply"):
                    return _action_page(modeladmin, request, queryset, action, form_class())
                form = form_class(request.POST)
                if not form.is_valid():
                    return _action_page(modeladmin, request, queryset, action, form)
                params = form.cleaned_data
            _apply_each(modeladmin, request, queryset, apply, params)
            return None

        return action

    return decorator


def _apply_each(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: Iterable[Any],
    apply: Apply,
    params: dict[str, Any],
) -> None:
    for obj in queryset:
        before = getattr(obj, "status", "")
        try:
            after = apply(obj, actor=request.user, now=timezone.now(), **params)
        except SERVICE_ERRORS as exc:
            modeladmin.message_user(request, f"{obj}: {error_text(exc)}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{obj}: {before} → {after.status}", messages.SUCCESS)


def _action_page(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    action: Callable[..., Any],
    form: forms.Form,
) -> TemplateResponse:
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": action.short_description,
        "subtitle": None,
        "opts": opts,
        "objects": list(queryset),
        "action_name": action.__name__,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "form": form,
        "media": modeladmin.media + form.media,
    }
    return TemplateResponse(request, "admin/liza/service_action.html", context)


# ---------------------------------------------------------------------------------------------
# tenancy and configuration
# ---------------------------------------------------------------------------------------------


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created", "paused_at")
    list_filter = (("paused_at", admin.EmptyFieldListFilter),)
    search_fields = ("slug", "name")
    date_hierarchy = "created"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The slug is in every URL, key and export: fixed once the tenant exists. Pausing is a
        # protocol action (agents exit 42), not a form field.
        fixed = ("created", "paused_at", "paused_reason")
        return ("slug", *fixed) if obj is not None else fixed

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ("slug", "name")
        return ("slug", "name", "created", "paused_at", "paused_reason")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A tenant's event log is append-only and protects the project row (SPEC §4.1).
        return False

    def save_model(self, request: HttpRequest, obj: Project, form, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        # A new tenant comes with its default config and circuit breaker (the service).
        created = project_create(slug=obj.slug, name=obj.name, now=timezone.now())
        obj.pk, obj.created = created.pk, created.created
        obj._state.adding = False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    # Access control, not protocol state: fully editable (SPEC §3).
    list_display = ("user", "project", "role")
    list_filter = ("role", "project")
    search_fields = ("user__username", "user__email", "project__slug")
    autocomplete_fields = ("project", "user")
    list_select_related = ("user", "project")


@admin.register(ProjectConfig)
class ProjectConfigAdmin(ServiceManagedAdmin):
    # Seed 002 `config`: pure configuration read by the services at each operation. Editable,
    # validated by the model's clean() (the ModelForm runs full_clean), and audited.
    editable_fields = tuple(
        name for name in model_field_names(ProjectConfig) if name not in ("project",)
    )
    fields = ("project", *editable_fields)
    list_display = (
        "project",
        "max_coder_iterations",
        "max_review_cycles",
        "heartbeat_interval",
        "lease_duration",
        "lease_grace",
        "integration_branch",
    )
    search_fields = ("project__slug",)
    list_select_related = ("project",)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def after_edit(self, request, obj: ProjectConfig, changes) -> None:
        record_event(
            project=obj.project,
            actor=request.user,
            action="config_changed",
            now=timezone.now(),
            detail=f"config: {describe_changes(changes)}",
            data={name: new for name, (_, new) in changes.items()},
        )


# ---------------------------------------------------------------------------------------------
# goals and sprints
# ---------------------------------------------------------------------------------------------


@admin.register(Goal)
class GoalAdmin(ServiceManagedAdmin):
    list_display = ("goal_id", "project", "status", "created", "short_description")
    list_filter = ("status", "project")
    search_fields = ("goal_id", "description", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project",)

    @admin.display(description="description")
    def short_description(self, obj: Goal) -> str:
        return excerpt(obj.description)

    @service_action(description="Complete selected goals (reason)", form_class=ReasonForm)
    def complete_goals(goal: Goal, **kwargs: Any) -> Goal:
        return goal_complete(goal=goal, **kwargs)

    @service_action(description="Abort selected goals (reason)", form_class=ReasonForm)
    def abort_goals(goal: Goal, **kwargs: Any) -> Goal:
        return goal_abort(goal=goal, **kwargs)

    actions = (complete_goals, abort_goals)


@admin.register(Sprint)
class SprintAdmin(ServiceManagedAdmin):
    list_display = (
        "sprint_id",
        "project",
        "goal_id",
        "status",
        "started",
        "deadline",
        "checkpoint_at",
        "ended",
    )
    list_filter = ("status", "project")
    search_fields = ("sprint_id", "project__slug", "goal__goal_id")
    date_hierarchy = "started"
    list_select_related = ("project", "goal")
    exclude = ("planned", "stretch")
    readonly_fields = ("planned_tasks", "stretch_tasks")

    @admin.display(description="goal", ordering="goal__goal_id")
    def goal_id(self, obj: Sprint) -> str:
        return obj.goal.goal_id

    @admin.display(description="planned")
    def planned_tasks(self, obj: Sprint) -> str:
        return ", ".join(obj.planned.values_list("key", flat=True)) or "—"

    @admin.display(description="stretch")
    def stretch_tasks(self, obj: Sprint) -> str:
        return ", ".join(obj.stretch.values_list("key", flat=True)) or "—"

    @service_action(description="Checkpoint selected sprints (reason)", form_class=ReasonForm)
    def checkpoint_sprints(sprint: Sprint, **kwargs: Any) -> Sprint:
        return sprint_checkpoint(sprint=sprint, **kwargs)

    @service_action(description="Resume selected sprints (decision)", form_class=DecisionForm)
    def resume_sprints(sprint: Sprint, **kwargs: Any) -> Sprint:
        return sprint_resume(sprint=sprint, **kwargs)

    @service_action(description="Abort selected sprints (reason)", form_class=ReasonForm)
    def abort_sprints(sprint: Sprint, **kwargs: Any) -> Sprint:
        return sprint_abort(sprint=sprint, **kwargs)

    actions = (checkpoint_sprints, resume_sprints, abort_sprints)


# ---------------------------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------------------------


class EventInline(admin.TabularInline):
    """The task's timeline (SPEC §4.1: task history is a view of the event log)."""

    model = Event
    fields = (
        "timestamp",
        "actor_kind",
        "actor_id",
        "action",
        "from_status",
        "to_status",
        "outcome",
        "detail",
    )
    readonly_fields = fields
    ordering = ("timestamp", "id")
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = "timeline"

    # View-only inline: Django never validates nor saves its forms, so no Event is written.
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReviewInline(EventInline):
    model = Review
    fields = (
        "reviewer",
        "review_commit",
        "claimed_at",
        "lease_expires",
        "verdict",
        "reason",
        "verdict_at",
        "closed_at",
    )
    readonly_fields = fields
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

    @admin.display(description="depends on")
    def dependencies(self, obj: Task) -> str:
        return ", ".join(obj.depends_on.values_list("key", flat=True)) or "—"

    @service_action(
        description="Override block selected tasks (reason, questions)",
        form_class=OverrideBlockForm,
    )
    def override_block(task: Task, **kwargs: Any) -> Task:
        # SPEC §5.1: a human admin may move any non-terminal task to BLOCKED.
        return task_override_block(task=task, **kwargs)

    @service_action(
        description="Release BLOCKED tasks to UNCLAIMED (reason)", form_class=ReasonForm
    )
    def release_blocked(task: Task, **kwargs: Any) -> Task:
        return task_release(task=task, **kwargs)

    @service_action(description="Abandon BLOCKED tasks (reason)", form_class=ReasonForm)
    def abandon_blocked(task: Task, **kwargs: Any) -> Task:
        return task_abandon(task=task, **kwargs)

    @service_action(description="Finalize DRAFT tasks to UNCLAIMED")
    def finalize_drafts(task: Task, **kwargs: Any) -> Task:
        return task_finalize(task=task, **kwargs)

    actions = (override_block, release_blocked, abandon_blocked, finalize_drafts)


@admin.register(Review)
class ReviewAdmin(ServiceManagedAdmin):
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

    @admin.display(description="task", ordering="task__key")
    def task_key(self, obj: Review) -> str:
        return obj.task.key


# ---------------------------------------------------------------------------------------------
# records of the blackboard
# ---------------------------------------------------------------------------------------------


class TaskKeyColumn:
    @admin.display(description="task", ordering="task__key")
    def task_key(self, obj: Any) -> str:
        return obj.task.key if obj.task_id else "—"


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

    @admin.display(description="description")
    def short_description(self, obj: Discovery) -> str:
        return excerpt(obj.description)


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

    def get_fields(self, request: HttpRequest, obj: Any = None):
        if obj is None:
            return ("project", "task", "message")
        return ("project", "task", "timestamp", "author", "message")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="message")
    def short_message(self, obj: HumanNote) -> str:
        return excerpt(obj.message)

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

    @admin.display(description="change")
    def short_change(self, obj: SpecChange) -> str:
        return excerpt(obj.change)


@admin.register(Anomaly)
class AnomalyAdmin(TaskKeyColumn, ServiceManagedAdmin):
    list_display = ("timestamp", "project", "type", "task_key", "reporter")
    list_filter = ("type", "project")
    search_fields = ("reporter", "task__key", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project", "task")


@admin.register(CircuitBreaker)
class CircuitBreakerAdmin(ServiceManagedAdmin):
    list_display = ("project", "status", "last_check")
    list_filter = ("status",)
    search_fields = ("project__slug",)
    list_select_related = ("project",)


@admin.register(CircuitBreakerCheck)
class CircuitBreakerCheckAdmin(ServiceManagedAdmin):
    list_display = ("timestamp", "project", "pattern", "result")
    list_filter = ("result", "pattern", "project")
    search_fields = ("pattern", "project__slug")
    date_hierarchy = "timestamp"
    list_select_related = ("project",)


@admin.register(Alert)
class AlertAdmin(TaskKeyColumn, ServiceManagedAdmin):
    list_display = (
        "created",
        "project",
        "type",
        "level",
        "task_key",
        "agent_id",
        "message",
        "resolved_at",
        "escalated_at",
    )
    list_filter = ("type", "level", ("resolved_at", admin.EmptyFieldListFilter), "project")
    search_fields = ("message", "agent_id", "task__key", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project", "task")


@admin.register(Event)
class EventAdmin(TaskKeyColumn, AppendOnlyAdmin):
    list_display = (
        "timestamp",
        "project",
        "task_key",
        "actor_kind",
        "actor_id",
        "action",
        "transition",
        "outcome",
        "detail",
    )
    # No filter on `action`: its open vocabulary would cost a DISTINCT over the whole log on
    # every page; search covers it.
    list_filter = ("actor_kind", "outcome", "project")
    search_fields = ("action", "actor_id", "task__key", "project__slug")
    date_hierarchy = "timestamp"
    ordering = ("-timestamp", "-id")
    list_select_related = ("project", "task")
    show_full_result_count = False

    @admin.display(description="from → to")
    def transition(self, obj: Event) -> str:
        if not (obj.from_status or obj.to_status):
            return ""
        return f"{obj.from_status or '∅'} → {obj.to_status or '∅'}"
