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

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.text import Truncator

from boards.errors import ProtocolValidationError, as_protocol_error
from boards.models import (
    Alert,
    Anomaly,
    ChangeSummary,
    CircuitBreaker,
    CircuitBreakerCheck,
    Discovery,
    Event,
    Goal,
    Handoff,
    HumanNote,
    Membership,
    Notification,
    NotificationPreference,
    Project,
    ProjectConfig,
    Review,
    SpecChange,
    Sprint,
    Task,
    WebhookAttempt,
    WebhookDelivery,
)
from boards.operations import Operation, operation
from boards.services.projects import (
    config_update,
    membership_remove,
    membership_set,
    project_create,
    project_rename,
)
from boards.services.records import human_note_create
from liza_site.security import AdminLoginForm

admin.site.site_header = "Liza Board administration"
admin.site.site_title = "Liza Board admin"
admin.site.index_title = "Projects, boards and agents"
admin.site.login_form = AdminLoginForm  # length limits before authenticate() (no 500)


def error_text(exc: Exception) -> str | None:
    """The one message of a refusal (boards.errors); None for a real bug, which must surface."""
    error = as_protocol_error(exc)
    return error.message if error is not None else None


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
        """An edit goes through the model's service (`edit`), which checks, saves and audits;
        the form never writes the row itself."""
        changed = {
            name: form.cleaned_data[name]
            for name in form.changed_data
            if name in self.editable_fields
        }
        if not (change and changed):
            return
        try:
            self.edit(request, type(obj).objects.get(pk=obj.pk), changed)
        except Exception as exc:
            message = error_text(exc)
            if message is None:
                raise
            request._liza_refused = True  # type: ignore[attr-defined]
            self.message_user(request, f"{obj}: not saved: {message}", messages.ERROR)

    def edit(self, request: HttpRequest, obj: Any, changes: dict[str, Any]) -> None:
        """Run the service that edits `changes` (field → new value) on `obj`."""
        raise ImproperlyConfigured(f"{type(self).__name__} edits need a service")

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs) -> None:
        # After a refused edit, Django's own "changed successfully" would be a lie.
        if getattr(request, "_liza_refused", False) and level == messages.SUCCESS:
            return
        super().message_user(request, message, level, *args, **kwargs)


# ---------------------------------------------------------------------------------------------
# actions that run a service on each selected row
# ---------------------------------------------------------------------------------------------


def input_form(op: Operation) -> type[forms.Form] | None:
    """The intermediate page's form of an operation: one field per input field, no rules of its
    own — the operation's input validates what it sends (one definition, boards.operations)."""
    if op.input is None:
        return None
    fields: dict[str, forms.Field] = {}
    for name, field in op.input().fields.items():
        multiple = hasattr(field, "child")
        fields[name] = forms.CharField(
            required=field.required and not multiple,
            widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
            help_text=("one per line" if multiple else "") or (field.help_text or ""),
        )
        fields[name].multiple = multiple  # type: ignore[attr-defined]
    return type(f"{op.name}_form", (forms.Form,), fields)


def _input_data(form: forms.Form) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name, "")
        if getattr(field, "multiple", False):
            lines = [line.strip() for line in value.splitlines() if line.strip()]
            if lines:
                data[name] = lines
        elif value != "":
            data[name] = value
    return data


def service_action(
    name: str, *, action: str, description: str, permission: str = "transition"
) -> Callable[..., Any]:
    """An admin action running the declared operation `name` on each selected row.

    An operation with an input first shows an intermediate page listing the selection and
    asking for it (reason, decision…); the confirmed POST carries `apply=1` and the form. Each
    row gets its own success or error message: one refusal does not stop the others.
    """
    op = operation(name)
    form_class = input_form(op)

    @admin.action(description=description, permissions=[permission])
    def run(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet):
        data: dict[str, Any] = {}
        if form_class is not None:
            if not request.POST.get("apply"):
                return _action_page(modeladmin, request, queryset, run, form_class())
            form = form_class(request.POST)
            if not form.is_valid():
                return _action_page(modeladmin, request, queryset, run, form)
            data = _input_data(form)
            try:
                data = op.validate(data)
            except ProtocolValidationError as exc:
                # The operation's own rules (the same as the API's), shown on the form.
                for field, problems in exc.details["fields"].items():
                    form.add_error(field if field in form.fields else None, problems)
                return _action_page(modeladmin, request, queryset, run, form)
        _apply_each(modeladmin, request, queryset, op, data)
        return None

    run.__name__ = action  # the name the changelist posts
    return run


def _apply_each(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: Iterable[Any],
    op: Operation,
    data: dict[str, Any],
) -> None:
    for obj in queryset:
        before = getattr(obj, "status", "")
        try:
            after = op.run(target=obj, actor=request.user, now=timezone.now(), data=data)
        except Exception as exc:
            message = error_text(exc)
            if message is None:
                raise
            modeladmin.message_user(request, f"{obj}: {message}", messages.ERROR)
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
            if "name" in form.changed_data:
                project_rename(project=obj, actor=request.user, name=obj.name, now=timezone.now())
            return
        # A new tenant comes with its default config and circuit breaker (the service).
        created = project_create(slug=obj.slug, name=obj.name, now=timezone.now())
        obj.pk, obj.created = created.pk, created.created
        obj._state.adding = False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    # Access control, not protocol state: editable, saved (and audited) by the service.
    list_display = ("user", "project", "role", "can_plan")
    list_filter = ("role", "project")
    search_fields = ("user__username", "user__email", "project__slug")
    autocomplete_fields = ("project", "user")
    list_select_related = ("user", "project")

    def save_model(self, request: HttpRequest, obj: Membership, form, change: bool) -> None:
        saved = membership_set(
            project=obj.project,
            user=obj.user,
            role=obj.role,
            actor=request.user,
            now=timezone.now(),
            # The right means something only for a member (a viewer reads, an admin plans).
            can_plan=obj.can_plan and obj.role == Membership.Role.MEMBER,
        )
        obj.pk = saved.pk
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        membership_remove(membership=obj, actor=request.user, now=timezone.now())

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for membership in queryset:
            self.delete_model(request, membership)


