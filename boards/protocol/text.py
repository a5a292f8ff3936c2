"""Rules on text the protocol stores or shows: timestamps (seed 002), durations, secrets in URLs
(issue #27), addresses on the code host (issue 25).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit


# Seed 002 "Timestamp Format": ISO 8601 UTC with a Z suffix, to the second.
def format_timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: object) -> datetime:
    """Parse a state.yaml timestamp (YAML may already have made it a datetime).

    Raises ValueError for anything that is not an ISO-8601 instant.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        parsed = datetime.fromisoformat(text)
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def two_units(seconds: int, units: tuple[tuple[int, str], ...]) -> str:
    """A duration in its two largest units, the second zero-padded: "1 h 02 min", "3 min 05 s",
    "12 s" with `units` ((3600, " h"), (60, " min"), (1, " s")). `units` go from the largest to
    the second (size 1), each with the text written after its number."""
    counts = []
    rest = max(seconds, 0)
    for size, _ in units:
        count, rest = divmod(rest, size)
        counts.append(count)
    first = next((i for i, count in enumerate(counts) if count), len(units) - 1)
    text = f"{counts[first]}{units[first][1]}"
    if first + 1 < len(units):
        text += f" {counts[first + 1]:02d}{units[first + 1][1]}"
    return text


# -- secrets in URLs (issue #27) ---------------------------------------------------------------
# A webhook URL often carries its token (in the path, the query or the credentials). The event
# log, the delivery log, alerts and log lines show a URL only as `redact_url` leaves it: scheme,
# host and port. Only the config answer and the settings page show the whole URL, to admins.
SECRET_URL_SETTINGS: tuple[str, ...] = ("escalation_webhook",)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """`https://hooks.example.com/…` for `https://user:pw@hooks.example.com/T0/B0/xyz?t=1`."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "…"
    if not parts.scheme or not host:
        return "…"
    netloc = f"[{host}]" if ":" in host else host
    netloc = f"{netloc}:{port}" if port else netloc
    credentials = "…@" if "@" in parts.netloc else ""
    rest = "" if parts.path in ("", "/") and not parts.query and not parts.fragment else "/…"
    return f"{parts.scheme}://{credentials}{netloc}{rest}"


def redact_urls(text: str) -> str:
    """Every URL inside `text` (an error message, a log line) redacted."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def config_change_detail(changes: dict[str, object]) -> str:
    """A `config_updated` event's one-line detail from its `changes` ({name: {old, new}}): a
    secret-bearing URL only as "changed", so the line is the same for every reader (the live
    activity feed renders it once for all)."""
    parts = []
    for name, change in changes.items():
        if name in SECRET_URL_SETTINGS:
            parts.append(f"{name} changed")
        elif isinstance(change, dict):
            parts.append(f"{name} {change.get('old') or 'none'} → {change.get('new') or 'none'}")
        else:
            parts.append(f"{name} {change}")
    return ", ".join(parts)


def config_changes_shown(changes: dict[str, object], *, admin: bool) -> dict[str, object]:
    """A `config_updated` event's `changes` for one reader: admins see a webhook's URLs redacted
    (scheme, host, port), everyone else that it "changed"."""
    shown: dict[str, object] = {}
    for name, change in changes.items():
        if name in SECRET_URL_SETTINGS:
            if admin and isinstance(change, dict):
                change = {k: redact_url(str(v or "")) for k, v in change.items()}
            else:
                change = "changed"
        shown[name] = change
    return shown


# -- links to the code host (issue 25) ---------------------------------------------------------

# What a `repo_url` template may name; a plain repository address is read by its host instead
# (boards.board.selectors.code_links).
REPO_URL_PLACEHOLDERS = ("branch", "commit", "pr")


def pr_url_problem(value: object) -> str | None:
    """Why `value` is not a pull request's address (http(s), a host, at most 500 characters, no
    space), or None (blank is none): what a coder may report with its submission (issue 25)."""
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    if not isinstance(value, str) or len(value) > PR_URL_MAX_LENGTH:
        return f"an address of at most {PR_URL_MAX_LENGTH} characters"
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() or ord(c) < 32 for c in value)
    ):
        return "an http:// or https:// address"
    return None


PR_URL_MAX_LENGTH = 500


def repo_url_problem(value: object) -> str | None:
    """Why `value` is not a repository address or URL template, or None (blank is none)."""
    import re
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    if not isinstance(value, str) or len(value) > 500:
        return "an address of at most 500 characters"
    shown = re.sub(r"\{(?:" + "|".join(REPO_URL_PLACEHOLDERS) + r")\}", "x", value)
    if "{" in shown or "}" in shown:
        return "the only placeholders are {branch}, {commit} and {pr}"
    parts = urlsplit(shown)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() for c in value)
    ):
        return "an http:// or https:// address"
    return None
