"""Links to the code host (issue 25): one rule from `repo_url` to a branch, commit or PR
address (boards.board.selectors.code_links), and what `repo_url` may be
(protocol.repo_url_problem)."""

from __future__ import annotations

import pytest

from boards import protocol as p
from boards.board.selectors.code_links import code_url

GH, GL, GT = (
    "https://github.com/acme/shop",
    "https://gitlab.com/acme/shop",
    "https://git.acme.io/acme/shop",
)

LINKS = [
    (GH, "branch", "task/T-1", "https://github.com/acme/shop/tree/task/T-1"),
    (GH + ".git", "commit", "c0ffee01", "https://github.com/acme/shop/commit/c0ffee01"),
    (GH + "/", "pr", "12", "https://github.com/acme/shop/pull/12"),
    (GL, "branch", "task/T-1", "https://gitlab.com/acme/shop/-/tree/task/T-1"),
    (GL, "commit", "c0ffee01", "https://gitlab.com/acme/shop/-/commit/c0ffee01"),
    (GL, "pr", "12", "https://gitlab.com/acme/shop/-/merge_requests/12"),
    (GT, "branch", "task/T-1", "https://git.acme.io/acme/shop/src/branch/task/T-1"),
    (GT, "commit", "c0ffee01", "https://git.acme.io/acme/shop/commit/c0ffee01"),
    (GT, "pr", "12", "https://git.acme.io/acme/shop/pulls/12"),
    ("https://cgit.acme.io/shop/commit/?id={commit}", "commit", "c0ffee01",
     "https://cgit.acme.io/shop/commit/?id=c0ffee01"),
    ("https://cgit.acme.io/shop/commit/?id={commit}", "branch", "task/T-1", None),
    ("https://x.io/{branch}/{commit}", "commit", "c0ffee01", None),  # needs both
    (GH, "branch", "task/a b?#", "https://github.com/acme/shop/tree/task/a%20b%3F%23"),
    ("", "commit", "c0ffee01", None),
    (GH, "commit", "", None),
    (GH, "tag", "v1", None),
]  # fmt: skip


@pytest.mark.parametrize(("repo_url", "kind", "value", "url"), LINKS)
def test_code_url(repo_url, kind, value, url):
    assert code_url(repo_url, kind, value) == url


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", None),
        (GH, None),
        ("http://git.local/acme/shop", None),
        ("https://x.io/c/{commit}?b={branch}&p={pr}", None),
        ("javascript:alert(1)", "http"),
        ("ftp://x.io/repo", "http"),
        ("//x.io/repo", "http"),
        ("https://x.io/{sha}", "placeholders"),
        ("https://x.io/{commit", "placeholders"),
        ("https://x.io/a b", "http"),
        ("https://" + "x" * 500, "500"),
        (["https://x.io"], "500"),
    ],
)
def test_what_a_repo_url_may_be(value, problem):
    found = p.repo_url_problem(value)
    assert (found is None) if problem is None else (problem in found)
