"""Seed 003 retry with backoff (SPEC §13): the nth lease expiry of a coder on a task makes it
claimable again strictly after lease_expires + lease_grace + backoff[n]; the 4th blocks it
(`retry_exhausted`, no anomaly) unless hypothesis exhaustion applies first. Claim, claim-next
and `/work` read one predicate; the clock is each service's `now`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards.coordination.models.records import Anomaly
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.tasks import retry_at
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import tasks
from boards.coordination.services.projects import config_update
from boards.errors import Conflict, ProtocolError, ProtocolValidationError
from boards.protocol import TaskStatus
from boards.watch.services.watch import watch_sweep

pytestmark = pytest.mark.django_db

BACKOFF = (5, 30, 120)


def _claim_next(world, coder="coder-1", now=None):
    return tasks.task_claim_next(
        project=world.project, agent=world.agent(coder), now=now or world.now, base_commit="b1"
    )


def _due(world, key):
    """When the task's dead lease may be claimed again (strictly after this instant)."""
    return retry_at(world.task(key), config_of(world.project))


def _crash_and_retry(world, key, times):
    """`times` times: the lease dies, the same coder claims the task again once it is due."""
    for _ in range(times):
        world.now = _due(world, key) + timedelta(seconds=1)
        assert _claim_next(world).key == key


def test_the_default_schedule_is_seed_003s():
    from boards.coordination.models.projects import ProjectConfig

    assert ProjectConfig().retry_backoff == list(BACKOFF)


@pytest.mark.parametrize("crashes", [0, 1, 2], ids=["1st expiry", "2nd expiry", "3rd expiry"])
@pytest.mark.parametrize("who", ["same coder", "another coder"])
def test_each_backoff_step_just_before_at_and_after(world, crashes, who):
    task = world.claimed("T-1")
    _crash_and_retry(world, "T-1", crashes)
    task = world.task("T-1")
    assert task.crashes == crashes
    grace = config_of(world.project).lease_grace
    due = task.lease_expires + timedelta(seconds=grace + BACKOFF[crashes])
    assert _due(world, "T-1") == due
    coder = "coder-1" if who == "same coder" else "coder-2"

    for now in (due - timedelta(seconds=1), due):
        # Nobody gets it: not by name, not by claim-next, and /work says wait, with when.
        with pytest.raises(Conflict) as refused:
            tasks.task_claim(task=task, agent=world.agent(coder), now=now, base_commit="b1")
        assert refused.value.details["retry_at"] == due.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert _claim_next(world, coder, now) is None
        answer = work_for_role(
            project=world.project, role="coder", agent=world.agent(coder), now=now
        )
        assert answer["work"] is False
        if who == "same coder":
            assert answer["retry_after"] == int((due - now).total_seconds()) + 1
        assert world.task("T-1").status == TaskStatus.CLAIMED

    after = due + timedelta(seconds=1)
    assert work_for_role(project=world.project, role="coder", agent=world.agent(coder), now=after)[
        "work"
    ]
    claimed = _claim_next(world, coder, after)
    assert claimed.key == "T-1"
    assert claimed.assigned_to == coder
    if who == "same coder":
        # Context kept (seed 003): same worktree and iteration, one crash more.
        assert claimed.crashes == crashes + 1
        assert claimed.worktree == task.worktree
        assert claimed.iteration == task.iteration
    else:
        assert claimed.crashes == 0  # retries count per coder
        assert claimed.failed_by == ["coder-1"]


def test_the_fourth_expiry_of_the_same_coder_blocks_the_task_without_an_anomaly(world):
    world.claimed("T-1")
    _crash_and_retry(world, "T-1", 3)
    task = world.task("T-1")
    assert task.crashes == 3
    # The 4th expiry exhausts the retries: no backoff, the claim blocks instead of giving it.
    grace = config_of(world.project).lease_grace
    world.now = task.lease_expires + timedelta(seconds=grace + 1)
    assert (
        work_for_role(project=world.project, role="coder", agent=world.coder, now=world.now)["work"]
        is False
    )
    assert _claim_next(world) is None
    task = world.task("T-1")
    assert task.status == TaskStatus.BLOCKED
    assert task.blocked_reason.startswith("Retry exhausted: 4 lease expiries of coder-1")
    assert task.failed_by == ["coder-1"]
    assert Anomaly.objects.filter(task=task).count() == 0
    # Only a human's written release frees it (SPEC §5.1 exhausted tasks).
    with pytest.raises(ProtocolError):
        tasks.task_release(task=task, actor=world.planner, reason="again", now=world.tick())
    tasks.task_release(task=task, actor=world.admin, reason="Machine fixed", now=world.tick())
    assert world.task("T-1").status == TaskStatus.UNCLAIMED


