"""Brute force on the two sign-in pages (django-axes; liza_site/settings.py, docs/security.md).

Before, 200 wrong passwords in a minute met no lockout. Now a username that failed
AXES_FAILURE_LIMIT times, from any addresses, or an address that failed that often, whatever
the usernames, is refused with 429 and Retry-After for the cool-off, even with the right
password. Every failure and lockout is in axes' tables, which the admin shows read-only.
"""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib.auth import SESSION_KEY
from django.contrib.auth import password_validation as pv
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from boards.demo.projects import ADMIN_PASSWORD
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests"  # UserFactory's
LOGINS = ["/login/", "/admin/login/"]


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _sign_in(url: str, username: str, password: str, address: str):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(url, {"username": username, "password": password})


def _signed_in(client) -> bool:
    return SESSION_KEY in client.session


@pytest.mark.parametrize("url", LOGINS)
def test_an_account_locks_after_the_limit_from_any_address(url, settings):
    user = UserFactory(is_staff=True)
    statuses = [
        _sign_in(url, user.username, "wrong", f"10.0.0.{n + 1}")[1].status_code
        for n in range(settings.AXES_FAILURE_LIMIT)
    ]
    # The form again, with its error, until the failure that reaches the limit.
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]

    client, response = _sign_in(url, user.username, PASSWORD, "10.9.9.9")

    assert response.status_code == 429
    assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    assert "Too many sign-in attempts" in response.content.decode()
    assert not _signed_in(client)
    # Audited: each failure, and the refused attempt as a lockout.
    failures = AccessFailureLog.objects.filter(username=user.username).order_by("attempt_time")
    assert failures.count() == settings.AXES_FAILURE_LIMIT + 1
    assert [f.locked_out for f in failures][-1] is True
    # Another account is not locked by it.
    other = UserFactory(is_staff=True)
    client, response = _sign_in(url, other.username, PASSWORD, "10.9.9.10")
    assert response.status_code == 302 and _signed_in(client)


@pytest.mark.parametrize("url", LOGINS)
def test_an_address_locks_after_the_limit_whatever_the_usernames(url, settings):
    address = "192.0.2.7"
    statuses = [
        _sign_in(url, f"guess{n}", "wrong", address)[1].status_code
        for n in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]

    user = UserFactory(is_staff=True)
    client, response = _sign_in(url, user.username, PASSWORD, address)
    assert response.status_code == 429
    assert not _signed_in(client)
    # The same person from elsewhere is not locked out.
    client, response = _sign_in(url, user.username, PASSWORD, "192.0.2.8")
    assert response.status_code == 302 and _signed_in(client)


def test_a_forged_forwarded_for_does_not_change_the_counted_address(settings):
    """Without LIZA_NUM_PROXIES, X-Forwarded-For is the client's own words: ignored."""
    for n in range(settings.AXES_FAILURE_LIMIT):
        client = Client(REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
        client.post("/login/", {"username": f"guess{n}", "password": "wrong"})
    user = UserFactory()
    client = Client(REMOTE_ADDR="192.0.2.9", HTTP_X_FORWARDED_FOR="203.0.113.200")
    response = client.post("/login/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 429


def test_signing_in_to_an_own_account_between_guesses_resets_nothing(settings):
    """An attacker with an account of their own cannot wipe the counts by signing in to it."""
    victim, own = UserFactory(), UserFactory()
    address = "198.51.100.1"
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in("/login/", victim.username, "wrong", address)
        client, response = _sign_in("/login/", own.username, PASSWORD, address)
        assert response.status_code == 302 and _signed_in(client)
    _, response = _sign_in("/login/", victim.username, "wrong", address)
    assert response.status_code == 429
    client, response = _sign_in("/login/", victim.username, PASSWORD, "198.51.100.2")
    assert response.status_code == 429 and not _signed_in(client)
    # Every successful sign-in is in the access log.
    assert AccessLog.objects.filter(username=own.username).count() == (
        settings.AXES_FAILURE_LIMIT - 1
    )


def test_the_admin_shows_the_sign_in_audit_read_only(admin_client):
    _sign_in("/login/", "nobody", "wrong", "198.51.100.9")
    failure = AccessFailureLog.objects.get(username="nobody")
    attempt = AccessAttempt.objects.get(username="nobody")

    listing = admin_client.get(reverse("admin:axes_accessfailurelog_changelist"))
    assert listing.status_code == 200 and "nobody" in listing.content.decode()
    page = admin_client.get(reverse("admin:axes_accessfailurelog_change", args=[failure.pk]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    for model, pk in (("accessfailurelog", failure.pk), ("accesslog", None)):
        if pk is not None:
            delete = admin_client.post(
                reverse(f"admin:axes_{model}_delete", args=[pk]), {"post": "yes"}
            )
            assert delete.status_code == 403
        assert admin_client.get(reverse(f"admin:axes_{model}_add")).status_code == 403
    assert AccessFailureLog.objects.filter(pk=failure.pk).exists()
    # Deleting a failure counter is how staff unlock early.
    response = admin_client.post(
        reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not AccessAttempt.objects.filter(pk=attempt.pk).exists()


@pytest.mark.parametrize(
    ("password", "code"),
    [
        ("password123", "password_too_common"),
        ("48291057364", "password_entirely_numeric"),
        ("short", "password_too_short"),
    ],
)
def test_the_full_password_validator_set(password, code):
    with pytest.raises(ValidationError) as refused:
        pv.validate_password(password, User(username="someone"))
    assert code in {error.code for error in refused.value.error_list}


def test_the_demo_password_still_passes_the_validators():
    pv.validate_password(ADMIN_PASSWORD, User(username="admin"))
