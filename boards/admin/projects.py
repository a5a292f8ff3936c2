"""The admin of projects, memberships, settings, goals and sprints."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from boards.admin.base import (
    ServiceManagedAdmin,
    excerpt_column,
    model_field_names,
    related_key,
    service_actions,
    task_keys,
)
from boards.coordination.models.projects import Goal, Membership, Project, ProjectConfig, Sprint
from boards.coordination.services.projects import (
    config_update,
    membership_remove,
    membership_set,
    project_create,
    project_rename,
)


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


@admin.register(Goal)
class GoalAdmin(ServiceManagedAdmin):
    list_display = ("goal_id", "project", "status", "created", "short_description")
    list_filter = ("status", "project")
    search_fields = ("goal_id", "description", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project",)
    short_description = excerpt_column("description")
    actions = service_actions(
        complete_goals=("goal_complete", "Complete selected goals"),
        abort_goals=("goal_abort", "Abort selected goals"),
    )


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
    goal_id = related_key("goal__goal_id", description="goal")
    planned_tasks = task_keys("planned", description="planned")
    stretch_tasks = task_keys("stretch", description="stretch")
    actions = service_actions(
        checkpoint_sprints=("sprint_checkpoint", "Checkpoint selected sprints"),
        resume_sprints=("sprint_resume", "Resume selected sprints"),
        abort_sprints=("sprint_abort", "Abort selected sprints"),
    )