def test_the_watcher_blocks_the_fourth_expiry_once(world):
    world.claimed("T-1")
    _crash_and_retry(world, "T-1", 3)
    grace = config_of(world.project).lease_grace
    dead = world.task("T-1").lease_expires + timedelta(seconds=grace + 1)
    sweep = watch_sweep(project=world.project, now=dead)
    assert "lease expired: coder-1 on T-1" in sweep.actions
    assert "blocked: T-1 (retry_exhausted, 4 lease expiries)" in sweep.actions
    task = world.task("T-1")
    assert (task.status, task.crashes) == (TaskStatus.BLOCKED, 4)
    assert world.coder.lost_task_id == task.pk
    assert watch_sweep(project=world.project, now=dead + timedelta(seconds=10)).actions == []


def test_a_takeover_that_exhausts_the_hypothesis_comes_first(world):
    """coder-3 failed the task before; coder-1 crashed once: coder-2 taking it over makes two
    distinct coders in failed_by — hypothesis exhaustion, with its anomaly, not a retry."""
    world.claimed("T-1", "coder-3")
    world.block("T-1")
    tasks.task_release(task=world.task("T-1"), actor=world.admin, reason="Go", now=world.tick())
    world.claim("T-1", "coder-1")
    world.now = _due(world, "T-1") + timedelta(seconds=1)
    assert _claim_next(world, "coder-2") is None
    task = world.task("T-1")
    assert task.status == TaskStatus.BLOCKED
    assert task.blocked_reason.startswith("Hypothesis exhaustion")
    assert Anomaly.objects.filter(task=task, type="hypothesis_exhaustion").count() == 1


def test_the_fourth_expiry_with_another_failed_coder_is_hypothesis_exhaustion(world):
    world.claimed("T-1", "coder-3")
    world.block("T-1")
    tasks.task_release(task=world.task("T-1"), actor=world.admin, reason="Go", now=world.tick())
    world.claim("T-1", "coder-1")
    _crash_and_retry(world, "T-1", 3)
    grace = config_of(world.project).lease_grace
    watch_sweep(
        project=world.project, now=world.task("T-1").lease_expires + timedelta(seconds=grace + 1)
    )
    task = world.task("T-1")
    assert task.status == TaskStatus.BLOCKED
    assert task.blocked_reason.startswith("Hypothesis exhaustion")
    assert sorted(task.failed_by) == ["coder-1", "coder-3"]
    assert Anomaly.objects.filter(task=task, type="hypothesis_exhaustion").count() == 1


def test_a_configured_schedule_is_used(world):
    config_update(project=world.project, actor=world.admin, now=world.now, retry_backoff=[1, 2])
    world.claimed("T-1")
    grace = config_of(world.project).lease_grace
    assert _due(world, "T-1") == world.task("T-1").lease_expires + timedelta(seconds=grace + 1)
    _crash_and_retry(world, "T-1", 2)
    world.now = world.task("T-1").lease_expires + timedelta(seconds=grace + 1)
    assert _claim_next(world) is None
    assert world.task("T-1").blocked_reason.startswith("Retry exhausted: 3 lease expiries")


@pytest.mark.parametrize("value", [[], [0], [5, -1], ["5"], [True], 5, [1] * 11, None], ids=repr)
def test_a_bad_schedule_is_refused_naming_the_field(world, value):
    with pytest.raises(ProtocolValidationError) as refused:
        config_update(project=world.project, actor=world.admin, now=world.now, retry_backoff=value)
    assert "retry_backoff" in refused.value.details["fields"]
    assert config_of(world.project).retry_backoff == list(BACKOFF)
