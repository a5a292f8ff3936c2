"""What a submission changed (issue 25): the coder's side uploads a bounded summary with the
submit, it is stored with the round, and the drawer shows each round's files and diff; and the
pull request a coder may report with it, an optional http(s) address kept on the task across
rounds, shown as a link on the card and in the drawer."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import ChangeSummary
from boards.coordination.services.tasks.work import task_submit_for_review
from boards.errors import ProtocolValidationError
from tests.api.helpers import agent_client, api_base, http_start
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

PR = "https://github.com/acme/shop/pull/42"

DIFF = (
    "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n one\n"
    "-old\n+new <script>\n"
)
SUMMARY = {
    "files": [{"path": "app.py", "added": 1, "deleted": 1}, {"path": "logo.png", "added": -1,
              "deleted": -1}],
    "diff": DIFF,
    "truncated": True,
}  # fmt: skip


@pytest.fixture
def world():
    world = World(now=http_start())
    world.claimed("T-1")
    return world


def _submit(world, body):
    return agent_client(world.coder).post(
        f"{api_base(world.project.slug)}/tasks/T-1/request-review",
        {"review_commit": "c0ffee01", "tree_clean": True, **body},
        format="json",
    )


def test_a_submission_stores_its_change_summary_with_the_round(world):
    response = _submit(world, {"change_summary": SUMMARY})
    assert response.status_code == 200, response.json()
    [stored] = ChangeSummary.objects.filter(task=world.task("T-1"))
    assert (stored.review_commit, stored.iteration, stored.truncated) == ("c0ffee01", 1, True)
    assert stored.files == SUMMARY["files"] and stored.diff == DIFF


def test_a_submission_without_one_is_as_before(world):
    assert _submit(world, {}).status_code == 200
    assert not ChangeSummary.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        {**SUMMARY, "files": [{"path": "a", "added": 1, "deleted": 0}] * 301},
        {**SUMMARY, "diff": "x" * 60_001},
        {**SUMMARY, "files": [{"path": "a", "added": -2, "deleted": 0}]},
        {**SUMMARY, "extra": 1},
        {"diff": "no files"},
    ],
    ids=["too many files", "diff too long", "negative count", "unknown field", "no files"],
)
def test_an_oversized_or_malformed_summary_is_a_400_and_nothing_moves(world, bad):
    response = _submit(world, {"change_summary": bad})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert world.task("T-1").status == "CLAIMED"
    assert not ChangeSummary.objects.exists()


def test_the_drawer_shows_each_rounds_files_and_highlighted_diff(world):
    assert _submit(world, {"change_summary": SUMMARY}).status_code == 200
    client = Client()
    client.force_login(world.admin)
    html = client.get(f"/p/{world.project.slug}/tasks/T-1/").content.decode()
    assert "<h3>What changed</h3>" in html
    assert '<td class="path">app.py</td><td class="added">+1</td>' in html
    assert '<td colspan="2">binary</td>' in html
    assert '<span class="diff-add">+new &lt;script&gt;</span>' in html  # escaped
    assert '<span class="diff-del">-old</span>' in html
    assert '<span class="diff-hunk">@@ -1 +1,2 @@</span>' in html
    assert "diff-truncated" in html


# -- the pull request


def test_a_submission_reports_its_pull_request(world):
    response = _submit(world, {"pr_url": PR})
    assert response.status_code == 200, response.json()
    assert response.json()["task"]["pr_url"] == PR
    assert world.task("T-1").pr_url == PR
    event = Event.objects.filter(task=world.task("T-1"), action="ready_for_review").get()
    assert event.data["pr_url"] == PR


def test_a_later_round_without_one_keeps_the_last_reported(world):
    assert _submit(world, {"pr_url": PR}).status_code == 200
    world.claim_review("T-1")
    world.verdict("T-1", "REJECTED")
    world.claim("T-1")
    assert _submit(world, {}).status_code == 200
    assert world.task("T-1").pr_url == PR


@pytest.mark.parametrize(
    "bad",
    [
        "javascript:alert(1)",
        "ftp://example.com/pr/1",
        "github.com/acme/shop/pull/42",
        "https://",
        "https://example.com/" + "x" * 500,
        "https://example.com/a b",
    ],
    ids=["javascript", "ftp", "no scheme", "no host", "too long", "space"],
)
def test_a_bad_address_is_a_400_and_nothing_moves(world, bad):
    response = _submit(world, {"pr_url": bad})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert "pr_url" in str(response.json()["error"])
    assert world.task("T-1").status == "CLAIMED"
    assert world.task("T-1").pr_url == ""


def test_the_service_refuses_a_bad_address_itself(world):
    with pytest.raises(ProtocolValidationError):
        task_submit_for_review(
            task=world.task("T-1"),
            agent=world.coder,
            review_commit="c0ffee01",
            now=world.now,
            pr_url="javascript:alert(1)",
        )
    assert world.task("T-1").status == "CLAIMED"


def test_the_card_and_the_drawer_link_to_it(world):
    assert _submit(world, {"pr_url": PR}).status_code == 200
    client = Client()
    client.force_login(world.admin)
    board = client.get(f"/p/{world.project.slug}/").content.decode()
    assert f'<a class="pr-link" href="{PR}"' in board
    drawer = client.get(f"/p/{world.project.slug}/tasks/T-1/").content.decode()
    assert "<dt>Pull request</dt>" in drawer
    assert f'<a class="pr-link" href="{PR}"' in drawer
