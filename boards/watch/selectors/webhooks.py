"""The escalation webhook's delivery log (issue #11), for project admins."""

from __future__ import annotations

from django.db.models import Prefetch

from boards.coordination.models.projects import Project
from boards.watch.models import WebhookAttempt, WebhookDelivery

LOG_LENGTH = 100


def delivery_log(*, project: Project, limit: int = LOG_LENGTH) -> list[WebhookDelivery]:
    """The project's latest escalation deliveries, newest first, each with its attempts (newest
    first). People's notifications ride the same table (issue 24) but are theirs, not this
    log's: their addresses are not the project's to list."""
    return list(
        WebhookDelivery.objects.filter(project=project, channel=WebhookDelivery.Channel.ESCALATION)
        .select_related("alert")
        .prefetch_related(
            Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("-at", "-id"))
        )
        .order_by("-created", "-id")[:limit]
    )
