"""The webhook sender against hostile receivers (issue #27 findings 1 and 2), real HTTP on
127.0.0.1 (tests/webhook_receiver.py):

- a receiver that drips its headers, or its body, a byte at a time cannot hold an attempt past
  LIZA_WEBHOOK_TIMEOUT (the tests' 1 s): the deadline is the whole request's, not each read's;
- an answer of 1.5 GB is read up to the cap and no further;
- one project's slow receiver never delays another project's delivery, nor does its backlog;
- a destination that keeps failing is left alone for a while (its circuit breaker), without
  the deliveries counting attempts, and tried once again after.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings

from boards.watch.models import WebhookAttempt, WebhookDelivery
from boards.watch.services.webhooks import _post, webhook_deliver_due
from tests.webhook_receiver import project_with_deliveries, webhook_receiver

pytestmark = pytest.mark.django_db

SECRET = "whsec-0123456789abcdef"
SLACK = 0.5  # seconds past the deadline that thread scheduling may take on a loaded machine


def _timed_post(url: str, wait: float) -> tuple[object, float]:
    """`_post` on a thread (so a sender that does not stop fails the test instead of hanging
    it): what it returned or raised, and how long it took."""
    result: dict[str, object] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            result["value"] = _post(url, [], {"X-Test": "1"}, b"{}")
        except Exception as exc:
            result["value"] = exc
        result["took"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(wait)
    assert not thread.is_alive(), f"the attempt was still running after {wait} s"
    return result["value"], float(result["took"])  # type: ignore[arg-type]


@pytest.mark.parametrize("answer", ["slow_headers", "slow_body"])
def test_a_dripping_receiver_cannot_hold_an_attempt_past_the_timeout(answer):
    """The finding: 200 OK with Content-Length 1000, then a byte every 3 s, kept the sender
    90 s+; httpx's timeout restarts at every byte. A byte every 0.2 s here (under the 1 s
    per-read timeout): the attempt still ends at 1 s."""
    timeout = settings.LIZA_WEBHOOK_TIMEOUT
    with webhook_receiver(answer=answer, drip=0.2) as receiver:
        value, took = _timed_post(receiver.url, wait=timeout + 5)
    assert isinstance(value, Exception) and "timed out after 1 s" in str(value)
    assert took <= timeout + SLACK


def test_a_huge_answer_is_read_up_to_the_cap_only():
    """The finding: a 1.5 GB answer was read whole into the watcher (2.96 GB resident)."""
    with webhook_receiver(answer="huge") as receiver:
        value, took = _timed_post(receiver.url, wait=10)
        time.sleep(0.2)  # what the receiver wrote after the sender hung up, if anything
        written = receiver.sent_bytes
    assert value == 200
    # 64 KiB read; the rest of what the receiver managed to write sat in socket buffers.
    assert written < 32 * 1024 * 1024, written
    assert took < settings.LIZA_WEBHOOK_TIMEOUT


def test_a_slow_tenant_does_not_delay_another_projects_delivery():
    """The finding: another project's delivery stayed pending, 0 attempts, for 75 s. Project A's
    receiver drips (and A has a backlog of 4); B's message arrives at once, in the same round,
    and A's attempt ends at its deadline."""
    with (
        webhook_receiver(answer="slow_headers", drip=0.2) as slow,
        webhook_receiver() as healthy,
    ):
        a = project_with_deliveries(slow.url, 4, SECRET)
        b = project_with_deliveries(healthy.url, 1, SECRET)
        now = max(a.tick(), b.tick())
        started = time.monotonic()
        sent = webhook_deliver_due(now=now)
        took = time.monotonic() - started
        assert healthy.arrived.wait(0), "B's delivery was not sent"
    outcomes = {s.project: s.outcome for s in sent}
    assert outcomes == {a.project.slug: "failed", b.project.slug: "delivered"}
    # A's deliveries go one at a time: its backlog waits for its next round, not B.
    assert len(slow.received) == 1
    assert took <= settings.LIZA_WEBHOOK_TIMEOUT + SLACK
    [b_attempt] = WebhookAttempt.objects.filter(delivery__project=b.project)
    assert b_attempt.duration_ms < 500


def test_the_watchers_sender_records_a_fast_delivery_while_a_slow_one_is_on_the_wire():
    """`WebhookSender.round` (the watcher's loop) never waits for a receiver: B is recorded as
    delivered in the next round, while A's attempt is still under way."""
    from boards.watch.services.webhooks import WebhookSender

    with (
        webhook_receiver(answer="slow_headers", drip=0.2) as slow,
        webhook_receiver() as healthy,
    ):
        a = project_with_deliveries(slow.url, 1, SECRET)
        b = project_with_deliveries(healthy.url, 1, SECRET)
        now = max(a.tick(), b.tick())
        sender = WebhookSender()
        try:
            assert sender.round(now=now) == []  # both started, neither waited for
            assert healthy.arrived.wait(2)
            landed: list = []
            deadline = time.monotonic() + settings.LIZA_WEBHOOK_TIMEOUT * 0.8
            while not landed and time.monotonic() < deadline:  # before A's deadline
                landed = sender.round(now=now)
                time.sleep(0.02)
            [b_sent] = landed
            assert (b_sent.project, b_sent.outcome) == (b.project.slug, "delivered")
            assert WebhookDelivery.objects.get(project=a.project).attempts == 0  # on the wire
            [a_sent] = sender.drain()
            assert (a_sent.project, a_sent.outcome) == (a.project.slug, "failed")
        finally:
            sender.close()


def test_a_destination_that_keeps_failing_is_left_alone_then_tried_once_again():
    """Five projects share one failing receiver. After BREAKER_THRESHOLD failures in a row no
    attempt goes there for BREAKER_COOL_OFF (the deliveries wait without counting an
    attempt); then one trial, and a success closes the breaker."""
    from boards.watch.services.webhooks import (
        BREAKER_COOL_OFF,
        BREAKER_THRESHOLD,
        PER_DESTINATION,
        WebhookSender,
    )

    with webhook_receiver(statuses=(500,)) as receiver:
        worlds = [
            project_with_deliveries(receiver.url, 1, SECRET) for _ in range(BREAKER_THRESHOLD + 3)
        ]
        now = max(w.tick() for w in worlds)
        sender = WebhookSender()
        try:
            attempted = 0
            while attempted < BREAKER_THRESHOLD:
                sender.round(now=now)
                landed = sender.drain()
                assert len(landed) <= PER_DESTINATION  # at most this many at once
                attempted += len(landed)
            assert len(receiver.received) == attempted
            assert sender.round(now=now) == [] and sender.drain() == []
            assert len(receiver.received) == attempted  # the breaker is open
            waiting = WebhookDelivery.objects.filter(attempts=0, status="pending")
            assert waiting.count() == len(worlds) - attempted > 0
            assert {d.next_attempt_at for d in waiting} == {now + BREAKER_COOL_OFF}

            receiver.statuses[:] = [200]
            later = now + BREAKER_COOL_OFF + timedelta(seconds=1)
            sender.round(now=later)
            [trial] = sender.drain()  # one trial attempt: half-open
            assert trial.outcome == "delivered"
            sender.round(now=later)
            after = sender.drain()
            assert [s.outcome for s in after] == ["delivered"] * PER_DESTINATION  # closed
        finally:
            sender.close()
