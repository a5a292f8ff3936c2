"""The escalation webhook (issue #11): critical alerts and stale-checkpoint escalations sent to
a project's URL as signed JSON, never inside a transition. The same outbox and sender carry
people's notifications (issue 24, `services.notifications`): e-mails and Slack/Discord messages.

- `webhook_enqueue` writes a `WebhookDelivery` row (an outbox) in the sweep's transaction: the
  sweep does no network I/O, so a slow or dead receiver cannot hold its locks.
- `WebhookSender.round`, run by the watcher's delivery thread after its sweeps have committed
  (`webhook_deliver_due` for one round that waits), claims due rows (`SELECT … FOR UPDATE SKIP
  LOCKED`, then a short claim lease written in that transaction, so a second watcher neither
  waits on them nor sends them), at most one per lane (the project's escalation webhook, or
  one person's channel) and `PER_DESTINATION` per
  destination, sends them on a pool outside any transaction, each attempt bounded as a whole
  by LIZA_WEBHOOK_TIMEOUT with its answer read up to `ANSWER_CAP_BYTES`
  (boards.watch.services.webhook_transport), and records each attempt: delivered, or retried after
  `BACKOFF` and given up after its last step. A destination's circuit breaker stops attempts
  to a receiver that keeps failing, for every project that uses it (issue #27).
- `FAILING_AFTER` failed attempts in a row raise the project's WEBHOOK_FAILING alert (one open
  at a time); the next delivered message resolves it.

The target must be a public address (`check_webhook_url`): checked when the URL is saved and
again at each send, where the connection goes to the very address that was checked (a name
that re-resolves to 127.0.0.1 after the save — DNS rebinding — is refused, not followed).
`LIZA_WEBHOOK_ALLOW_PRIVATE` lifts the rule for deployments (and tests) whose receivers are
on a private network.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.urls import reverse

from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Alert
from boards.coordination.services.webhook_address import WebhookRefused, resolve_webhook_url
from boards.protocol import format_timestamp
from boards.watch.models import WebhookDelivery
from boards.watch.services.webhook_attempts import Sent, record_attempt
from boards.watch.services.webhook_transport import AttemptTimedOut, Breaker, destination, post

CLAIM_BATCH = 20


# The sender (issue #27; docs/security.md): each attempt ends within LIZA_WEBHOOK_TIMEOUT, its
# answer is read up to ANSWER_CAP_BYTES, a pool of SENDER_WORKERS threads sends, at most one
# attempt per project and PER_DESTINATION per destination at once, and a destination that
# failed BREAKER_THRESHOLD times in a row is left alone for BREAKER_COOL_OFF.
ANSWER_CAP_BYTES = 64 * 1024


MAIL_DESTINATION = "mail:"  # e-mails share one breaker: the deployment's mail server


SENDER_WORKERS = 8


PER_DESTINATION = 2


BREAKER_THRESHOLD = 5


BREAKER_COOL_OFF = timedelta(seconds=60)


SIGNATURE_HEADER = "X-Liza-Signature"


TIMESTAMP_HEADER = "X-Liza-Timestamp"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=<hex>` of HMAC-SHA256(secret, "<timestamp>." + body): the timestamp is signed
    too, so a receiver that refuses old timestamps cannot be sent a recorded message again."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def inbox_link(project: Project) -> str:
    path = reverse("inbox", args=[project.slug])
    return settings.LIZA_PUBLIC_URL.rstrip("/") + path


def webhook_enqueue(*, project: Project, config: ProjectConfig, alert: Alert, kind: str, now):
    """A delivery of `alert` (its state now) in the caller's transaction; none without a URL."""
    if not config.escalation_webhook:
        return None
    delivery = WebhookDelivery.objects.create(
        project=project, alert=alert, kind=kind, body="", created=now, next_attempt_at=now
    )
    payload = {
        "delivery": delivery.pk,
        "event": kind,
        "project": project.slug,
        "alert": {
            "id": alert.pk,
            "type": alert.type,
            "level": alert.level,
            "subject": alert.subject,
            "message": alert.message,
            "task": alert.task.key if alert.task_id else None,
            "agent": alert.agent_id or None,
            "first_seen": format_timestamp(alert.created),
            "last_seen": format_timestamp(alert.last_seen or alert.created),
            "count": alert.count,
        },
        "link": inbox_link(project),
    }
    delivery.body = json.dumps(payload, sort_keys=True)
    delivery.save(update_fields=["body"])
    return delivery


def _destination_of(delivery: WebhookDelivery) -> str:
    if delivery.channel == WebhookDelivery.Channel.EMAIL:
        return MAIL_DESTINATION
    if delivery.channel != WebhookDelivery.Channel.ESCALATION:
        return destination(delivery.target)  # a person's chat webhook (issue 24)
    config = getattr(delivery.project, "config", None)
    return destination(config.escalation_webhook if config else "")