SECRETS = ("webhook_secret",)


@admin.register(ProjectConfig)
class ProjectConfigAdmin(ServiceManagedAdmin):
    # Seed 002 `config`: pure configuration read by the services at each operation. Editable,
    # validated by the model's clean() (the ModelForm runs full_clean), and audited.
    editable_fields = tuple(
        name for name in model_field_names(ProjectConfig) if name not in ("project", *SECRETS)
    )
    # The webhook's secret is write-only (set on the settings page or the API): the admin
    # shows whether it is set, never the value.
    exclude = SECRETS
    readonly_fields = ("webhook_secret_state",)
    fields = ("project", *editable_fields, "webhook_secret_state")
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

    @admin.display(description="webhook secret")
    def webhook_secret_state(self, obj: ProjectConfig) -> str:
        return "set" if obj.webhook_secret else "not set"

    def edit(self, request, obj: ProjectConfig, changes) -> None:
        if changes.get("escalation_webhook") == "":
            changes["escalation_webhook"] = None
        config_update(project=obj.project, actor=request.user, now=timezone.now(), **changes)


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

    complete_goals = service_action(
        "goal_complete", action="complete_goals", description="Complete selected goals"
    )
    abort_goals = service_action(
        "goal_abort", action="abort_goals", description="Abort selected goals"
    )
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

    checkpoint_sprints = service_action(
        "sprint_checkpoint", action="checkpoint_sprints", description="Checkpoint selected sprints"
    )
    resume_sprints = service_action(
        "sprint_resume", action="resume_sprints", description="Resume selected sprints"
    )
    abort_sprints = service_action(
        "sprint_abort", action="abort_sprints", description="Abort selected sprints"
    )
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

    # SPEC §5.1: a human admin may move any non-terminal task to BLOCKED.
    override_block = service_action(
        "task_override_block", action="override_block", description="Override block selected tasks"
    )
    release_blocked = service_action(
        "task_release", action="release_blocked", description="Release BLOCKED tasks to UNCLAIMED"
    )
    abandon_blocked = service_action(
        "task_abandon", action="abandon_blocked", description="Abandon BLOCKED tasks"
    )
    finalize_drafts = service_action(
        "task_finalize", action="finalize_drafts", description="Finalize DRAFT tasks to UNCLAIMED"
    )
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

    resolve_breakers = service_action(
        "circuit_breaker_resolve",
        action="resolve_breakers",
        description="Resolve selected circuit breakers (with a reason)",
    )
    actions = (resolve_breakers,)


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


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ("at", "url", "status_code", "error", "duration_ms")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-at", "-id")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(AppendOnlyAdmin):
    list_display = ("at", "delivery", "url", "status_code", "error", "duration_ms")
    list_filter = ("status_code",)
    search_fields = ("delivery__project__slug", "url", "error")
    date_hierarchy = "at"
    list_select_related = ("delivery",)


@admin.register(ChangeSummary)
class ChangeSummaryAdmin(AppendOnlyAdmin):
    """What a submission changed, as the coder's client uploaded it (boards.services.tasks)."""

    list_display = ("created", "project", "task", "review_commit", "iteration", "truncated")
    list_filter = ("project", "truncated")
    search_fields = ("project__slug", "task__key", "review_commit")
    date_hierarchy = "created"
    list_select_related = ("project", "task")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(AppendOnlyAdmin):
    """The escalation webhook's delivery log: written by the watcher's sender only."""

    list_display = (
        "created",
        "project",
        "channel",
        "kind",
        "recipient",
        "status",
        "attempts",
        "delivered_at",
    )
    list_filter = ("status", "channel", "kind", "project")
    search_fields = ("project__slug", "body")
    date_hierarchy = "created"
    list_select_related = ("project", "recipient")
    fields = (
        "project",
        "alert",
        "channel",
        "recipient",
        "kind",
        "status",
        "created",
        "attempts",
        "next_attempt_at",
        "delivered_at",
        "body",
    )
    readonly_fields = fields
    inlines = (WebhookAttemptInline,)


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(AppendOnlyAdmin):
    """Read-only here: a person edits their own on the settings page (a project admin sets the
    chat webhook), through `notifications_set`, which checks the address."""

    list_display = ("project", "user", "events", "email", "chat_format", "digest_minutes")
    list_filter = ("project", "email", "chat_format")
    search_fields = ("project__slug", "user__username")
    list_select_related = ("project", "user")
    exclude = ("chat_url",)  # an incoming webhook's URL is its secret


@admin.register(Notification)
class NotificationAdmin(AppendOnlyAdmin):
    """What people were told (or will be, in their next digest): written by the watcher."""

    list_display = ("created", "project", "user", "event", "text", "sent_at")
    list_filter = ("project", "event")
    search_fields = ("project__slug", "user__username", "text")
    date_hierarchy = "created"
    list_select_related = ("project", "user")


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
