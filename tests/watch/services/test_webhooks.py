"""The escalation webhook (issue #11) against a real HTTP receiver on 127.0.0.1: what a sweep
queues (critical alerts, each stale-checkpoint step), the signed payload, the backoff schedule
to giving up, the WEBHOOK_FAILING alert, a slow receiver, the refusal of private targets, and
HTTPS: the receiver's certificate checked against the URL's host name, also when the sender
connects to the address it checked. The clock is the `now` every sweep and every delivery
round takes."""

from __future__ import annotations

import json
import ssl
import time
from datetime import timedelta
from io import StringIO

import httpx
import pytest
import trustme
from django.core.management import call_command
from prometheus_client import REGISTRY

from boards.coordination.models.records import Alert, Event
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services.projects import config_update
from boards.errors import ProtocolValidationError
from boards.watch.models import WebhookDelivery
from boards.watch.services.watch import watch_sweep
from boards.watch.services.webhook_attempts import BACKOFF, FAILING_AFTER
from boards.watch.services.webhooks import _post, webhook_deliver_due
from tests.webhook_receiver import verify, webhook_receiver

SECRET = "whsec-0123456789abcdef"


def _configure(world, url: str, secret: str = SECRET) -> None:
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        escalation_webhook=url,
        webhook_secret=secret,
    )
    world.project.refresh_from_db()


def _deliveries(world) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(project=world.project).order_by("id"))


def _open(world, type_: str) -> list[Alert]:
    return list(Alert.objects.filter(project=world.project, type=type_, resolved_at__isnull=True))


def _count(outcome: str) -> float:
    return REGISTRY.get_sample_value("liza_webhook_deliveries_total", {"outcome": outcome}) or 0


def test_a_critical_alert_is_posted_once_signed_and_the_receiver_verifies_it(
    world, django_capture_on_commit_callbacks
):
    with webhook_receiver() as receiver:
        _configure(world, receiver.url)
        world.integration_failed("T-1")  # a CRITICAL alert
        world.blocked("T-2")  # a WARNING one: not sent
        at = world.tick()
        sweep = watch_sweep(project=world.project, now=at)
        assert len(sweep.alerts) == 2
        [delivery] = _deliveries(world)
        assert (delivery.status, delivery.kind, delivery.attempts) == ("pending", "alert.raised", 0)
        assert receiver.received == []  # the sweep itself sends nothing

        before = _count("delivered")
        with django_capture_on_commit_callbacks(execute=True):
            [sent] = webhook_deliver_due(now=at)
        assert sent.outcome == "delivered" and sent.status_code == 200
        assert sent.line().startswith(f"{world.project.slug}: webhook delivery {delivery.pk} ")
        assert _count("delivered") == before + 1

        [request] = receiver.received
        assert request.path == "/hooks/liza"
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["X-Liza-Timestamp"] == str(int(at.timestamp()))
        assert request.headers["X-Liza-Delivery"] == str(delivery.pk)
        assert verify(SECRET, request.headers, request.body, now=at.timestamp())
        # A forged body, another secret or an old (replayed) message fail the check.
        assert not verify(SECRET, request.headers, request.body + b" ", now=at.timestamp())
        assert not verify(
            "another-secret-value!", request.headers, request.body, now=at.timestamp()
        )
        assert not verify(SECRET, request.headers, request.body, now=at.timestamp() + 3600)

        alert = Alert.objects.get(project=world.project, type=Alert.Type.INTEGRATION_FAILED)
        assert request.payload == {
            "delivery": delivery.pk,
            "event": "alert.raised",
            "project": world.project.slug,
            "alert": {
                "id": alert.pk,
                "type": "integration_failed",
                "level": "critical",
                "subject": "T-1",
                "message": "INTEGRATION FAILED: T-1",
                "task": "T-1",
                "agent": None,
                "first_seen": request.payload["alert"]["first_seen"],
                "last_seen": request.payload["alert"]["last_seen"],
                "count": 1,
            },
            "link": f"/p/{world.project.slug}/inbox",
        }
        assert request.payload["alert"]["first_seen"].startswith(at.strftime("%Y-%m-%dT%H:%M"))
        assert SECRET not in request.body.decode() and SECRET not in str(request.headers)

        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.delivered_at) == ("delivered", 1, at)
        [attempt] = delivery.attempt_log.all()
        # The delivery log keeps the URL redacted (issue #27): a token in its path stays out.
        assert (attempt.status_code, attempt.error) == (200, "")
        assert attempt.url == receiver.url.removesuffix("/hooks/liza") + "/…"

        # Nothing more: the alert still open is counted, not sent again; nothing is due.
        watch_sweep(project=world.project, now=world.tick(10))
        assert webhook_deliver_due(now=world.now) == []
        assert len(receiver.received) == 1 and len(_deliveries(world)) == 1


