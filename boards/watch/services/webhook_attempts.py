"""What one webhook attempt leaves: its row, the delivery's next step (delivered, retried on
`BACKOFF`, given up) and, for the escalation webhook, its failing alert."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from boards.coordination import outbox
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert
from boards.protocol import redact_url, redact_urls
from boards.watch.models import WebhookAttempt, WebhookDelivery
from liza_site import metrics

# Seconds before the 2nd, 3rd, 4th and 5th attempt; a 5th failure gives the delivery up.
BACKOFF = (10, 60, 300, 1800)


FAILING_AFTER = 3  # failed attempts in a row (the project's) that raise WEBHOOK_FAILING


@dataclass
class Sent:
    """What one attempt did (the watcher logs it)."""

    delivery: int
    project: str
    outcome: str  # delivered | failed | refused; `gave_up` when it was the last one
    status_code: int | None
    error: str
    duration_ms: int
    gave_up: bool = False

    def line(self) -> str:
        what = f"HTTP {self.status_code}" if self.status_code is not None else self.error
        what = what or "sent"  # an e-mail has no status code
        end = ", given up" if self.gave_up else ""
        return (
            f"{self.project}: webhook delivery {self.delivery} {self.outcome} "
            f"({what}, {self.duration_ms} ms){end}"
        )


def record_attempt(delivery, config, now, outcome, status_code, error, duration_ms) -> Sent:
    error = redact_urls(error)  # logged, alerted, listed: never a token in a URL
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update()
            .select_related("project")
            .get(pk=delivery.pk)
        )
        project = delivery.project
        escalation = delivery.channel == WebhookDelivery.Channel.ESCALATION
        if delivery.channel == WebhookDelivery.Channel.EMAIL:
            where = "mailto:" + delivery.target
        else:
            where = redact_url(config.escalation_webhook if escalation else delivery.target)
        WebhookAttempt.objects.create(
            delivery=delivery,
            at=now,
            url=where[:200],
            status_code=status_code,
            error=error[:500],
            duration_ms=duration_ms,
        )
        delivery.attempts += 1
        delivery.claimed_until = None
        gave_up = False
        if outcome == "delivered":
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at = now
            delivery.next_attempt_at = None
        elif delivery.attempts > len(BACKOFF):
            delivery.status = WebhookDelivery.Status.GAVE_UP
            delivery.next_attempt_at = None
            gave_up = True
        else:
            delivery.next_attempt_at = now + timedelta(seconds=BACKOFF[delivery.attempts - 1])
        delivery.save(
            update_fields=["attempts", "claimed_until", "status", "delivered_at", "next_attempt_at"]
        )
        # A person's channel failing is theirs, not the project's escalation webhook failing
        # (its attempts are in the Django admin's deliveries).
        if escalation:
            _sync_failing_alert(project, now, delivered=outcome == "delivered", error=error)
        transaction.on_commit(lambda: _count(outcome, gave_up))
    return Sent(
        delivery.pk, project.slug, outcome, status_code, error, duration_ms, gave_up=gave_up
    )


def _count(outcome: str, gave_up: bool) -> None:
    metrics.WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()
    if gave_up:
        metrics.WEBHOOK_DELIVERIES.labels(outcome="gave_up").inc()


def _sync_failing_alert(project: Project, now: datetime, *, delivered: bool, error: str) -> None:
    """WEBHOOK_FAILING: raised once the project's last `FAILING_AFTER` attempts all failed,
    counted while they go on failing, resolved by the next delivered message."""
    open_alert = (
        Alert.objects.select_for_update()
        .filter(project=project, type=Alert.Type.WEBHOOK_FAILING, resolved_at__isnull=True)
        .first()
    )
    if delivered:
        if open_alert is not None:
            open_alert.resolved_at = now
            open_alert.save(update_fields=["resolved_at"])
            outbox.changed(project.pk, outbox.SPRINT, project.pk)
        return
    message = f"WEBHOOK FAILING: last {FAILING_AFTER} attempts failed, latest: {error}"[:500]
    if open_alert is not None:
        open_alert.count += 1
        open_alert.last_seen = now
        open_alert.message = message
        open_alert.save(update_fields=["count", "last_seen", "message"])
        return
    last = list(
        WebhookAttempt.objects.filter(
            delivery__project=project, delivery__channel=WebhookDelivery.Channel.ESCALATION
        )
        .order_by("-at", "-id")
        .values_list("status_code", flat=True)[:FAILING_AFTER]
    )
    if len(last) == FAILING_AFTER and not any(
        code is not None and 200 <= code < 300 for code in last
    ):
        Alert.objects.create(
            project=project,
            type=Alert.Type.WEBHOOK_FAILING,
            subject=project.slug,
            level=Alert.Level.WARNING,
            message=message,
            created=now,
            last_seen=now,
        )
        outbox.changed(project.pk, outbox.SPRINT, project.pk)
