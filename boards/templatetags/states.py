"""`{{ status|breakable }}`: a state name that wraps at its underscores in a narrow column
(READY_FOR_ / REVIEW), not in the middle of a word (READY_FOR_REV / IEW)."""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def breakable(name: object) -> SafeString:
    # <wbr>: a line may break here; the text (and so textContent, copy, screen readers) is
    # unchanged.
    return mark_safe(escape(str(name)).replace("_", "_<wbr>"))  # escaped first
