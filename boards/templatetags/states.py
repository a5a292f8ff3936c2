"""`{{ status|breakable }}`: a state name that wraps at its underscores in a narrow column
(READY_FOR_ / REVIEW), not in the middle of a word (READY_FOR_REV / IEW)."""

from __future__ import annotations

import re
from datetime import datetime

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def breakable(name: object) -> SafeString:
    # <wbr>: a line may break here; the text (and so textContent, copy, screen readers) is
    # unchanged.
    return mark_safe(escape(str(name)).replace("_", "_<wbr>"))  # escaped first


def duration_text(seconds: float) -> str:
    """A duration as people read it: "45 s", "12 min", "2 h 56 min", "3 d 4 h" (issue 25)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


@register.filter
def age_at(since: datetime | None, now: datetime | None) -> str:
    """How long ago `since` was at `now` (the moment the page is drawn), e.g. "2 h 56 min"."""
    if since is None or now is None:
        return ""
    return duration_text((now - since).total_seconds())


@register.filter
def duration(seconds: float | None) -> str:
    """`{{ seconds|duration }}`: "2 h 56 min" rather than "10586 s" (issue 25)."""
    return "" if seconds is None else duration_text(float(seconds))


_DIFF_KINDS = (("+++", "meta"), ("---", "meta"), ("@@", "hunk"), ("+", "add"), ("-", "del"))


@register.filter
def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs, for the drawer's highlighting: "add", "del",
    "hunk", "meta" (file headers) or "ctx"."""
    lines = []
    for line in (diff or "").splitlines():
        kind = "ctx"
        if line.startswith("diff --git") or line.startswith("index "):
            kind = "meta"
        else:
            kind = next((k for prefix, k in _DIFF_KINDS if line.startswith(prefix)), "ctx")
        lines.append((kind, line))
    return lines


@register.filter
def state_label(name: object) -> str:
    """A state as people say it: READY_FOR_REVIEW → "Ready for review" (issue 25); pages keep
    the raw name in a tooltip."""
    text = str(name).replace("_", " ").lower()
    return text[:1].upper() + text[1:]


# The drawer's field labels (issue 25: snake_case read as code).
FIELD_LABELS = {
    "spec_ref": "Spec",
    "done_when": "Done when",
    "depends_on": "Depends on",
    "assigned_to": "Assigned to",
    "lease_expires": "Lease expires",
    "base_commit": "Base commit",
    "review_commit": "Review commit",
    "merge_commit": "Merge commit",
    "pr_url": "Pull request",
    "approved_by": "Approved by",
    "rejection_reason": "Rejection reason",
    "blocked_reason": "Blocked because",
    "blocked_questions": "Questions",
    "failed_by": "Failed by",
    "superseded_by": "Superseded by",
    "rescope_reason": "Rescope reason",
    "integration_fix": "Integration fix",
    "handoff_pending": "Handoff pending",
    "next_action": "Next action",
}


@register.filter
def field_label(name: str) -> str:
    return FIELD_LABELS.get(name, name.replace("_", " ").capitalize())


_SOFT_BREAK = re.compile(r"([._/(:,=-])(?=\w)")


@register.filter
def soft_breaks(text: object) -> SafeString:
    """`{{ text|soft_breaks }}`: a line may break after `.`, `_`, `/`, `(` … inside a long word
    (OrderAPI.<wbr>create_<wbr>order()), so a narrow card wraps an identifier where a person
    would rather than mid-name (issue 25)."""
    return mark_safe(_SOFT_BREAK.sub(r"\1<wbr>", escape(str(text))))  # escaped first
