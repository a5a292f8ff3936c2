"""The admin of the circuit breaker, alerts and the event log (read-only)."""

from __future__ import annotations

from django.contrib import admin

from boards.admin.base import AppendOnlyAdmin, ServiceManagedAdmin, TaskKeyColumn, service_actions
from boards.coordination.models.records import (
    Alert,
    CircuitBreaker,
    CircuitBreakerCheck,
    Event,
)


@admin.register(CircuitBreaker)
class CircuitBreakerAdmin(ServiceManagedAdmin):
    list_display = ("project", "status", "last_check")
    list_filter = ("status",)
    search_fields = ("project__slug",)
    list_select_related = ("project",)

    actions = service_actions(
        resolve_breakers=(
            "circuit_breaker_resolve",
            "Resolve selected circuit breakers (with a reason)",
        ),
    )


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
