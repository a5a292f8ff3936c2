"""People's notifications (issue 24) end to end through the watcher: a sweep notes each raised
alert for the members who asked for its event, queues one message per person and channel
(at once, or one digest), and the escalation webhook's sender delivers it — to a real HTTP
receiver on 127.0.0.1 in Slack's and Discord's incoming-webhook shapes, and by e-mail through
Django's locmem backend — with its retries, and its refusal of private addresses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail

from agents.services import agent_quota_pause
from boards.coordination.models.records import Alert, Event
from boards.coordination.services import reviews
from boards.errors import Forbidden, NotFound, ProtocolValidationError
from boards.protocol import NotifyEvent
from boards.watch.models import Notification, WebhookDelivery
from boards.watch.selectors.webhooks import delivery_log
from boards.watch.services.notifications import event_of, notifications_set
from boards.watch.services.watch import watch_sweep
from boards.watch.services.webhook_attempts import BACKOFF
from boards.watch.services.webhooks import webhook_deliver_due
from tests.factories import ProjectFactory, member
from tests.webhook_receiver import webhook_receiver


def _subscribe(world, user, *, events=("blocked",), email=True, chat="", fmt="slack", digest=0):
    fields = {"events": list(events), "email": email, "digest_minutes": digest}
    notifications_set(project=world.project, actor=user, now=world.tick(), **fields)
    if chat:
        notifications_set(
            project=world.project,
            actor=world.admin,
            now=world.tick(),
            user=user.username,
            chat_url=chat,
            chat_format=fmt,
        )


def _sweep_and_send(world, now=None):
    now = now or world.tick()
    watch_sweep(project=world.project, now=now)
    return webhook_deliver_due(now=now)


def test_one_blocked_task_is_one_chat_message_and_one_email_to_each_subscriber_only(world):
    ann = member(world.project, "member", username="ann", email="ann@example.com")
    bob = member(world.project, "viewer", username="bob", email="bob@example.com")
    cid = member(world.project, "member", username="cid", email="cid@example.com")
    dan = member(world.project, "member", username="dan", email="dan@example.com")
    with webhook_receiver() as slack, webhook_receiver() as discord, webhook_receiver() as third:
        _subscribe(world, ann, chat=slack.url, fmt="slack")
        _subscribe(world, bob, chat=discord.url, fmt="discord")
        # Opted out: cid asks only for quota pauses, dan for nothing.
        _subscribe(world, cid, events=["quota"], chat=third.url)
        _subscribe(world, dan, events=[], chat=third.url)
        mail.outbox.clear()

        world.blocked("T-1")
        sent = _sweep_and_send(world)

        assert sorted(s.outcome for s in sent) == ["delivered"] * 4
        [to_slack] = slack.received
        assert set(to_slack.payload) == {"text"}
        assert "BLOCKED: T-1" in to_slack.payload["text"]
        assert "What should happen on error?" in to_slack.payload["text"]  # the human question
        [to_discord] = discord.received
        assert set(to_discord.payload) == {"content"}
        assert "BLOCKED: T-1" in to_discord.payload["content"]
        assert third.received == []
        assert sorted(m.to[0] for m in mail.outbox) == ["ann@example.com", "bob@example.com"]
        assert all("BLOCKED: T-1" in m.subject and "BLOCKED: T-1" in m.body for m in mail.outbox)

        # The alert stays open: later sweeps count it and tell nobody again.
        for _ in range(3):
            assert _sweep_and_send(world, world.tick(60)) == []
        assert len(slack.received) == len(discord.received) == 1 and len(mail.outbox) == 2
        # The escalation webhook's log (for admins) does not list people's messages.
        assert delivery_log(project=world.project) == []


def test_a_digest_gathers_a_burst_into_one_message_listing_each_event(world):
    night = member(world.project, "member", username="night", email="night@example.com")
    eager = member(world.project, "member", username="eager", email="")
    with webhook_receiver() as digest_chat, webhook_receiver() as eager_chat:
        _subscribe(world, night, chat=digest_chat.url, digest=15)
        _subscribe(world, eager, chat=eager_chat.url, email=True)  # no address: chat only
        mail.outbox.clear()
        start = world.tick()
        for n in range(1, 11):  # ten blocks over five minutes, a sweep after each
            world.blocked(f"T-{n}")
            _sweep_and_send(world, world.tick(30))
        assert digest_chat.received == [] and mail.outbox == []
        assert len(eager_chat.received) == 10  # immediate: one message per sweep's news

        # Fifteen minutes after the first one, the digest goes: one message, every block.
        _sweep_and_send(world, start + timedelta(minutes=16))
        [digest] = digest_chat.received
        text = digest.payload["text"]
        assert "10 events" in text
        assert all(f"BLOCKED: T-{n} " in text for n in range(1, 11))
        [email] = mail.outbox
        assert email.to == ["night@example.com"] and "10 events" in email.subject
        assert WebhookDelivery.objects.filter(recipient=night, kind="digest").count() == 2
        assert not Notification.objects.filter(project=world.project, sent_at__isnull=True)

        _sweep_and_send(world, start + timedelta(minutes=60))
        assert len(digest_chat.received) == 1 and len(mail.outbox) == 1  # nothing new


def test_a_failing_chat_webhook_is_retried_on_the_backoff_schedule(world):
    ann = member(world.project, "member", username="ann", email="")
    with webhook_receiver(statuses=[500, 503, 200]) as receiver:
        _subscribe(world, ann, chat=receiver.url)
        world.blocked("T-1")
        start = world.tick()
        [first] = _sweep_and_send(world, start)
        assert (first.outcome, first.status_code) == ("failed", 500)
        [delivery] = WebhookDelivery.objects.filter(recipient=ann)
        delivery.refresh_from_db()
        assert delivery.status == "pending"
        assert delivery.next_attempt_at == start + timedelta(seconds=BACKOFF[0])
        assert webhook_deliver_due(now=start + timedelta(seconds=BACKOFF[0] - 1)) == []
        [second] = webhook_deliver_due(now=start + timedelta(seconds=BACKOFF[0]))
        assert (second.outcome, second.status_code) == ("failed", 503)
        at = start + timedelta(seconds=BACKOFF[0] + BACKOFF[1])
        [third] = webhook_deliver_due(now=at)
        assert third.outcome == "delivered"
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.delivered_at) == ("delivered", 3, at)
        # The same message each time; a person's failing channel is not the project's
        # escalation webhook failing.
        assert len({r.body for r in receiver.received}) == 1 and len(receiver.received) == 3
        assert not Alert.objects.filter(project=world.project, type=Alert.Type.WEBHOOK_FAILING)


def test_a_private_chat_webhook_is_refused_at_save_and_at_send(world, settings):
    ann = member(world.project, "member", username="ann", email="")
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "ftp://x.example"):
        with pytest.raises(ProtocolValidationError) as refused:
            notifications_set(
                project=world.project, actor=world.admin, now=world.tick(), user="ann", chat_url=url
            )
        assert refused.value.field == "chat_url"
    with webhook_receiver() as receiver:
        # Accepted while private addresses were allowed; refused when the sender checks again.
        settings.LIZA_WEBHOOK_ALLOW_PRIVATE = True
        _subscribe(world, ann, chat=receiver.url.replace("127.0.0.1", "localhost"))
        settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
        world.blocked("T-1")
        [sent] = _sweep_and_send(world)
        assert sent.outcome == "refused" and "loopback address" in sent.error
        assert receiver.received == []


def test_each_event_comes_from_its_alert():
    def alert(type_, level=Alert.Level.WARNING):
        return Alert(type=type_, level=level)

    assert event_of(alert(Alert.Type.BLOCKED)) == NotifyEvent.BLOCKED
    assert event_of(alert(Alert.Type.AWAITING_APPROVAL, Alert.Level.INFO)) == NotifyEvent.APPROVAL
    assert event_of(alert(Alert.Type.RUN_STALLED)) == NotifyEvent.STALL
    assert event_of(alert(Alert.Type.QUOTA)) == NotifyEvent.QUOTA
    assert event_of(alert("budget")) == NotifyEvent.BUDGET  # the budget alert, once it exists
    assert event_of(alert(Alert.Type.INTEGRATION_FAILED, Alert.Level.CRITICAL)) == (
        NotifyEvent.CRITICAL
    )
    assert event_of(alert(Alert.Type.LEASE_EXPIRED)) is None


def test_the_approval_gate_and_a_critical_alert_reach_who_asked(world):
    ann = member(world.project, "member", username="ann", email="ann@example.com")
    _subscribe(world, ann, events=["approval", "critical"])
    mail.outbox.clear()
    world.approved("T-1", needs_human_approval=True)  # held at the gate
    _sweep_and_send(world)
    [gate] = mail.outbox
    assert "AWAITING APPROVAL: T-1" in gate.subject
    reviews.task_human_approve(task=world.task("T-1"), actor=world.admin, now=world.tick())
    world.integration_failed("T-2")
    _sweep_and_send(world)
    assert [m.subject for m in mail.outbox[1:]] == [
        f"[Liza {world.project.slug}] INTEGRATION FAILED: T-2"
    ]
    # The gate's alert closed with the approval.
    assert not Alert.objects.filter(type=Alert.Type.AWAITING_APPROVAL, resolved_at__isnull=True)


def test_who_may_set_what(world):
    ann = member(world.project, "member", username="ann", email="")
    bob = member(world.project, "viewer", username="bob", email="")
    outsider = member(ProjectFactory(), "admin", username="out")
    now = world.tick()
    pref = notifications_set(project=world.project, actor=bob, now=now, events=["blocked"])
    assert (pref.user, pref.events, pref.updated) == (bob, ["blocked"], now)
    with pytest.raises(Forbidden):  # a chat URL is the admin's to set
        notifications_set(
            project=world.project, actor=bob, now=now, chat_url="http://example.com/x"
        )
    with pytest.raises(Forbidden):  # and so are another member's choices
        notifications_set(project=world.project, actor=ann, now=now, user="bob", email=True)
    with pytest.raises(Forbidden):
        notifications_set(project=world.project, actor=outsider, now=now, events=[])
    with pytest.raises(NotFound):
        notifications_set(project=world.project, actor=world.admin, now=now, user="out")
    with pytest.raises(ProtocolValidationError) as refused:
        notifications_set(project=world.project, actor=ann, now=now, events=["everything"])
    assert refused.value.field == "events"
    notifications_set(
        project=world.project,
        actor=world.admin,
        now=now,
        user="ann",
        chat_url="http://example.com/services/T0/B0/secret-token",
    )
    event = Event.objects.filter(project=world.project, action="notifications_set").last()
    assert "secret-token" not in str(event.data) and event.data["user"] == "ann"


def test_a_quota_pause_reaches_who_asked_once_and_not_who_did_not(world):
    ann = member(world.project, "member", username="ann", email="ann@example.com")
    bob = member(world.project, "member", username="bob", email="bob@example.com")
    _subscribe(world, ann, events=["quota"])
    _subscribe(world, bob, events=["blocked", "stall"])
    mail.outbox.clear()
    now = world.tick()
    agent_quota_pause(
        project=world.project,
        agent=world.coder,
        now=now,
        until=now + timedelta(hours=2),
        provider="claude",
        message="Claude usage limit reached",
    )
    _sweep_and_send(world)
    _sweep_and_send(world, world.tick(60))  # the pause stands: counted, not sent again
    [quota] = mail.outbox
    assert quota.to == ["ann@example.com"] and "QUOTA" in quota.subject.upper()


def test_a_multi_line_blocked_reason_is_one_subject_line(world):
    ann = member(world.project, "member", username="ann", email="ann@example.com")
    _subscribe(world, ann)
    mail.outbox.clear()
    world.claimed("T-1")
    world.block("T-1", reason="The spec says two things:\r\nA and\nB")
    [sent] = _sweep_and_send(world)
    assert sent.outcome == "delivered"
    [email] = mail.outbox
    assert "\n" not in email.subject and "\r" not in email.subject
    assert "The spec says two things: A and B" in email.subject


def test_sent_notifications_are_deleted_after_thirty_days_and_waiting_ones_kept(world):
    ann = member(world.project, "member", username="ann", email="ann@example.com")
    _subscribe(world, ann, digest=60 * 24)
    world.blocked("T-1")
    start = world.tick()
    _sweep_and_send(world, start)
    [waiting] = Notification.objects.filter(project=world.project)
    _sweep_and_send(world, start + timedelta(days=1, minutes=1))  # the digest goes
    waiting.refresh_from_db()
    assert waiting.sent_at == start + timedelta(days=1, minutes=1)
    _sweep_and_send(world, start + timedelta(days=31))
    assert Notification.objects.filter(project=world.project).exists()
    _sweep_and_send(world, start + timedelta(days=31, minutes=2))
    assert not Notification.objects.filter(project=world.project).exists()
    assert WebhookDelivery.objects.filter(recipient=ann).count() == 1  # the message stays