def _lane(delivery: WebhookDelivery) -> tuple:
    """What goes one message at a time, in order: the project's escalation webhook, or one
    person's channel (their notifications, issue 24) — a person's dead chat webhook never
    holds the project's escalations back."""
    return (delivery.project_id, delivery.channel, delivery.recipient_id)


def _claim(now: datetime, slugs, limit: int, admit) -> list[WebhookDelivery]:
    """Claim up to `limit` due deliveries, at most one per lane (`_lane`: a lane's deliveries
    go one at a time, in order), none of a lane whose delivery is already under way (here or
    in another watcher); `admit(delivery, destination)` says whether its destination takes one
    now, or when to come back (a datetime: the row waits until then, no attempt made)."""
    lease = timedelta(seconds=settings.LIZA_WEBHOOK_TIMEOUT * 2 + 30)
    with transaction.atomic():
        held = set(
            WebhookDelivery.objects.filter(
                status=WebhookDelivery.Status.PENDING, claimed_until__gte=now
            ).values_list("project_id", "channel", "recipient_id")
        )
        due = WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
        ).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        if slugs:
            due = due.filter(project__slug__in=slugs)
        candidates = list(
            due.select_related("project__config")
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("next_attempt_at", "id")[: limit * 5]
        )
        rows, lanes = [], set(held)
        for row in candidates:
            if _lane(row) in lanes or len(rows) >= limit:
                continue
            lanes.add(_lane(row))
            verdict = admit(row, _destination_of(row))
            if verdict is True:
                rows.append(row)
            elif isinstance(verdict, datetime):  # its destination's breaker is open
                WebhookDelivery.objects.filter(pk=row.pk).update(next_attempt_at=verdict)
        WebhookDelivery.objects.filter(pk__in=[r.pk for r in rows]).update(
            claimed_until=now + lease
        )
    return rows


def _post(url: str, addresses: list[str], headers: dict[str, str], body: bytes) -> int:
    """The status code of one POST under the attempt's deadline and answer cap."""
    answer = post(
        url,
        addresses,
        headers,
        body,
        timeout=settings.LIZA_WEBHOOK_TIMEOUT,
        cap=ANSWER_CAP_BYTES,
    )
    return answer.status


@dataclass(frozen=True)
class _Request:
    url: str
    addresses: list[str]
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class _Mail:
    subject: str
    text: str
    to: str


def _prepare_notification(delivery: WebhookDelivery):
    """A person's message (issue 24): an e-mail, or a POST of the chat's own JSON to its
    incoming webhook (unsigned: Slack and Discord check nothing but the URL), after the same
    address check as the escalation webhook's."""
    if delivery.channel == WebhookDelivery.Channel.EMAIL:
        message = json.loads(delivery.body)
        return _Mail(message["subject"], message["text"], delivery.target)
    try:
        addresses = resolve_webhook_url(delivery.target)
    except WebhookRefused as exc:
        return "refused", None, str(exc)
    headers = {"Content-Type": "application/json", "User-Agent": "liza-board-webhook/1"}
    return _Request(delivery.target, addresses, headers, delivery.body.encode())


def _prepare(delivery: WebhookDelivery, config: ProjectConfig, now: datetime):
    """The signed request of one attempt, or (outcome, status_code, error) without one."""
    if delivery.channel != WebhookDelivery.Channel.ESCALATION:
        return _prepare_notification(delivery)
    url, secret = config.escalation_webhook, config.webhook_secret
    if not url:
        return "failed", None, "no escalation_webhook set"
    if not secret:
        return "failed", None, "no webhook_secret set: deliveries are signed"
    try:
        addresses = resolve_webhook_url(url)
    except WebhookRefused as exc:
        return "refused", None, str(exc)
    body = delivery.body.encode()
    timestamp = str(int(now.timestamp()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "liza-board-webhook/1",
        "X-Liza-Delivery": str(delivery.pk),
        "X-Liza-Event": delivery.kind,
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }
    return _Request(url, addresses, headers, body)


def _send_mail(mail: _Mail) -> tuple[str, int | None, str]:
    try:
        sent = send_mail(mail.subject, mail.text, None, [mail.to], fail_silently=False)
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        return "failed", None, f"{type(exc).__name__}: {exc}"[:500]
    return ("delivered", None, "") if sent else ("failed", None, "the mail backend sent nothing")


def _attempt(request: _Request | _Mail, clock) -> tuple[str, int | None, str, int]:
    """(outcome, status_code, error, duration_ms) of one POST (or one e-mail); never raises.
    On a pool thread: network only, no database."""
    started = clock()
    if isinstance(request, _Mail):
        return (*_send_mail(request), int((clock() - started) * 1000))
    try:
        status = _post(request.url, request.addresses, request.headers, request.body)
    except AttemptTimedOut as exc:
        result = ("failed", None, str(exc))
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError) as exc:
        # Whatever the receiver's side does, one failed attempt on the log, never a row left
        # claimed and unrecorded.
        result = ("failed", None, f"{type(exc).__name__}: {exc}"[:500])
    else:
        if 200 <= status < 300:
            result = ("delivered", status, "")
        else:
            result = ("failed", status, f"HTTP {status}")
    return (*result, int((clock() - started) * 1000))