def test_each_stale_checkpoint_step_is_sent_30_minutes_2_hours_and_8_hours(world):
    world.unclaimed("T-1")
    sprint = sprint_services.sprint_create(
        project=world.project, actor=world.planner, planned=["T-1"], now=world.tick()
    )
    with webhook_receiver() as receiver:
        _configure(world, receiver.url)
        at = world.tick()
        sprint_services.sprint_checkpoint(sprint=sprint, actor=world.admin, reason="look", now=at)
        for minutes in (29, 31, 60, 121, 200, 481, 600):
            now = at + timedelta(minutes=minutes)
            watch_sweep(project=world.project, now=now)
            webhook_deliver_due(now=now)
        steps = [(r.payload["event"], r.payload["alert"]["level"]) for r in receiver.received]
        assert steps == [
            ("alert.raised", "warning"),
            ("alert.escalated", "critical"),
            ("alert.escalated", "critical"),
        ]
        labels = [r.payload["alert"]["message"].partition(":")[0] for r in receiver.received]
        assert labels == ["CHECKPOINT STALE", "CHECKPOINT STUCK", "CHECKPOINT ABANDONED?"]


def test_no_url_queues_nothing(world):
    world.integration_failed("T-1")
    watch_sweep(project=world.project, now=world.tick())
    assert _deliveries(world) == []


def test_a_failing_receiver_is_retried_on_the_backoff_schedule_then_given_up_and_alerted(
    world, django_capture_on_commit_callbacks
):
    with webhook_receiver(statuses=[500]) as receiver:
        _configure(world, receiver.url)
        world.integration_failed("T-1")
        start = world.tick()
        watch_sweep(project=world.project, now=start)
        [delivery] = _deliveries(world)

        now = start
        gave_up_before, failed_before = _count("gave_up"), _count("failed")
        for attempt, wait in enumerate([*BACKOFF, None], start=1):
            with django_capture_on_commit_callbacks(execute=True):
                [sent] = webhook_deliver_due(now=now)
            assert (sent.outcome, sent.status_code, sent.error) == ("failed", 500, "HTTP 500")
            delivery.refresh_from_db()
            assert delivery.attempts == attempt
            failing = _open(world, Alert.Type.WEBHOOK_FAILING)
            assert len(failing) == (1 if attempt >= FAILING_AFTER else 0)
            if wait is None:
                assert sent.gave_up and delivery.status == "gave_up"
                assert delivery.next_attempt_at is None
                break
            assert delivery.status == "pending"
            assert delivery.next_attempt_at == now + timedelta(seconds=wait)
            # Not a second earlier, however many rounds (and sweeps) run meanwhile.
            early = now + timedelta(seconds=wait - 1)
            watch_sweep(project=world.project, now=early)
            assert webhook_deliver_due(now=early) == []
            now += timedelta(seconds=wait)
        assert len(receiver.received) == len(BACKOFF) + 1
        assert {r.headers["X-Liza-Delivery"] for r in receiver.received} == {str(delivery.pk)}
        assert _count("failed") == failed_before + len(BACKOFF) + 1
        assert _count("gave_up") == gave_up_before + 1
        assert webhook_deliver_due(now=now + timedelta(days=1)) == []  # given up: never again

        [alert] = _open(world, Alert.Type.WEBHOOK_FAILING)
        assert alert.level == Alert.Level.WARNING and alert.subject == world.project.slug
        assert alert.count == len(BACKOFF) + 1 - FAILING_AFTER + 1
        assert "HTTP 500" in alert.message
        # A sweep does not resolve it (its condition is the sender's to judge).
        watch_sweep(project=world.project, now=now + timedelta(seconds=1))
        assert len(_open(world, Alert.Type.WEBHOOK_FAILING)) == 1

        # The receiver recovers: the next message is delivered and the alert resolved.
        receiver.statuses[:] = [200]
        world.now = now + timedelta(seconds=2)
        world.integration_failed("T-9")
        later = world.tick()
        watch_sweep(project=world.project, now=later)
        [sent] = webhook_deliver_due(now=later)
        assert sent.outcome == "delivered"
        assert _open(world, Alert.Type.WEBHOOK_FAILING) == []
        assert Alert.objects.get(type=Alert.Type.WEBHOOK_FAILING).resolved_at == later


