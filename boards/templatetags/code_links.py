"""`{% code_link repo_url "commit" value %}`: a branch, commit or pull request as a link to the
code host when the project has a `repo_url`, else as code (boards.board.selectors.code_links)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from boards.board.selectors.code_links import code_url, task_branch

register = template.Library()


@register.simple_tag
def code_link(repo_url: str, kind: str, value: str, shown: str = "") -> SafeString | str:
    if not value:
        return "–"
    url = code_url(repo_url or "", kind, value)
    text = shown or value
    if url is None:
        return format_html("<code>{}</code>", text)
    return format_html(
        '<a class="code-link" href="{}" rel="noopener noreferrer"><code>{}</code></a>', url, text
    )


@register.filter
def branch_of(key: str) -> str:
    return task_branch(key)
