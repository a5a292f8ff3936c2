"""Human oversight over HTTP (SPEC §7): what each oversight endpoint does and refuses.

The role matrix of these endpoints is in test_role_matrix.py, one table for the whole API (its
guard fails when an endpoint is missing): anonymous, revoked and unknown keys → 401; an agent
key or a human of another project — even an admin there — → 404, exactly like a missing
object; viewer / member / admin → the endpoint's answer for that role; an agent key of the
project → 403 on every human-only action; a refused request changes nothing, the project's
pause and config included (helpers.domain_snapshot).
"""

from __future__ import annotations

from typing import Any

import pytest

from boards.api import urls as api_urls
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services import records, sprints, tasks
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    assert_field_error,
    assert_valid,
    csrf_pair,
    domain_snapshot,
    session_client,
)
from tests.api.test_role_matrix import Tenant, sprint_open

pytestmark = pytest.mark.django_db


def immediate_discovery(t: Tenant) -> dict[str, str]:
    records.discovery_create(
        project=t.project,
        actor=t.world.coder,
        description="No idempotency keys",
        severity="high",
        urgency="immediate",
        now=t.world.tick(),
    )
    return {"disc_id": "disc-1"}


def at_checkpoint(t: Tenant) -> None:
    sprint_open(t)
    sprints.sprint_checkpoint(
        sprint=Sprint.objects.get(project=t.project),
        actor=t.world.admin,
        reason="Deadline",
        now=t.world.tick(),
    )


REASON = {"reason": "Stuck for an hour"}


def test_the_role_matrix_holds_every_oversight_endpoint_and_refuses_agents_there():
    """The matrix rows of these endpoints (test_role_matrix.py) say what the issue asks: only
    humans act — an agent key of the project gets 403 — and the config is readable by all."""
    from tests.api.test_role_matrix import ENDPOINTS

    rows = {(e.name, e.method): e for e in ENDPOINTS}
    oversight = {
        "api-inbox",
        "api-release-claim",
        "api-cancel",
        "api-suspend",
        "api-resume",
        "api-approve",
        "api-reject",
        "api-limits",
        "api-sprint-checkpoint",
        "api-sprint-continue",
        "api-sprint-abort",
        "api-sprint-deadline",
        "api-project-pause",
        "api-project-resume",
        "api-goal-abort",
        "api-config",
        "api-notes",
        "api-discovery-triage",
        "api-agent-disable",
        "api-agent-enable",
    }
    routes = [
        (pattern.name, method.upper())
        for pattern in api_urls.urlpatterns
        if pattern.name in oversight
        for method in ("get", "post", "put", "patch")
        if hasattr(pattern.callback.view_class, method)
    ]
    assert len(routes) == 21
    for route in routes:
        row = rows[route]
        assert row.expected("outsider") == (404, "not_found"), route
        if route == ("api-config", "GET"):
            assert row.is_read
            continue
        assert row.right is None, route
        assert row.expected("wrong_role") == (403, "permission_denied"), route
        assert row.expected("viewer") == (403, "permission_denied"), route
        assert row.expected("admin") == (row.ok, None), route


# -- CSRF: humans act by session -----------------------------------------------------------------