def test_a_slow_receiver_times_out_and_is_tried_again_later_while_the_sweep_never_waits(world):
    with webhook_receiver(delay=4) as receiver:  # the tests' timeout is 1 s
        _configure(world, receiver.url)
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        assert receiver.received == []  # no network in the sweep (see also tests/concurrency)

        started = time.monotonic()
        [sent] = webhook_deliver_due(now=at)
        took = time.monotonic() - started
        assert 0.9 < took < 3.5, took  # the timeout, not the receiver's 4 s
        assert sent.outcome == "failed" and sent.status_code is None
        assert sent.error == "timed out after 1 s"
        assert 900 <= sent.duration_ms < 3500
        [delivery] = _deliveries(world)
        assert delivery.status == "pending"
        assert delivery.next_attempt_at == at + timedelta(seconds=BACKOFF[0])
        assert delivery.claimed_until is None
        [attempt] = delivery.attempt_log.all()
        assert attempt.error == "timed out after 1 s" and attempt.duration_ms == sent.duration_ms

        receiver.delay = 0
        [sent] = webhook_deliver_due(now=at + timedelta(seconds=BACKOFF[0]))
        assert sent.outcome == "delivered"


def test_without_a_secret_nothing_unsigned_is_sent(world):
    with webhook_receiver() as receiver:
        _configure(world, receiver.url, secret="")
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        [sent] = webhook_deliver_due(now=at)
        assert sent.outcome == "failed"
        assert sent.error == "no webhook_secret set: deliveries are signed"
        assert receiver.received == []


# -- the target must be public (SSRF) ----------------------------------------------------------

PRIVATE_TARGETS = [
    ("http://127.0.0.1:8000/hook", "127.0.0.1, a loopback address"),
    ("http://10.1.2.3/hook", "10.1.2.3, a private address"),
    ("http://192.168.1.10/hook", "192.168.1.10, a private address"),
    ("http://172.16.0.5/hook", "172.16.0.5, a private address"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254, a link-local address"),
    ("http://[::1]:9000/hook", "::1, a loopback address"),
    ("http://[fe80::1]/hook", "fe80::1, a link-local address"),
    ("http://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1, a loopback address"),
    ("http://0.0.0.0/hook", "0.0.0.0, a"),
    # IPv6 addresses that carry to an IPv4 one inside (issue #27): judged by that one
    ("http://[2002:7f00:1::]/", "2002:7f00:1::, a loopback address by 6to4 (127.0.0.1)"),
    ("http://[2002:a9fe:a9fe::]/", "a link-local address by 6to4 (169.254.169.254)"),
    ("http://[2002:a00:1::5]/hook", "a private address by 6to4 (10.0.0.1)"),
    ("http://[2001:0:5db8:d70e::80ff:fffe]/", "a loopback address by Teredo (127.0.0.1)"),
    ("http://[64:ff9b::7f00:1]/hook", "a loopback address by NAT64 (127.0.0.1)"),
    ("http://[64:ff9b::a9fe:a9fe]/", "a link-local address by NAT64 (169.254.169.254)"),
    ("http://[64:ff9b:1::a00:1]/", "a private address (local-use NAT64)"),
    ("http://localhost:8000/hook", "a loopback address"),
]


@pytest.mark.parametrize(("url", "why"), PRIVATE_TARGETS, ids=[u for u, _ in PRIVATE_TARGETS])
def test_a_private_target_is_refused_at_save(world, settings, url, why):
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ProtocolValidationError) as refused:
        config_update(
            project=world.project,
            actor=world.admin,
            now=world.tick(),
            **{"escalation_webhook": url},
        )
    assert refused.value.field == "escalation_webhook"
    assert why in refused.value.message and "LIZA_WEBHOOK_ALLOW_PRIVATE" in refused.value.message
    world.project.config.refresh_from_db()
    assert world.project.config.escalation_webhook == ""
    assert not Event.objects.filter(project=world.project, action="config_updated").exists()