@dataclass
class _Flight:
    delivery: WebhookDelivery
    config: ProjectConfig
    now: datetime
    destination: str
    future: Future


class WebhookSender:
    """The watcher's webhook sender: a pool of `SENDER_WORKERS` threads for the network, the
    database on the caller's thread. A project has at most one attempt under way, a destination
    at most `PER_DESTINATION`, and a destination that failed `BREAKER_THRESHOLD` times in a row
    gets nothing for `BREAKER_COOL_OFF` (its deliveries wait, no attempt counted). `round`
    never waits for a receiver: it records the attempts that have finished and starts the due
    ones, so one tenant's slow receiver holds one thread for at most LIZA_WEBHOOK_TIMEOUT and
    never another project's delivery."""

    def __init__(self, *, workers: int | None = None, clock=time.monotonic) -> None:
        self.workers = workers or SENDER_WORKERS
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="liza-webhook")
        self._flights: list[_Flight] = []
        self._breakers: dict[str, Breaker] = {}
        self._clock = clock

    def breaker(self, where: str) -> Breaker:
        if where not in self._breakers:
            self._breakers[where] = Breaker(BREAKER_THRESHOLD, BREAKER_COOL_OFF)
        return self._breakers[where]

    def round(self, *, now: datetime, slugs=(), limit: int = CLAIM_BATCH) -> list[Sent]:
        """Record what finished, start what is due; returns the attempts recorded."""
        sent = self._land(wait=False)
        free = self.workers - len(self._flights)
        if free <= 0:
            return sent
        flying: dict[str, int] = {}
        for flight in self._flights:
            flying[flight.destination] = flying.get(flight.destination, 0) + 1

        def admit(delivery: WebhookDelivery, where: str):
            if flying.get(where, 0) >= PER_DESTINATION:
                return False
            breaker = self.breaker(where)
            if not breaker.allows(now):
                return breaker.open_until
            flying[where] = flying.get(where, 0) + 1
            return True

        for delivery in _claim(now, slugs, min(limit, free), admit):
            config = ProjectConfig.objects.get(project_id=delivery.project_id)
            request = _prepare(delivery, config, now)
            if not isinstance(request, (_Request, _Mail)):  # decided without sending
                sent.append(record_attempt(delivery, config, now, *request, 0))
                continue
            future = self._pool.submit(_attempt, request, self._clock)
            self._flights.append(_Flight(delivery, config, now, _destination_of(delivery), future))
        return sent

    def drain(self) -> list[Sent]:
        """Wait for every attempt under way (each ends within its deadline) and record it."""
        return self._land(wait=True)

    def close(self) -> None:
        self.drain()
        self._pool.shutdown(wait=True)

    def _land(self, *, wait: bool) -> list[Sent]:
        if wait:
            futures_wait([f.future for f in self._flights])
        done = [f for f in self._flights if f.future.done()]
        self._flights = [f for f in self._flights if not f.future.done()]
        sent = []
        for flight in done:
            outcome, status_code, error, duration_ms = flight.future.result()
            if outcome != "refused":
                self.breaker(flight.destination).record(flight.now, ok=outcome == "delivered")
            sent.append(
                record_attempt(
                    flight.delivery,
                    flight.config,
                    flight.now,
                    outcome,
                    status_code,
                    error,
                    duration_ms,
                )
            )
        return sent


def webhook_deliver_due(
    *, now: datetime, slugs=(), limit: int = CLAIM_BATCH, clock=time.monotonic
) -> list[Sent]:
    """Send the deliveries due at `now` that no other watcher holds (one per project); one
    attempt each, all at once on a pool, and wait for them (`liza_watch --once`, tests).

    Runs outside any transaction (the watcher calls it after its sweeps commit): each claim and
    each attempt's record is its own short transaction, and the HTTP request is in none."""
    sender = WebhookSender(workers=min(limit, SENDER_WORKERS), clock=clock)
    try:
        sent = sender.round(now=now, slugs=slugs, limit=limit)
        return sent + sender.drain()
    finally:
        sender.close()
