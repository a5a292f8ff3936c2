"""Where a branch, a commit or a pull request lives on the code host (issue 25): the one rule
that turns the project's `repo_url` into links, for the drawer and the cards."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from boards.protocol import REPO_URL_PLACEHOLDERS

# Paths under a repository's address, per host family: (branch, commit, pull request).
_GITHUB = ("tree/{branch}", "commit/{commit}", "pull/{pr}")
_GITLAB = ("-/tree/{branch}", "-/commit/{commit}", "-/merge_requests/{pr}")
_GITEA = ("src/branch/{branch}", "commit/{commit}", "pulls/{pr}")


def task_branch(key: str) -> str:
    """The branch a task's work is on (`liza supervise`'s worktrees: agents.client.gitops)."""
    return f"task/{key}"


def code_url(repo_url: str, kind: str, value: str) -> str | None:
    """The address of `value` (a branch name, a commit, a pull request number) of `kind`
    ("branch", "commit", "pr") under `repo_url`, or None when there is nothing to link.

    A template names its placeholders ({branch}, {commit}, {pr}); a kind it does not name has
    no link. A plain address is read by its host: github… → GitHub, gitlab… → GitLab, any
    other → Gitea's (and Forgejo's) paths.
    """
    if not repo_url or not value or kind not in REPO_URL_PLACEHOLDERS:
        return None
    if "{" in repo_url:
        template = repo_url
    else:
        base = repo_url.rstrip("/").removesuffix(".git")
        host = (urlsplit(base).hostname or "").lower()
        family = _GITHUB if "github" in host else _GITLAB if "gitlab" in host else _GITEA
        template = f"{base}/{family[REPO_URL_PLACEHOLDERS.index(kind)]}"
    placeholder = "{" + kind + "}"
    if placeholder not in template:
        return None
    url = template.replace(placeholder, quote(value, safe="/"))
    if any("{" + other + "}" in url for other in REPO_URL_PLACEHOLDERS):
        return None  # a template that needs more than this one value
    return url
