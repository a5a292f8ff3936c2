import pytest
from rest_framework.test import APIClient

from agents.services import agent_key_issue
from boards.coordination.services.actors import SYSTEM


@pytest.mark.django_db
def test_a_coder_claims_and_submits_over_http(world):
    world.unclaimed("task-1")
    _, plain = agent_key_issue(actor=SYSTEM, agent=world.coder, now=world.now)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plain}")
    base = f"/api/v1/projects/{world.project.slug}"
    r = client.post(f"{base}/tasks/claim-next", {"base_commit": "abc123"}, format="json")
    assert r.status_code == 200, r.json()
    assert r.json()["task"]["key"] == "task-1"
    assert r.json()["task"]["status"] == "CLAIMED"
    r = client.post(
        f"{base}/tasks/task-1/request-review",
        {"review_commit": "def456", "tree_clean": True},
        format="json",
    )
    assert r.status_code == 200, r.json()
    assert r.json()["task"]["status"] == "READY_FOR_REVIEW"
    r = client.post(
        f"{base}/tasks/task-1/request-review",
        {"review_commit": "def456", "tree_clean": True},
        format="json",
    )
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "invalid_transition"
    assert r.json()["error"]["details"]["allowed"] == ["APPROVED", "REJECTED"]
    r = client.get(f"{base}/tasks/task-1")
    assert r.status_code == 200
    assert [e["action"] for e in r.json()["history"]][-1] == "submit_for_review_failed"
    r = APIClient().get(f"{base}/tasks")
    assert r.status_code in (401, 403)
    assert "error" in r.json()