def test_a_public_address_is_accepted_and_a_bad_scheme_refused(world, settings):
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    config = config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        escalation_webhook="https://93.184.215.14/hooks/liza",
    )
    assert config.escalation_webhook == "https://93.184.215.14/hooks/liza"
    # A public IPv4 address spelt by 6to4 or NAT64 is public too.
    for url in ("http://[2002:5db8:d70e::1]/hook", "http://[64:ff9b::5db8:d70e]/hook"):
        config = config_update(
            project=world.project, actor=world.admin, now=world.tick(), escalation_webhook=url
        )
        assert config.escalation_webhook == url
    with pytest.raises(ProtocolValidationError) as refused:
        config_update(
            project=world.project,
            actor=world.admin,
            now=world.tick(),
            escalation_webhook="ftp://93.184.215.14/hooks",
        )
    assert refused.value.field == "escalation_webhook"


def test_a_name_that_resolves_to_loopback_after_the_save_is_refused_at_send(world, settings):
    """DNS rebinding: the URL was accepted (here: allowed then), and at send time its host is
    a loopback address; the sender refuses instead of following it."""
    with webhook_receiver() as receiver:
        _configure(world, receiver.url.replace("127.0.0.1", "localhost"))
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
        [sent] = webhook_deliver_due(now=at)
        assert sent.outcome == "refused"
        assert "a loopback address: refused" in sent.error
        assert receiver.received == []
        [delivery] = _deliveries(world)
        assert delivery.next_attempt_at == at + timedelta(seconds=BACKOFF[0])


@pytest.mark.parametrize("secret", ["short", " " * 3])
def test_a_short_secret_is_refused(world, secret):
    with pytest.raises(ProtocolValidationError) as refused:
        config_update(
            project=world.project, actor=world.admin, now=world.tick(), webhook_secret=secret
        )
    assert refused.value.field == "webhook_secret"


def test_the_audit_says_the_secret_changed_never_what_it_is(world):
    _configure(world, "https://hooks.example.test/liza")
    config_update(project=world.project, actor=world.admin, now=world.tick(), webhook_secret=None)
    events = Event.objects.filter(project=world.project, action="config_updated").order_by("id")
    assert [e.detail for e in events] == [
        "escalation_webhook changed, webhook_secret none → set",  # the URL too (issue #27)
        "webhook_secret set → none",
    ]
    for event in events:
        assert SECRET not in event.detail and SECRET not in json.dumps(event.data)


def test_liza_watch_once_sweeps_then_sends_what_the_sweep_queued(world):
    with webhook_receiver() as receiver:
        _configure(world, receiver.url)
        world.integration_failed("T-1")
        out, err = StringIO(), StringIO()
        call_command(
            "liza_watch", "--once", "--project", world.project.slug, stdout=out, stderr=err
        )
        [request] = receiver.received
        assert request.payload["alert"]["type"] == "integration_failed"
        [delivery] = _deliveries(world)
        assert f"webhook delivery {delivery.pk} delivered (HTTP 200, " in out.getvalue()
        assert err.getvalue() == ""


def test_a_receiver_that_is_down_is_a_failed_attempt_tried_again_later(world):
    with webhook_receiver() as receiver:
        url = receiver.url
    # The receiver has shut down: nothing listens on its port any more.
    _configure(world, url)
    world.integration_failed("T-1")
    at = world.tick()
    watch_sweep(project=world.project, now=at)
    [sent] = webhook_deliver_due(now=at)
    assert (sent.outcome, sent.status_code) == ("failed", None)
    assert sent.error.startswith("ConnectError")
    [delivery] = _deliveries(world)
    assert delivery.status == "pending"
    assert delivery.next_attempt_at == at + timedelta(seconds=BACKOFF[0])


