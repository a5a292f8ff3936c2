"""The admin of the outbox: the escalation webhook's and notifications' deliveries and attempts,
people's notification preferences and notifications (read-only)."""

from __future__ import annotations

from django.contrib import admin

from boards.admin.base import AppendOnlyAdmin, ViewOnlyInline
from boards.watch.models import (
    Notification,
    NotificationPreference,
    WebhookAttempt,
    WebhookDelivery,
)


class WebhookAttemptInline(ViewOnlyInline):
    model = WebhookAttempt
    fields = ("at", "url", "status_code", "error", "duration_ms")
    ordering = ("-at", "-id")
    show_change_link = False


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(AppendOnlyAdmin):
    list_display = ("at", "delivery", "url", "status_code", "error", "duration_ms")
    list_filter = ("status_code",)
    search_fields = ("delivery__project__slug", "url", "error")
    date_hierarchy = "at"
    list_select_related = ("delivery",)


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
