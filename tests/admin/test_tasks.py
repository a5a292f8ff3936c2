"""Task transitions as admin actions, through the services, one result per task."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import HumanNote, Task
from tests.admin.helpers import page_messages, run_action
from tests.factories import UserFactory


def _events(task, **filters):
    return Event.objects.filter(task=task, **filters)


def test_override_block_moves_a_claimed_task_to_blocked_as_the_admin(
    admin_client, admin_user, board
):
    task = board.claimed

    response = run_action(
        admin_client,
        Task,
        "override_block",
        [task],
        apply="1",
        reason="Wrong approach, stop",
        questions="Which storage?\nKeep the cache?",
    )

    assert response.status_code == 200
    task.refresh_from_db()
    assert task.status == "BLOCKED"
    assert task.blocked_reason == "Wrong approach, stop"
    assert task.blocked_questions == ["Which storage?", "Keep the cache?"]
    event = _events(task, action="override_blocked").get()
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert (event.from_status, event.to_status, event.outcome) == ("CLAIMED", "BLOCKED", "applied")
    assert event.detail == "Wrong approach, stop"
    assert f"{task}: CLAIMED → BLOCKED" in page_messages(response)
    # The coder was released by the service (its next write gets lease_lost).
    assert board.world.agent("coder-1").current_task_id is None


def test_override_block_first_asks_for_the_reason_and_changes_nothing(admin_client, board):
    task = board.claimed
    events = _events(task).count()

    response = run_action(admin_client, Task, "override_block", [task], index="0")

    assert response.status_code == 200
    assert response.templates[0].name == "admin/liza/service_action.html"
    assert "reason" in response.context["form"].fields
    assert [o.pk for o in response.context["objects"]] == [task.pk]
    task.refresh_from_db()
    assert task.status == "CLAIMED"
    assert _events(task).count() == events


@pytest.mark.parametrize(
    "form",
    [
        {"reason": ""},
        {"reason": "   "},
        {"reason": "Stop", "questions": "one\ntwo\nthree\nfour"},
    ],
    ids=["no reason", "blank reason", "four questions"],
)
def test_override_block_with_an_invalid_form_shows_it_again(admin_client, board, form):
    task = board.claimed
    events = _events(task).count()

    response = run_action(admin_client, Task, "override_block", [task], apply="1", **form)

    assert response.status_code == 200
    assert response.context["form"].errors
    task.refresh_from_db()
    assert task.status == "CLAIMED"
    assert _events(task).count() == events


def test_override_block_of_a_terminal_task_is_refused_with_a_message(admin_client, board):
    task = board.merged
    before = Task.objects.filter(pk=task.pk).values().get()

    response = run_action(admin_client, Task, "override_block", [task], apply="1", reason="Stop it")

    assert response.status_code == 200
    assert Task.objects.filter(pk=task.pk).values().get() == before
    errors = [m for m in response.context["messages"] if m.level_tag == "error"]
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{task}: ")
    assert "MERGED" in str(errors[0])
    # SPEC §4.1: the refused attempt is in the log too.
    refused = _events(task, outcome="rejected").get()
    assert refused.actor_kind == "human"


def test_each_task_of_a_selection_gets_its_own_result(admin_client, board):
    claimed, merged, draft = board.claimed, board.merged, board.draft

    response = run_action(
        admin_client, Task, "override_block", [claimed, merged, draft], apply="1", reason="Halt"
    )

    statuses = dict(
        Task.objects.filter(pk__in=[claimed.pk, merged.pk, draft.pk]).values_list("key", "status")
    )
    assert statuses == {"task-1": "BLOCKED", "task-3": "MERGED", "task-4": "BLOCKED"}
    levels = sorted(m.level_tag for m in response.context["messages"])
    assert levels == ["error", "success", "success"]


def test_release_moves_a_blocked_task_back_to_unclaimed(admin_client, admin_user, board):
    task = board.blocked

    response = run_action(
        admin_client, Task, "release_blocked", [task], apply="1", reason="Return 400 on errors"
    )

    task.refresh_from_db()
    assert task.status == "UNCLAIMED"
    assert task.worktree == "" and task.assigned_to == ""
    assert task.failed_by == ["coder-2"]  # kept (seed 000)
    event = _events(task, action="released").get()
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert HumanNote.objects.filter(task=task, message="Return 400 on errors").exists()
    assert f"{task}: BLOCKED → UNCLAIMED" in page_messages(response)


def test_release_of_a_task_that_is_not_blocked_is_refused(admin_client, board):
    task = board.claimed

    response = run_action(admin_client, Task, "release_blocked", [task], apply="1", reason="Go")

    task.refresh_from_db()
    assert task.status == "CLAIMED"
    assert [m.level_tag for m in response.context["messages"]] == ["error"]


def test_abandon_moves_a_blocked_task_to_abandoned(admin_client, board):
    task = board.blocked

    run_action(admin_client, Task, "abandon_blocked", [task], apply="1", reason="Not needed")

    task.refresh_from_db()
    assert task.status == "ABANDONED"
    assert _events(task, action="abandoned", actor_kind="human").exists()


def test_finalize_moves_a_draft_to_unclaimed_without_a_form(admin_client, board):
    task, claimed = board.draft, board.claimed

    response = run_action(admin_client, Task, "finalize_drafts", [task, claimed], index="0")

    task.refresh_from_db()
    claimed.refresh_from_db()
    assert task.status == "UNCLAIMED"
    assert claimed.status == "CLAIMED"
    assert sorted(m.level_tag for m in response.context["messages"]) == ["error", "success"]


def test_staff_with_view_permission_only_cannot_run_transitions(client, board):
    user = UserFactory(is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_task"))
    client.force_login(user)
    task = board.claimed

    page = client.get("/admin/boards/task/")
    response = run_action(client, Task, "override_block", [task], apply="1", reason="Stop")

    assert page.status_code == 200
    assert "override_block" not in page.content.decode()
    task.refresh_from_db()
    assert task.status == "CLAIMED"
    assert not _events(task, action="override_blocked").exists()
    assert response.status_code == 200