def test_an_oversight_write_by_session_needs_the_csrf_token():
    t = Tenant()
    t.world.unclaimed("t1")
    client = session_client(t.users["admin"], enforce_csrf_checks=True)
    url = f"{api_base(t.slug)}/tasks/t1/suspend"
    before = domain_snapshot(t.project)
    error = assert_envelope(client.post(url, REASON, format="json"), 403, "permission_denied")
    assert "CSRF" in error["message"]
    assert domain_snapshot(t.project) == before
    secret, token = csrf_pair()
    client.cookies["csrftoken"] = secret
    response = client.post(url, REASON, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200, response.json()
    assert t.world.task("t1").is_suspended


# -- what the endpoints do and refuse ------------------------------------------------------------


def _admin(t: Tenant):
    return session_client(t.users["admin"])


def test_the_human_gate_over_http():
    t = Tenant()
    t.world.ready_for_review("t1", criticality="security-sensitive")
    admin, base = _admin(t), api_base(t.slug)
    # Not awaiting yet: the reviewers have not approved.
    before = domain_snapshot(t.project)
    assert_envelope(client_post(admin, f"{base}/tasks/t1/approve", {}), 409, "conflict")
    assert domain_snapshot(t.project) == before
    t.world.claim_review("t1", "code-reviewer-1")
    t.world.claim_review("t1", "code-reviewer-3")
    t.world.verdict("t1", "APPROVED", reviewer="code-reviewer-1")
    t.world.verdict("t1", "APPROVED", reviewer="code-reviewer-3")

    task = admin.get(f"{base}/tasks/t1").json()
    assert (task["status"], task["needs_human_approval"], task["awaiting_human_approval"]) == (
        "READY_FOR_REVIEW",
        True,
        True,
    )
    inbox = admin.get(f"{base}/inbox").json()
    assert [i["key"] for i in inbox["awaiting_approval"]] == ["t1"]
    # The approving reviewer cannot merge before the human approved.
    merge = agent_client(t.agent("code-reviewer-3")).post(
        f"{base}/tasks/t1/merge", {"merge_commit": "merge001"}, format="json"
    )
    assert_envelope(merge, 409, "invalid_transition")

    response = client_post(admin, f"{base}/tasks/t1/approve", {"note": "Reviewed the auth flow"})

    assert response.status_code == 200, response.json()
    assert response.json()["task"]["status"] == "APPROVED"
    assert response.json()["task"]["awaiting_human_approval"] is False
    merge = agent_client(t.agent("code-reviewer-3")).post(
        f"{base}/tasks/t1/merge", {"merge_commit": "merge001"}, format="json"
    )
    assert merge.status_code == 200, merge.json()
    assert_valid(t.slug)


def client_post(client, url: str, body: Any):
    return client.post(url, body, format="json")


def test_a_suspended_task_is_refused_to_coders_and_its_holder_exits_42():
    t = Tenant()
    t.world.claimed("t1")
    admin, base = _admin(t), api_base(t.slug)
    coder = agent_client(t.agent("coder-1"))

    response = client_post(admin, f"{base}/tasks/t1/suspend", {"reason": "Spec under review"})

    assert response.status_code == 200, response.json()
    assert response.json()["task"]["status"] == "UNCLAIMED"
    beat = coder.post(f"{base}/agents/heartbeat", {}, format="json")
    assert assert_envelope(beat, 409, "lease_lost")["details"]["exit"] == 42
    claim = agent_client(t.agent("coder-2")).post(
        f"{base}/tasks/t1/claim", {"base_commit": "base0002"}, format="json"
    )
    assert assert_envelope(claim, 409, "conflict")["details"]["suspended"] is True
    assert_envelope(client_post(admin, f"{base}/tasks/t1/suspend", REASON), 409, "conflict")
    assert client_post(admin, f"{base}/tasks/t1/resume", None).status_code == 200
    assert_envelope(client_post(admin, f"{base}/tasks/t1/resume", None), 409, "conflict")
    assert_valid(t.slug)


def test_pause_answers_agents_with_exit_42():
    t = Tenant()
    t.world.unclaimed("t1")
    admin, base = _admin(t), api_base(t.slug)
    coder = agent_client(t.agent("coder-1"))
    assert client_post(admin, f"{base}/project/pause", {"reason": "Budget"}).status_code == 200

    claim = coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")

    assert assert_envelope(claim, 409, "paused")["details"]["exit"] == 42
    assert coder.post(f"{base}/agents/heartbeat", {}, format="json").json()["exit"] == 42
    assert_envelope(client_post(admin, f"{base}/project/pause", REASON), 409, "conflict")
    assert client_post(admin, f"{base}/project/resume", None).status_code == 200
    assert_envelope(client_post(admin, f"{base}/project/resume", None), 409, "conflict")
    claim = coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")
    assert claim.json()["task"]["key"] == "t1"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"priority": 9}, "priority"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iteration": 3}, "max_iteration"),
        ({}, "limits"),
    ],
)
def test_bad_limits_are_a_400_naming_the_field(body, field):
    t = Tenant()
    t.world.unclaimed("t1")
    before = domain_snapshot(t.project)
    response = _admin(t).patch(f"{api_base(t.slug)}/tasks/t1/limits", body, format="json")
    assert_field_error(response, field)
    assert domain_snapshot(t.project) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"lease_duration": 30}, "lease_duration"),  # not longer than heartbeat_interval
        ({"max_review_cycles": 0}, "max_review_cycles"),
        ({"watch_interval": 0}, "watch_interval"),  # the watcher needs a pause between sweeps
        ({"escalation_webhook": "not a url"}, "escalation_webhook"),
        ({"lease_duraton": 600}, "lease_duraton"),
        ({}, "config"),
        ({"wip_limits": {"MERGED": 3}}, "wip_limits"),  # terminal columns have none
        ({"wip_limits": {"CLAIMED": 0}}, "wip_limits"),
        ({"wip_limits": {"CLAIMED": "many"}}, "wip_limits"),
        ({"wip_limits": [3]}, "wip_limits"),
        ({"retry_backoff": [5, 0]}, "retry_backoff"),
        ({"retry_backoff": "5,30"}, "retry_backoff"),
        ({"state_timeouts": {"CLAIMED": {"seconds": -1}}}, "state_timeouts"),
        ({"state_timeouts": {"MERGED": {"seconds": 60}}}, "state_timeouts"),
    ],
)
def test_bad_config_is_a_400_naming_the_field(body, field):
    t = Tenant()
    before = domain_snapshot(t.project)
    response = _admin(t).patch(f"{api_base(t.slug)}/config", body, format="json")
    assert_field_error(response, field)
    assert domain_snapshot(t.project) == before


