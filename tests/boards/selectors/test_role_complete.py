"""`/work`'s role complete (seed 000 exit 0) for coders and reviewers: nothing to do now and no
task open past DRAFT (`selectors.tasks.work_may_still_come`, docs/decisions.md). Each row is a
board where seed 000's literal rule would have stopped the agent while work could still come
back to it, or where every task has ended."""

from __future__ import annotations

import pytest

from boards.selectors.work import work_for_role

pytestmark = pytest.mark.django_db


def _answer(world, agent_id):
    agent = world.agent(agent_id)
    return work_for_role(project=world.project, role=agent.role, agent=agent, now=world.now)


# (how the board is built, which agent asks, "wait" or "complete")
BOARDS = [
    # coder-2's own task is in review: a rejection would come back to it.
    (lambda w: w.ready_for_review("T-1", coder="coder-2"), "coder-2", "wait"),
    # coder-2 idle while coder-1 holds a lease: if it dies, coder-2 takes the task over.
    (lambda w: w.claimed("T-1", coder="coder-1"), "coder-2", "wait"),
    # A BLOCKED task the planner may release to anyone.
    (lambda w: w.blocked("T-1", coder="coder-1"), "coder-2", "wait"),
    # An approved task whose merge may fail (INTEGRATION_FAILED is any coder's).
    (lambda w: w.approved("T-1"), "coder-2", "wait"),
    # Reviewers: a task being worked on will come to review.
    (lambda w: w.claimed("T-1", coder="coder-1"), "code-reviewer-2", "wait"),
    (lambda w: w.blocked("T-1", coder="coder-1"), "code-reviewer-2", "wait"),
    # Every task ended: both roles are complete.
    (lambda w: (w.merged("T-1"), w.abandoned("T-2")), "coder-2", "complete"),
    (lambda w: (w.merged("T-1"), w.abandoned("T-2")), "code-reviewer-2", "complete"),
]


@pytest.mark.parametrize(("build", "agent_id", "expected"), BOARDS)
def test_role_complete_only_once_no_task_is_open(world, build, agent_id, expected):
    build(world)
    answer = _answer(world, agent_id)
    assert answer["work"] is False
    if expected == "complete":
        assert answer["exit"] == 0, answer
    else:
        assert answer["exit"] is None, answer
        assert answer["retry_after"], answer


def test_drafts_alone_are_the_waiting_for_drafts_answer(world):
    world.merged("T-1")
    world.draft("T-2")
    answer = _answer(world, "coder-2")
    assert (answer["work"], answer["exit"], answer["waiting_for_drafts"]) == (False, None, 1)
