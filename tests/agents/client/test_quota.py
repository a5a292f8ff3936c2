"""Issue 24: a provider's quota or rate-limit message is recognised per profile and its reset
time read (an epoch, "try again in", "resets at 1pm (zone)"), else a doubling backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.client.quota import BACKOFF_FIRST, QuotaWatch, profile_of, reset_time

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Claude AI usage limit reached|1767618000", datetime(2026, 1, 5, 13, 0, tzinfo=UTC)),
        ("You've hit your usage limit. Try again in 2 hours.", NOW + timedelta(hours=2)),
        ("rate limited, retry in 90 seconds", NOW + timedelta(seconds=90)),
        (
            "You've hit your session limit · resets 2:05pm (Etc/UTC)",
            datetime(2026, 1, 5, 14, 5, tzinfo=UTC),
        ),
        (  # 11am has passed today: tomorrow's
            "Claude usage limit reached. Your limit will reset at 11am (Etc/UTC)",
            datetime(2026, 1, 6, 11, 0, tzinfo=UTC),
        ),
        ("Claude AI usage limit reached", None),
    ],
)
def test_the_reset_time_the_message_gives(line, expected):
    assert reset_time(line, NOW) == expected


def test_patterns_per_profile_and_from_the_environment(monkeypatch):
    claude = QuotaWatch("claude", clock=lambda: NOW)
    assert not claude.line("compiling the parser")
    assert claude.line("Claude AI usage limit reached|1767618000")
    assert claude.hit.until == datetime(2026, 1, 5, 13, 0, tzinfo=UTC) and claude.hit.from_message
    assert not claude.line("Claude AI usage limit reached|1767618000")  # the first one only
    # Another profile's words are not this one's wall; the generic ones are everybody's.
    assert not QuotaWatch("codex").line("Claude AI usage limit reached")
    assert QuotaWatch("codex").line("HTTP 429 Too Many Requests")
    monkeypatch.setenv("LIZA_QUOTA_PATTERNS", "out of credits\nbudget exhausted")
    assert QuotaWatch("fake").line("Sorry: out of credits")


def test_no_reset_time_backs_off_doubling():
    first = QuotaWatch("claude", clock=lambda: NOW)
    first.line("Claude AI usage limit reached")
    assert first.hit.until == NOW + timedelta(seconds=BACKOFF_FIRST)
    assert not first.hit.from_message
    third = QuotaWatch("claude", clock=lambda: NOW, backoffs=2)
    third.line("Claude AI usage limit reached")
    assert third.hit.until == NOW + timedelta(seconds=4 * BACKOFF_FIRST)


def test_the_profile_is_the_programs_name_unless_named(monkeypatch):
    monkeypatch.delenv("LIZA_PROFILE", raising=False)
    assert profile_of(["/usr/local/bin/claude", "-p"]) == "claude"
    monkeypatch.setenv("LIZA_PROFILE", "codex")
    assert profile_of(["/usr/bin/python3", "fake.py"]) == "codex"