def test_a_send_goes_to_the_address_that_was_checked_keeping_the_name_as_host():
    """Against DNS rebinding the sender connects to the address it checked, not to whatever
    the name resolves to by then: here a name that resolves to nothing at all."""
    with webhook_receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        url = f"http://receiver.invalid:{port}/hooks/liza"
        status = _post(url, ["127.0.0.1"], {"X-Test": "1"}, b"{}")
        assert status == 200
        [request] = receiver.received
        assert request.headers["Host"] == f"receiver.invalid:{port}"
        assert request.path == "/hooks/liza"


# -- HTTPS ---------------------------------------------------------------------------------------
# A throwaway certificate authority (trustme) stands in for a public one: the sender trusts it
# through SSL_CERT_FILE, as a deployment whose receivers use a private authority does (README
# "Escalation webhook"). The receiver listens on 127.0.0.1 and its URL names "localhost".


@pytest.fixture
def trusted_ca(tmp_path, monkeypatch):
    authority = trustme.CA()
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    return authority


def _tls(authority: trustme.CA, *names: str) -> ssl.SSLContext:
    """The receiver's side: a certificate for `names`, issued by `authority`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert(*names).configure_cert(context)
    return context


def test_an_alert_is_delivered_over_https_to_a_receiver_with_a_trusted_certificate(
    world, trusted_ca
):
    with webhook_receiver(tls=_tls(trusted_ca, "localhost"), host="localhost") as receiver:
        assert receiver.url.startswith("https://localhost:")
        _configure(world, receiver.url)
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        [sent] = webhook_deliver_due(now=at)
        assert (sent.outcome, sent.status_code, sent.error) == ("delivered", 200, "")
        [request] = receiver.received
        assert verify(SECRET, request.headers, request.body, now=at.timestamp())
        assert request.payload["alert"]["type"] == "integration_failed"
        assert receiver.server_names == ["localhost"]


def test_a_receiver_whose_certificate_no_trusted_authority_issued_gets_nothing(world, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)  # only the public authorities
    stranger = trustme.CA()
    with webhook_receiver(tls=_tls(stranger, "localhost"), host="localhost") as receiver:
        _configure(world, receiver.url)
        world.integration_failed("T-1")
        at = world.tick()
        watch_sweep(project=world.project, now=at)
        [sent] = webhook_deliver_due(now=at)
        assert sent.outcome == "failed" and sent.status_code is None
        assert "CERTIFICATE_VERIFY_FAILED" in sent.error
        assert receiver.received == []  # the handshake failed: no request, no payload
        [delivery] = _deliveries(world)
        assert (delivery.status, delivery.attempts) == ("pending", 1)
        assert delivery.next_attempt_at == at + timedelta(seconds=BACKOFF[0])
        [attempt] = delivery.attempt_log.all()
        assert "CERTIFICATE_VERIFY_FAILED" in attempt.error


@pytest.mark.parametrize(
    "names, accepted",
    [
        (("localhost",), True),  # the URL's name, though the socket goes to 127.0.0.1
        (("127.0.0.1",), False),  # valid for the address connected to, not for the name
        (("hooks.example.test",), False),  # another name
    ],
    ids=["the-urls-name", "only-the-address", "another-name"],
)
def test_a_pinned_https_send_checks_the_certificate_against_the_urls_host_name(
    trusted_ca, names, accepted
):
    """In production the sender connects to the address it checked (no DNS rebinding): the
    socket's peer is an IP, and the certificate must still match the URL's name (the TLS
    server name the sender gives), never the bare address."""
    with webhook_receiver(tls=_tls(trusted_ca, *names), host="localhost") as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        send = lambda: _post(receiver.url, ["127.0.0.1"], {"X-Test": "1"}, b"{}")  # noqa: E731
        if accepted:
            assert send() == 200
            [request] = receiver.received
            assert request.headers["Host"] == f"localhost:{port}"
        else:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                send()
            assert receiver.received == []
        assert receiver.server_names == ["localhost"]
