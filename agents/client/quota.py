"""Provider quota walls (issue 24): a coding CLI that prints its provider's usage- or rate-limit
message ends its session like any exit, and a supervisor restarting it every few seconds only
hits the same wall until its crash-loop count stops it. Here the supervisor recognises the
message (patterns per agent profile, plus LIZA_QUOTA_PATTERNS), reads the reset time the message
gives — or backs off when it gives none — and spawns nothing for that provider until then.

Patterns are keyed by profile name (the agent command's program name by default: `claude`,
`codex`, …; `generic` applies to every profile). LIZA_QUOTA_PATTERNS adds regular expressions,
one per line, for any profile.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# What a quota or rate-limit wall looks like, per profile (case-insensitive).
QUOTA_PATTERNS: dict[str, tuple[str, ...]] = {
    # Claude Code: "Claude AI usage limit reached|1749924000", "Claude usage limit reached. Your
    # limit will reset at 1pm (Etc/GMT+5)", "You've hit your session limit · resets 12:50am
    # (America/Los_Angeles)".
    "claude": (
        r"claude (ai )?usage limit reached",
        r"you've hit your (session|weekly|usage) limit",
        r"\brate_limit_error\b",
    ),
    # Codex CLI: "You've hit your usage limit. … try again in 2 hours" and its JSON error events.
    "codex": (
        r"you've hit your usage limit",
        r"usage_limit_reached",
        r"\brate limit (reached|exceeded)\b",
    ),
    "gemini": (r"quota exceeded", r"RESOURCE_EXHAUSTED"),
    "generic": (r"\b429 too many requests\b", r"\bquota (exceeded|reached)\b"),
}

BACKOFF_FIRST = 300.0  # seconds, when the message gives no reset time
BACKOFF_MAX = 3600.0

_EPOCH = re.compile(r"\|(\d{10})\b")
_IN = re.compile(
    r"(?:try again|retry|resets?) in (\d+(?:\.\d+)?)\s*(s|sec|seconds?|m|min|minutes?|h|hours?)\b",
    re.I,
)
_AT = re.compile(
    r"resets?(?: at)? (\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([\w/+\-]+)\))?",
    re.I,
)


def profile_of(command: list[str]) -> str:
    """The agent profile a command runs (LIZA_PROFILE, else its program's name)."""
    named = os.environ.get("LIZA_PROFILE")
    if named:
        return named
    return os.path.basename(command[0]) if command else "generic"


def patterns_for(profile: str) -> list[re.Pattern[str]]:
    sources = [*QUOTA_PATTERNS.get(profile, ()), *QUOTA_PATTERNS["generic"]]
    sources += [p for p in os.environ.get("LIZA_QUOTA_PATTERNS", "").splitlines() if p.strip()]
    return [re.compile(source, re.I) for source in sources]


def reset_time(line: str, now: datetime) -> datetime | None:
    """When the wall lifts, as the message says (UTC), or None when it says nothing usable."""
    if match := _EPOCH.search(line):
        at = datetime.fromtimestamp(int(match.group(1)), UTC)
        return at if at > now else None
    if match := _IN.search(line):
        amount, unit = float(match.group(1)), match.group(2).lower()
        seconds = amount * (3600 if unit.startswith("h") else 60 if unit.startswith("m") else 1)
        return now + timedelta(seconds=seconds)
    if match := _AT.search(line):
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        meridiem, zone = (match.group(3) or "").lower(), match.group(4)
        if meridiem:
            hour = hour % 12 + (12 if meridiem == "pm" else 0)
        if not (0 <= hour < 24 and 0 <= minute < 60):
            return None
        try:
            tz = ZoneInfo(zone) if zone else datetime.now().astimezone().tzinfo
        except (ZoneInfoNotFoundError, ValueError):
            tz = datetime.now().astimezone().tzinfo
        local = now.astimezone(tz)
        at = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if at <= local:
            at += timedelta(days=1)
        return at.astimezone(UTC)
    return None


@dataclass
class QuotaHit:
    provider: str
    line: str
    until: datetime
    from_message: bool  # the reset time came from the message (else a backoff)


class QuotaWatch:
    """Reads a run's output lines; `hit` is set by the first line that matches."""

    def __init__(self, profile: str, *, clock=lambda: datetime.now(UTC), backoffs: int = 0):
        self.profile = profile
        self._patterns = patterns_for(profile)
        self._clock = clock
        self._backoffs = backoffs  # walls in a row without a reset time, for the backoff
        self.hit: QuotaHit | None = None

    def line(self, text: str) -> bool:
        """True when this line is the provider's wall (the first one only)."""
        if self.hit is not None or not any(p.search(text) for p in self._patterns):
            return False
        now = self._clock()
        until = reset_time(text, now)
        from_message = until is not None
        if until is None:
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**self._backoffs)
            until = now + timedelta(seconds=delay)
        self.hit = QuotaHit(self.profile, text.strip()[:300], until, from_message)
        return True