def test_the_watch_interval_is_a_config_setting():
    t = Tenant()
    url = f"{api_base(t.slug)}/config"
    assert _admin(t).get(url).json()["watch_interval"] == 10  # the original watcher's 10 s
    response = _admin(t).patch(url, {"watch_interval": 3}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["watch_interval"] == 3
    assert config_of(Project.objects.get(pk=t.project.pk)).watch_interval == 3


def test_wip_limits_are_an_advisory_config_setting():
    """Issue #13: display only; they are config, edited and audited like any other setting."""
    t = Tenant()
    url = f"{api_base(t.slug)}/config"
    assert _admin(t).get(url).json()["wip_limits"] == {}
    response = _admin(t).patch(url, {"wip_limits": {"CLAIMED": 2}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["wip_limits"] == {"CLAIMED": 2}
    assert config_of(Project.objects.get(pk=t.project.pk)).wip_limits == {"CLAIMED": 2}


def test_retry_backoff_and_state_timeouts_are_config_settings():
    t = Tenant()
    url = f"{api_base(t.slug)}/config"
    assert _admin(t).get(url).json()["retry_backoff"] == [5, 30, 120]  # seed 003
    assert _admin(t).get(url).json()["state_timeouts"] == {}
    budgets = {"CLAIMED": {"seconds": 3600, "action": "block", "reason": "too long"}}
    response = _admin(t).patch(
        url, {"retry_backoff": [10, 60], "state_timeouts": budgets}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert (response.json()["retry_backoff"], response.json()["state_timeouts"]) == (
        [10, 60],
        budgets,
    )
    config = config_of(Project.objects.get(pk=t.project.pk))
    assert (config.retry_backoff, config.state_timeouts) == ([10, 60], budgets)


def test_converting_a_discovery_needs_an_admin():
    t = Tenant()
    immediate_discovery(t)
    url = f"{api_base(t.slug)}/discoveries/disc-1/triage"
    body = {"decision": "convert", "task": {"key": "t-idem", "priority": 2}}
    before = domain_snapshot(t.project)
    member = session_client(t.users["member"])
    assert_envelope(client_post(member, url, body), 403, "permission_denied")
    assert_field_error(client_post(_admin(t), url, {"decision": "convert"}), "task")
    assert domain_snapshot(t.project) == before

    response = client_post(_admin(t), url, body)

    assert response.status_code == 200, response.json()
    assert (response.json()["triage"], response.json()["converted_to_task"]) == (
        "converted",
        "t-idem",
    )
    task = Task.objects.get(project=t.project, key="t-idem")
    assert (task.status, task.description, task.priority) == ("DRAFT", "No idempotency keys", 2)
    assert_envelope(client_post(_admin(t), url, body), 409, "conflict")
    assert (
        client_post(_admin(t), f"{api_base(t.slug)}/discoveries/disc-9/triage", body).status_code
        == 404
    )
    assert_valid(t.slug)


def test_a_disabled_agent_gets_403_and_its_task_goes_back_to_the_queue():
    t = Tenant()
    t.world.claimed("t1")
    base = api_base(t.slug)
    coder = agent_client(t.agent("coder-1"))

    response = client_post(_admin(t), f"{base}/agents/coder-1/disable", None)

    assert response.status_code == 200, response.json()
    assert t.world.task("t1").status == "UNCLAIMED"
    assert_envelope(
        coder.post(f"{base}/agents/heartbeat", {}, format="json"), 403, "permission_denied"
    )
    assert_envelope(client_post(_admin(t), f"{base}/agents/coder-1/disable", None), 409, "conflict")
    claim = agent_client(t.agent("coder-2")).post(
        f"{base}/tasks/claim-next", {"base_commit": "b2"}, format="json"
    )
    assert claim.json()["task"]["key"] == "t1"
    assert_valid(t.slug)


def test_the_sprint_endpoints_need_an_open_sprint_and_a_future_deadline():
    t = Tenant()
    admin, base = _admin(t), api_base(t.slug)
    assert_envelope(client_post(admin, f"{base}/sprint/checkpoint", REASON), 404, "not_found")
    sprint_open(t)
    past = {"deadline": "2000-01-01T00:00:00Z"}
    assert_field_error(admin.put(f"{base}/sprint/deadline", past, format="json"), "deadline")
    cleared = admin.put(f"{base}/sprint/deadline", {"deadline": None}, format="json")
    assert cleared.status_code == 200 and cleared.json()["deadline"] is None
    # Continuing a sprint that is not at CHECKPOINT is an invalid transition.
    continued = client_post(admin, f"{base}/sprint/continue", {"decision": "Go on"})
    assert_envelope(continued, 409, "invalid_transition")


def test_release_claim_and_cancel_refuse_what_they_cannot_do():
    t = Tenant()
    t.world.merged("t1")
    t.world.unclaimed("t2")
    admin, base = _admin(t), api_base(t.slug)
    before = domain_snapshot(t.project)
    assert_envelope(client_post(admin, f"{base}/tasks/t2/release-claim", REASON), 409, "conflict")
    assert_envelope(
        client_post(admin, f"{base}/tasks/t1/cancel", REASON), 409, "invalid_transition"
    )
    assert_field_error(client_post(admin, f"{base}/tasks/t2/cancel", {}), "reason")
    # Refused attempts are logged as rejected events; the applied log and the rows are unchanged.
    assert domain_snapshot(t.project) == before


def test_a_note_for_the_project_needs_no_task():
    t = Tenant()
    member = session_client(t.users["member"])
    response = client_post(member, f"{api_base(t.slug)}/notes", {"message": "Freeze on Friday"})
    assert response.status_code == 201, response.json()
    assert response.json()["task"] is None
    assert_field_error(
        client_post(member, f"{api_base(t.slug)}/notes", {"message": "x", "task": "nope"}), "task"
    )


def test_the_inbox_reports_limit_blocked_tasks_and_checkpoints():
    t = Tenant()
    t.world.rejected("t0", max_review_cycles=1)  # one rejection: review_deadlock
    at_checkpoint(t)
    body = _admin(t).get(f"{api_base(t.slug)}/inbox").json()
    (blocked,) = body["blocked"]
    assert (blocked["key"], blocked["limit_blocked"]) == ("t0", True)
    assert "Review deadlock" in blocked["blocked_reason"]
    (checkpoint,) = body["checkpoints"]
    assert checkpoint["sprint"] == "sprint-1" and checkpoint["age_seconds"] >= 0
    assert body["count"] == 2
    viewer = session_client(t.users["viewer"])
    assert_envelope(viewer.get(f"{api_base(t.slug)}/inbox"), 403, "permission_denied")


def test_the_task_output_shows_the_overlay():
    t = Tenant()
    t.world.unclaimed("t1")
    tasks.task_suspend(
        task=t.world.task("t1"), actor=t.world.admin, reason="Legal review", now=t.world.tick()
    )
    body = _admin(t).get(f"{api_base(t.slug)}/tasks/t1").json()
    assert body["suspended_reason"] == "Legal review"
    assert body["suspended_by"] == t.users["admin"].username
    assert body["needs_human_approval"] is False
    assert body["awaiting_human_approval"] is False
