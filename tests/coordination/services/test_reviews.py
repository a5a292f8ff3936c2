"""Review claim-next (issue 12 §2): the server picks the review with review-claim's own slot rule,
and `/work` keeps a reviewer at work while a task it approved awaits its merge report."""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Goal
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import projects, reviews, tasks
from boards.coordination.services.goals import goal_complete
from boards.errors import Forbidden, StopWork
from boards.protocol import TaskStatus


def claim_next(world, reviewer: str = "code-reviewer-1"):
    return reviews.review_claim_next(
        project=world.project, agent=world.agent(reviewer), now=world.tick()
    )


def test_the_highest_priority_review_open_to_the_reviewer_is_claimed(world):
    world.ready_for_review("low", priority=3)
    world.ready_for_review("high", coder="coder-2", priority=1)

    review = claim_next(world)

    assert review.task.key == "high" and review.reviewer == "code-reviewer-1"
    assert Review.objects.get(task=world.task("high"), closed_at__isnull=True) == review
    # Another reviewer gets the next one; the first one's slot is taken.
    assert claim_next(world, "code-reviewer-2").task.key == "low"
    assert claim_next(world, "code-reviewer-3") is None


def test_a_reviewer_holding_a_live_review_gets_it_back(world):
    world.ready_for_review("t1")
    world.ready_for_review("t2", coder="coder-2")
    first = claim_next(world)

    again = claim_next(world)

    assert again == first
    assert Review.objects.filter(reviewer="code-reviewer-1", closed_at__isnull=True).count() == 1


def test_a_coder_never_gets_its_own_work_to_review(world):
    world.ready_for_review("t1", coder="coder-1")
    # code-reviewer-1 may review it; a coder's key may not claim reviews at all.
    with pytest.raises(Forbidden):
        claim_next(world, "coder-1")
    assert world.task("t1").reviews.filter(closed_at__isnull=True).count() == 0


def test_nothing_to_review_is_none_and_a_stop_is_exit_42(world):
    assert claim_next(world) is None
    world.ready_for_review("t1")
    projects.project_pause(
        project=world.project, actor=world.admin, reason="Hold", now=world.tick()
    )
    with pytest.raises(StopWork) as refused:
        claim_next(world)
    assert refused.value.code == "paused"


def test_a_reviewer_is_at_work_until_it_reports_the_merge_of_what_it_approved(world):
    world.approved("t1")  # approved by code-reviewer-1
    reviewer = world.reviewer

    answer = work_for_role(project=world.project, role=reviewer.role, agent=reviewer, now=world.now)

    assert answer["work"] is True and answer["exit"] is None
    assert answer["merge"] == ["t1"]
    other = world.agent("code-reviewer-2")
    assert (
        work_for_role(project=world.project, role=other.role, agent=other, now=world.now)["merge"]
        == []
    )

    tasks.task_report_merge(
        task=world.task("t1"), agent=reviewer, merge_commit="merge001", now=world.tick()
    )
    merged = work_for_role(project=world.project, role=reviewer.role, agent=reviewer, now=world.now)
    assert world.task("t1").status == TaskStatus.MERGED
    # Its merge reported, it has no work; the goal is still open, so it waits for the planner.
    assert merged["work"] is False and merged["exit"] is None and merged["merge"] == []
    goal_complete(
        goal=Goal.objects.get(project=world.project),
        actor=world.planner,
        reason="t1 merged",
        now=world.tick(),
    )
    done = work_for_role(project=world.project, role=reviewer.role, agent=reviewer, now=world.now)
    assert done["work"] is False and done["exit"] == 0 and done["merge"] == []
