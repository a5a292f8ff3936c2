"""`selectors.tasks.task_prefetch_one` (a claim's answer) leaves a task exactly as the ORM's
prefetch of `TASK_PREFETCH` does: the same dependencies and open reviews, in the same order,
read in one statement, and the task's answer serialised from them without another query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import prefetch_related_objects
from django.test.utils import CaptureQueriesContext

from boards.api.serializers import TaskSerializer
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.tasks import TASK_PREFETCH, task_prefetch_one
from tests.api.helpers import http_goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    world = http_goal_world()
    world.merged("t1")
    world.claimed("t2", coder="coder-2")
    world.unclaimed("t3", depends_on=["t2", "t1"])  # one dependency merged, one not
    world.under_review("t4")  # an open review
    world.ready_for_review("t5", coder="coder-3")
    world.claim_review("t5", reviewer="code-reviewer-2")
    world.verdict("t5", "REJECTED", reviewer="code-reviewer-2")  # its review closed
    world.claim("t5", coder="coder-3")
    world.submit("t5", commit="c0ffee02")
    world.claim_review("t5", reviewer="code-reviewer-2")  # a second round: one open review
    world.unclaimed("t6")  # neither
    return world


def _related(task: Task) -> tuple[list[int], list[int]]:
    return [t.pk for t in task.depends_on.all()], [r.pk for r in task.reviews.all()]


@pytest.mark.parametrize("key", ["t1", "t2", "t3", "t4", "t5", "t6"])
def test_a_task_prefetched_in_one_statement_is_the_orms_prefetch(world, key):
    pk = world.task(key).pk
    # The project as the claim's task carries it (the answer reads its config).
    rows = Task.objects.select_related("project__config")
    orm, ours = rows.get(pk=pk), rows.get(pk=pk)
    prefetch_related_objects([orm], *TASK_PREFETCH)
    with CaptureQueriesContext(connection) as read:
        task_prefetch_one(ours)
    assert len(read.captured_queries) == 1
    with CaptureQueriesContext(connection) as answered:
        ours_related = _related(ours)
        ours_answer = TaskSerializer(ours, context={"now": world.now}).data
    assert answered.captured_queries == []
    assert ours_related == _related(orm)
    assert ours_answer == TaskSerializer(orm, context={"now": world.now}).data
    for review in ours.reviews.all():
        assert review.task is ours  # as the ORM's reverse prefetch sets it


def test_the_fixture_covers_dependencies_and_closed_and_open_reviews(world):
    """The cases above are not vacuous: t3 has two dependencies, t5 a closed and an open
    review, of which the prefetch reads only the open one."""
    t3, t5 = world.task("t3"), world.task("t5")
    assert t3.depends_on.count() == 2
    assert t5.reviews.count() == 2
    task_prefetch_one(t5)
    assert [r.closed_at for r in t5.reviews.all()] == [None]
