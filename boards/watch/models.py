"""The escalation webhook's outbox (a delivery per alert step) and its attempts, written by the
watcher's sender (`boards.watch.services.webhooks`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from boards.coordination.models.projects import Project, ProjectScopedModel, unique_in_project
from boards.coordination.models.records import Alert


class WebhookDelivery(ProjectScopedModel):
    """One message for the project's escalation webhook (an outbox row): written in the
    sweep's transaction, sent by a watcher after it commits, retried with backoff."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        GAVE_UP = "gave_up"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    alert = models.ForeignKey(
        Alert, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )

    class Channel(models.TextChoices):
        ESCALATION = "escalation"  # the project's signed escalation webhook
        EMAIL = "email"  # a person's notifications (issue 24), through Django's e-mail
        SLACK = "slack"  # ... or to a Slack or Discord incoming webhook
        DISCORD = "discord"

    kind = models.CharField(
        max_length=32, help_text="alert.raised, alert.escalated, notification or digest"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.ESCALATION)
    # A notification's person and address (an e-mail address or a chat webhook URL); the
    # escalation webhook's address is the project's setting, read at each send.
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    target = models.CharField(max_length=500, blank=True)
    # The exact JSON body, signed and sent as is on every attempt (the receiver dedupes on
    # its `delivery` id).
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created = models.DateTimeField()
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A sender's claim: while it runs no other watcher takes the row (crash: it expires).
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_due")]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.kind}, {self.status})"


class WebhookAttempt(models.Model):
    """One try at sending a delivery: the delivery log shown to project admins."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    at = models.DateTimeField()
    url = models.CharField(max_length=200, blank=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"attempt {self.pk} of delivery {self.delivery_id}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class NotificationPreference(ProjectScopedModel):
    """Issue 24: what one person hears of one project, and where: `events` (protocol.NotifyEvent
    values), e-mail to their address, a chat incoming webhook (Slack's or Discord's format; its
    URL set by a project admin), and how often (`digest_minutes`: 0 at once, else one message
    gathering everything of that many minutes)."""

    class ChatFormat(models.TextChoices):
        SLACK = "slack"
        DISCORD = "discord"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="liza_notifications"
    )
    events = models.JSONField(default=list, blank=True)
    email = models.BooleanField(default=False)
    chat_url = models.URLField(max_length=500, blank=True)
    chat_format = models.CharField(
        max_length=10, choices=ChatFormat.choices, default=ChatFormat.SLACK
    )
    digest_minutes = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [unique_in_project("user", name="notification_pref_unique")]

    def __str__(self) -> str:
        return f"notifications of {self.user} @ {self.project}"


class Notification(ProjectScopedModel):
    """One event for one person: waiting for its message (a digest gathers several), then
    sent in the `WebhookDelivery` rows of that message (one per channel)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="notifications")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)
    alert = models.ForeignKey(
        Alert, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    text = models.CharField(max_length=1000)
    created = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["project", "sent_at"], name="notification_pending")]

    def __str__(self) -> str:
        return f"{self.event} for {self.user}: {self.text[:40]}"
