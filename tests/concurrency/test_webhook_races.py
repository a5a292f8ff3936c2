"""The escalation webhook with several watchers (issue #11): threads on their own PostgreSQL
connections send the same due deliveries, and each is posted exactly once; and while a
delivery is on the wire, none of its rows nor the project's sweep lock is held."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest
from django.db import connection, transaction
from django.utils import timezone

from boards.coordination.models.records import Alert
from boards.coordination.services.projects import config_update
from boards.watch.models import WebhookDelivery
from boards.watch.services.watch import _take_sweep_lock, watch_sweep
from boards.watch.services.webhooks import webhook_deliver_due
from tests.concurrency.conftest import run_together
from tests.lifecycle import World
from tests.live_server import watcher_process
from tests.webhook_receiver import project_with_deliveries, webhook_receiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-race-0123456789"
CRITICAL_TASKS = 9


def test_three_watchers_never_send_a_delivery_twice(settings):
    # The suite's 1 s deadline is for the tests of timeouts; here a slow answer on a loaded
    # machine would count as a failed attempt and hold the rest of its lane back past `now`.
    settings.LIZA_WEBHOOK_TIMEOUT = 10.0
    with webhook_receiver(delay=0.05) as receiver:
        world = project_with_deliveries(receiver.url, CRITICAL_TASKS, SECRET)
        now = world.tick()

        def watcher() -> list[int]:
            sent = []
            while batch := webhook_deliver_due(now=now, limit=2):
                sent += [s.delivery for s in batch]
            return sent

        outcomes = run_together(watcher, watcher, watcher)
        assert all(o.ok for o in outcomes), [o.error for o in outcomes]
        per_watcher = [set(o.value) for o in outcomes]
        everything = {d.pk for d in WebhookDelivery.objects.filter(project=world.project)}
        assert sorted(pk for s in per_watcher for pk in s) == sorted(everything)  # disjoint
        posted = Counter(int(r.headers["X-Liza-Delivery"]) for r in receiver.received)
        assert posted == dict.fromkeys(everything, 1)
        assert set(
            WebhookDelivery.objects.filter(project=world.project).values_list("status", "attempts")
        ) == {("delivered", 1)}


def test_nothing_is_locked_while_a_delivery_is_on_the_wire(settings):
    # The receiver holds the request 0.8 s while the locks are tried; the suite's 1 s deadline
    # failed the delivery now and then on a loaded machine (0.2 s is no margin there).
    settings.LIZA_WEBHOOK_TIMEOUT = 10.0
    with webhook_receiver(delay=0.8) as receiver:
        world = project_with_deliveries(receiver.url, 1, SECRET)
        now = world.tick()
        delivery = WebhookDelivery.objects.get(project=world.project)
        result = {}

        def send() -> None:
            try:
                result["sent"] = webhook_deliver_due(now=now)
            finally:
                connection.close()

        sender = threading.Thread(target=send)
        sender.start()
        assert receiver.arrived.wait(10)
        # The receiver holds the request: the sender's rows and the sweep lock are all free.
        with transaction.atomic():
            WebhookDelivery.objects.select_for_update(nowait=True).get(pk=delivery.pk)
            Alert.objects.select_for_update(nowait=True).filter(project=world.project).count()
            assert _take_sweep_lock(world.project)
        assert not watch_sweep(project=world.project, now=world.tick()).skipped
        sender.join(10)
        [sent] = result["sent"]
        assert sent.outcome == "delivered"


def test_the_watcher_loop_sends_from_its_own_thread_while_sweeps_go_on_and_stops_on_sigterm():
    """A real `manage.py liza_watch`: its sender thread posts what a sweep queued while the
    sweeps go on, and SIGTERM stops both cleanly."""
    # A slow receiver, well inside the 1 s deadline of tests.settings (which the watcher loads):
    # 0.8 s left too little margin on a loaded machine.
    with webhook_receiver(delay=0.3) as receiver:
        world = World(now=timezone.now())
        config_update(
            project=world.project,
            actor=world.admin,
            now=world.tick(),
            escalation_webhook=receiver.url,
            webhook_secret=SECRET,
            watch_interval=1,
        )
        world.integration_failed("T-1")
        watcher = watcher_process(world.project.slug)
        try:
            lines = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                lines.append(watcher.stdout.readline())
                heartbeats = [line for line in lines if "heartbeat:" in line]
                if len(heartbeats) >= 3 and any("delivered" in line for line in lines):
                    break
            watcher.send_signal(signal.SIGTERM)
            out, err = watcher.communicate(timeout=30)
        finally:
            if watcher.poll() is None:
                watcher.kill()
        assert watcher.returncode == 0, err
        assert out.rstrip().endswith("liza_watch stopped")
        [delivered] = [line for line in lines if "webhook delivery" in line]
        assert "delivered (HTTP 200" in delivered
        # That delivery was posted once. (On a crawling machine a sweep may raise another alert
        # before the stop, whose delivery goes to the same receiver: only duplicates count.)
        delivery = int(delivered.split("webhook delivery ")[1].split()[0])
        posted = Counter(int(r.headers["X-Liza-Delivery"]) for r in receiver.received)
        assert posted[delivery] == 1, posted
        assert set(posted.values()) == {1}, posted
