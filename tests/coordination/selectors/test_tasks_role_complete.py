"""`/work`'s role complete (seed 000 exit 0) for coders and reviewers: nothing to do now, no task
open past DRAFT and no goal IN_PROGRESS (`selectors.tasks.work_may_still_come`,
docs/decisions.md "Role complete"). Each row is a board where seed 000's literal rule would
have stopped the agent while work could still come to it, or where the work has ended."""

from __future__ import annotations

import pytest

from boards.coordination.selectors.work import work_for_role
from boards.coordination.services.goals import goal_abort, goal_complete, goal_create

pytestmark = pytest.mark.django_db


def _answer(world, agent_id, role=None):
    agent = world.agent(agent_id)
    return work_for_role(project=world.project, role=role or agent.role, agent=agent, now=world.now)


def _goal(w):
    return goal_create(project=w.project, actor=w.planner, description="Ship", now=w.tick())


def _complete(w, goal):
    goal_complete(goal=goal, actor=w.planner, reason="every task ended", now=w.tick())


def _abort(w, goal):
    goal_abort(goal=goal, actor=w.admin, reason="not needed", now=w.tick())


def _ended(w):
    w.merged("T-1")
    w.abandoned("T-2")


def _goal_ended(w):
    """An open goal whose every task has ended."""
    _goal(w)
    _ended(w)


def _goal_completed(w):
    goal = _goal(w)
    _ended(w)
    _complete(w, goal)


def _goal_aborted(w):
    """Aborting cancels the goal's open tasks (ABANDONED)."""
    goal = _goal(w)
    w.claimed("T-1")
    w.unclaimed("T-2")
    _abort(w, goal)


IN_PROGRESS = "in progress elsewhere"
GOAL_OPEN = "is IN_PROGRESS: its planner may still write tasks"

# (how the board is built, which agent asks, "complete" or the reason it is told to wait)
BOARDS = [
    # coder-2's own task is in review: a rejection would come back to it.
    (lambda w: w.ready_for_review("T-1", coder="coder-2"), "coder-2", IN_PROGRESS),
    # coder-2 idle while coder-1 holds a lease: if it dies, coder-2 takes the task over.
    (lambda w: w.claimed("T-1", coder="coder-1"), "coder-2", IN_PROGRESS),
    # A BLOCKED task the planner may release to anyone.
    (lambda w: w.blocked("T-1", coder="coder-1"), "coder-2", IN_PROGRESS),
    # An approved task whose merge may fail (INTEGRATION_FAILED is any coder's).
    (lambda w: w.approved("T-1"), "coder-2", IN_PROGRESS),
    # Reviewers: a task being worked on will come to review.
    (lambda w: w.claimed("T-1", coder="coder-1"), "code-reviewer-2", IN_PROGRESS),
    (lambda w: w.blocked("T-1", coder="coder-1"), "code-reviewer-2", IN_PROGRESS),
    # An open goal and no task yet: the planner is about to write them (the supervisor that
    # started before the planner was told "role complete" and stopped).
    (_goal, "coder-2", GOAL_OPEN),
    (_goal, "code-reviewer-2", GOAL_OPEN),
    # An open goal whose every task ended: the planner's turn (its /work has work), a next
    # sprint's tasks or the goal COMPLETED; an ended task alone does not end a goal.
    (_goal_ended, "coder-2", GOAL_OPEN),
    (_goal_ended, "code-reviewer-2", GOAL_OPEN),
    # A goal already completed, the next one open and still empty.
    (lambda w: (_complete(w, _goal(w)), _goal(w)), "coder-2", GOAL_OPEN),
    # Every task ended and no goal open: both roles are complete.
    (_ended, "coder-2", "complete"),
    (_ended, "code-reviewer-2", "complete"),
    (lambda w: None, "coder-2", "complete"),  # nothing planned, no goal: nothing to come
    (_goal_completed, "coder-2", "complete"),
    (_goal_completed, "code-reviewer-2", "complete"),
    # An aborted goal cancelled its open tasks: nothing more comes.
    (_goal_aborted, "coder-2", "complete"),
    (_goal_aborted, "code-reviewer-2", "complete"),
]


@pytest.mark.parametrize(
    ("build", "agent_id", "expected"),
    BOARDS,
    ids=[
        f"{n}-{getattr(build, '__name__', '').strip('_<>')}-{agent_id}-"
        + ("complete" if expected == "complete" else "wait")
        for n, (build, agent_id, expected) in enumerate(BOARDS)
    ],
)
def test_role_complete_only_once_no_work_can_come(world, build, agent_id, expected):
    build(world)
    answer = _answer(world, agent_id)
    assert answer["work"] is False
    if expected == "complete":
        assert answer["exit"] == 0, answer
    else:
        assert answer["exit"] is None, answer
        assert answer["retry_after"], answer
        assert expected in answer["reason"], answer


def test_drafts_alone_are_the_waiting_for_drafts_answer(world):
    world.merged("T-1")
    world.draft("T-2")
    answer = _answer(world, "coder-2")
    assert (answer["work"], answer["exit"], answer["waiting_for_drafts"]) == (False, None, 1)


def test_an_open_goals_drafts_are_waited_for_too(world):
    _goal(world)
    world.draft("T-1")
    for agent_id in ("coder-2", "code-reviewer-2"):
        answer = _answer(world, agent_id)
        assert (answer["work"], answer["exit"], answer["waiting_for_drafts"]) == (False, None, 1)
        assert "DRAFT task(s) may be finalized soon" in answer["reason"]


def test_the_wait_on_an_ended_goals_work_ends_with_the_planners_decision(world):
    """The boundary cannot wait forever: exactly while coders wait on an open goal with nothing
    open, the planner's `/work` has work (complete the goal, or plan more); completing it ends
    every role."""
    goal = _goal(world)
    _ended(world)
    assert _answer(world, "coder-2")["exit"] is None
    assert _answer(world, "planner-1")["work"] is True

    _complete(world, goal)

    for agent_id in ("coder-2", "code-reviewer-2", "planner-1"):
        assert _answer(world, agent_id)["exit"] == 0, agent_id
