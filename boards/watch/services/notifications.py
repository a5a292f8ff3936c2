"""Notifications people actually get (issue 24): the alerts a person asked for, by e-mail and
to a Slack or Discord incoming webhook, one message per sweep or one digest per N minutes.

- `notify_alert` runs where every alert is raised (`services.watch._sync_alerts`, in the
  sweep's transaction): the alert's event (`event_of`) becomes one `Notification` row per
  member who asked for it.
- `notifications_flush` (same sweep, after) turns each person's waiting notifications into
  one message when it is due — at once without a digest, else once the oldest has waited
  `digest_minutes` — written as `WebhookDelivery` rows (one per channel) of the escalation
  webhook's outbox: the same sender, transport, retries, address checks and breakers send
  them after the sweep commits (`services.webhooks`). A night of failures is one message.
- `notifications_set`: a person's own choices; a chat webhook URL only by a project admin,
  a public address checked when saved and again at each send (`check_webhook_url`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from boards import protocol as p
from boards.coordination.models.projects import Membership, Project
from boards.coordination.models.records import Alert
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, VIEWER, people, require_role
from boards.coordination.services.cleaning import require_known_names
from boards.coordination.services.webhook_address import check_webhook_url
from boards.errors import NotFound, ProtocolValidationError
from boards.protocol import Action, NotifyEvent
from boards.watch.models import Notification, NotificationPreference, WebhookDelivery
from boards.watch.services.webhooks import inbox_link

# The alert types that say each event; any CRITICAL alert is also `critical`. "budget" is the
# budget alert's type once budgets raise one (issue 24, item 3): nothing else to wire.
ALERT_EVENTS: dict[str, NotifyEvent] = {
    Alert.Type.BLOCKED: NotifyEvent.BLOCKED,
    Alert.Type.AWAITING_APPROVAL: NotifyEvent.APPROVAL,
    "budget": NotifyEvent.BUDGET,
    Alert.Type.RUN_STALLED: NotifyEvent.STALL,
    Alert.Type.QUOTA: NotifyEvent.QUOTA,
}
DISCORD_MAX = 2000  # Discord refuses a longer `content`
DIGEST_LINES = 50  # a digest lists this many events, then counts the rest
SETTINGS = ("events", "email", "digest_minutes", "chat_url", "chat_format")
ADMIN_SETTINGS = ("chat_url", "chat_format")  # the chat webhook: a project admin's to set
KEEP_SENT = timedelta(days=30)  # a sent notification's row, then deleted (its delivery stays)


def event_of(alert: Alert) -> NotifyEvent | None:
    """The event a newly raised alert is, for people's preferences (None: nobody asks)."""
    if alert.type in ALERT_EVENTS:
        return ALERT_EVENTS[alert.type]
    if alert.level == Alert.Level.CRITICAL:
        return NotifyEvent.CRITICAL
    return None


def _text(alert: Alert) -> str:
    """One line per event; a blocked task's questions are what the human is asked."""
    text = alert.message
    if alert.type == Alert.Type.BLOCKED and alert.task_id is not None:
        questions = [q for q in alert.task.blocked_questions or [] if q]
        if questions:
            text += " — asks: " + " / ".join(str(q) for q in questions)
    return text[:1000]


def notify_alert(*, project: Project, alert: Alert, now: datetime) -> list[Notification]:
    """A `Notification` of the raised `alert` for each member of `project` who asked for its
    event (in the caller's transaction; the sweep's)."""
    event = event_of(alert)
    if event is None:
        return []
    members = Membership.objects.filter(project=project).values("user_id")
    wanting = NotificationPreference.objects.filter(
        project=project, user_id__in=members, events__contains=[str(event)]
    ).exclude(email=False, chat_url="")
    text = _text(alert)
    return Notification.objects.bulk_create(
        Notification(
            project=project, user_id=pref.user_id, event=event, alert=alert, text=text, created=now
        )
        for pref in wanting
    )


def _message(project: Project, items: list[Notification]) -> tuple[str, str]:
    """(subject, text) of one message about `items`."""
    name = project.name or project.slug
    link = inbox_link(project)
    if len(items) == 1:
        subject = f"[Liza {project.slug}] {items[0].text}"[:150]
        lines = [f"Liza Board · {name}: {items[0].text}"]
    else:
        subject = f"[Liza {project.slug}] {len(items)} events"
        lines = [f"Liza Board · {name}: {len(items)} events"]
        lines += [f"• {item.text}" for item in items[:DIGEST_LINES]]
        if len(items) > DIGEST_LINES:
            lines.append(f"… and {len(items) - DIGEST_LINES} more")
    if link:
        lines.append(link)
    # A header holds no line break (Django refuses it): a blocked reason may have several.
    return " ".join(subject.split()), "\n".join(lines)


def _chat_body(chat_format: str, text: str) -> str:
    """Slack's incoming webhook takes `{"text": …}`, Discord's `{"content": …}` (≤ 2000)."""
    if chat_format == NotificationPreference.ChatFormat.DISCORD:
        if len(text) > DISCORD_MAX:
            text = text[: DISCORD_MAX - 1] + "…"
        return json.dumps({"content": text})
    return json.dumps({"text": text})


def notifications_flush(*, project: Project, now: datetime) -> list[WebhookDelivery]:
    """Each person's waiting notifications that are due, as one message per channel (an outbox
    row each, sent after the caller's transaction commits). A person no longer asking for
    messages (preferences or membership gone) has theirs dropped, marked sent with none. Rows
    sent more than `KEEP_SENT` ago are deleted: months of running do not pile them up."""
    Notification.objects.filter(project=project, sent_at__lt=now - KEEP_SENT).delete()
    waiting = list(
        Notification.objects.filter(project=project, sent_at__isnull=True)
        .select_related("user")
        .order_by("created", "id")
    )
    if not waiting:
        return []
    by_user: dict[int, list[Notification]] = {}
    for item in waiting:
        by_user.setdefault(item.user_id, []).append(item)
    members = set(
        Membership.objects.filter(project=project, user_id__in=by_user).values_list(
            "user_id", flat=True
        )
    )
    prefs = {
        pref.user_id: pref
        for pref in NotificationPreference.objects.filter(project=project, user_id__in=by_user)
    }
    deliveries, done = [], []
    for user_id, items in by_user.items():
        pref = prefs.get(user_id) if user_id in members else None
        gathering = pref is not None and pref.digest_minutes
        if gathering and items[0].created > now - timedelta(minutes=pref.digest_minutes):
            continue  # the digest is still gathering
        done += [item.pk for item in items]
        if pref is None:
            continue
        subject, text = _message(project, items)
        kind = "digest" if pref.digest_minutes else "notification"
        user = items[0].user
        if pref.email and user.email:
            body = json.dumps({"subject": subject, "text": text, "to": user.email})
            deliveries.append((WebhookDelivery.Channel.EMAIL, user, user.email, body, kind))
        if pref.chat_url:
            body = _chat_body(pref.chat_format, text)
            deliveries.append((pref.chat_format, user, pref.chat_url, body, kind))
    Notification.objects.filter(pk__in=done).update(sent_at=now)
    return WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            project=project,
            channel=channel,
            recipient=user,
            target=target,
            body=body,
            kind=kind,
            created=now,
            next_attempt_at=now,
        )
        for channel, user, target, body, kind in deliveries
    )


# -- a person's choices ------------------------------------------------------------------------


def _person(project: Project, username: str):
    """A member of `project` by username; anyone else is the same 404."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not Membership.objects.filter(project=project, user=user).exists():
        raise NotFound()
    return user


@people(VIEWER)
@records_refusals
def notifications_set(
    *, project: Project, actor: Actor, now: datetime, user: str = "", **fields: Any
) -> NotificationPreference:
    """Set what a member hears of `project` and where: their own events, e-mail and digest
    (any member); another member's, or a chat webhook URL, only as a project admin. The URL
    must be a public address (SSRF), as the escalation webhook's."""
    attempt = Attempt(project, actor, "notifications_set", now)
    require_role(attempt, agent_roles=())
    require_known_names(fields, SETTINGS, what="setting")
    person = actor if not user or user == actor.get_username() else _person(project, user)
    if person != actor or any(name in fields for name in ADMIN_SETTINGS):
        require_role(attempt, agent_roles=(), human=ADMIN)
    if "events" in fields:
        wrong = sorted(set(fields["events"]) - {str(e) for e in NotifyEvent})
        if wrong:
            raise ProtocolValidationError(
                "events", f"unknown event {wrong[0]}; one of {', '.join(NotifyEvent)}"
            )
        fields["events"] = [str(e) for e in NotifyEvent if e in fields["events"]]
    with transaction.atomic():
        pref, _ = NotificationPreference.objects.select_for_update().get_or_create(
            project=project, user=person
        )
        old = {name: getattr(pref, name) for name in fields}
        for name, value in fields.items():
            setattr(pref, name, value)
        if fields.get("chat_url") and fields["chat_url"] != old["chat_url"]:
            # A public address (SSRF), as the sender checks again at each send.
            check_webhook_url(pref.chat_url, field="chat_url")
        pref.updated = now
        pref.save()
        changes = {
            name: {"old": old[name], "new": getattr(pref, name)}
            for name in fields
            if old[name] != getattr(pref, name)
        }
        if "chat_url" in changes:  # an incoming webhook's URL is its secret
            changes["chat_url"] = {k: p.redact_url(v) for k, v in changes["chat_url"].items()}
        if changes:
            attempt.record(
                action=Action.NOTIFICATIONS_SET,
                detail=f"notifications of {person.get_username()}: {', '.join(changes)} changed",
                data={"user": person.get_username(), "changes": changes},
            )
    return pref
