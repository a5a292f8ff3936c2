"""Seed 003 agent availability (enabled / disabled / overloaded / error), as claims, claim-next
and `/work` respect it and the agents panel shows it. Error = 3 lease expiries (recorded by the
watcher) within 5 min; it clears by itself when the window passes, or by a project admin."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from agents.services import agent_set_availability, agent_set_enabled, run_finish, run_start
from boards.board.selectors.board import BoardFilters, board_state
from boards.coordination.models.records import Alert, Event
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import ERROR_WINDOW, agent_availability
from boards.coordination.selectors.tasks import retry_at
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, tasks
from boards.errors import AgentUnavailable, Conflict, ProtocolError
from boards.watch.services.watch import watch_sweep
from tests.api.helpers import agent_client, api_base, assert_envelope

pytestmark = pytest.mark.django_db


def _claim_next(world, coder="coder-1", now=None):
    return tasks.task_claim_next(
        project=world.project, agent=world.agent(coder), now=now or world.now, base_commit="b1"
    )


def _work(world, agent_id, now):
    agent = world.agent(agent_id)
    return work_for_role(project=world.project, role=agent.role, agent=agent, now=now)


def _expire_and_sweep(world, key):
    """The coder's lease on `key` dies; the watcher records it (lease_expired)."""
    grace = config_of(world.project).lease_grace
    world.now = world.task(key).lease_expires + timedelta(seconds=grace + 1)
    assert (
        f"lease expired: coder-1 on {key}"
        in watch_sweep(project=world.project, now=world.now).actions
    )


def _into_error(world):
    """Three lease expiries of coder-1 within 5 min (short leases on the task, retried by the
    same coder after each backoff). Returns the instant of the third."""
    world.claimed("T-1", lease_duration_override=30)
    first = None
    for n in range(3):
        _expire_and_sweep(world, "T-1")
        first = first or world.now
        if n < 2:
            world.now = retry_at(world.task("T-1"), config_of(world.project)) + timedelta(seconds=1)
            assert _claim_next(world).key == "T-1"
    assert world.now - first < timedelta(seconds=ERROR_WINDOW)
    return first


def test_enabled_by_default(world):
    assert agent_availability(world.coder, world.now).state == "enabled"


def test_three_lease_expiries_in_five_minutes_put_the_agent_in_error(world):
    first = _into_error(world)
    world.unclaimed("T-2")
    now = world.now + timedelta(seconds=1)
    available = agent_availability(world.coder, now)
    assert available.state == "error"
    assert "3 lease expiries within 5 min" in available.reason
    assert "crash" not in available.reason
    until = first + timedelta(seconds=ERROR_WINDOW)
    assert available.until == until
    # Claim-next offers only its own task's retry (not due yet): nothing, and never T-2; the
    # refusal of new work (429, exit 7) is in the test of the 4th expiry below.
    assert _claim_next(world, now=now) is None
    answer = _work(world, "coder-1", now)
    assert (answer["work"], answer["exit"], answer["availability"]) == (False, None, "error")
    # Its own task's retry is not new work: asked again when the backoff is over, not the error.
    due = retry_at(world.task("T-1"), config_of(world.project))
    assert answer["retry_after"] == int((due - now).total_seconds()) + 1
    # Another coder is not affected.
    assert _work(world, "coder-2", now)["work"] is True
    # The panel shows it.
    state = board_state(project=world.project, filters=BoardFilters(), now=now)
    [coder] = [a for a in state["agents"] if a.agent_id == "coder-1"]
    assert coder.availability.state == "error"
    # It clears by itself once the first of the three leaves the window.
    assert agent_availability(world.coder, until - timedelta(seconds=1)).state == "error"
    after = until + timedelta(seconds=1)
    assert agent_availability(world.coder, after).state == "enabled"


def test_a_project_admin_clears_the_error(world):
    _into_error(world)
    now = world.now + timedelta(seconds=1)
    agent_set_availability(agent=world.coder, actor=world.admin, state="available", now=now)
    assert agent_availability(world.coder, now).state == "enabled"
    [event] = Event.objects.filter(project=world.project, action="agent_availability_set")
    assert event.detail == "coder-1: error → available"
    # Clearing again: nothing to clear.
    with pytest.raises(Conflict):
        agent_set_availability(agent=world.coder, actor=world.admin, state="available", now=now)


def test_only_a_project_admin_sets_availability(world):
    with pytest.raises(ProtocolError):
        agent_set_availability(
            agent=world.coder, actor=world.planner, state="overloaded", now=world.now
        )
    assert world.coder.overloaded is False


def test_an_overloaded_agent_keeps_its_task_and_takes_nothing_new(world):
    world.claimed("T-1")
    world.unclaimed("T-2")
    for coder in ("coder-1", "coder-2"):
        agent_set_availability(
            agent=world.agent(coder), actor=world.admin, state="overloaded", now=world.now
        )
    now = world.tick()
    assert agent_availability(world.coder, now).state == "overloaded"
    # Its live claim is handed back (work in hand) and /work says so.
    assert _claim_next(world, now=now).key == "T-1"
    assert _work(world, "coder-1", now)["work"] is True
    # coder-2 holds nothing: no new task, by name or by claim-next; /work says wait.
    with pytest.raises(AgentUnavailable) as refused:
        tasks.task_claim(
            task=world.task("T-2"), agent=world.agent("coder-2"), now=now, base_commit="b1"
        )
    assert refused.value.details["availability"] == "overloaded"
    with pytest.raises(AgentUnavailable):
        _claim_next(world, "coder-2", now=now)
    answer = _work(world, "coder-2", now)
    assert (answer["work"], answer["availability"]) == (False, "overloaded")
    assert answer["retry_after"] == config_of(world.project).coder_poll_interval
    agent_set_availability(
        agent=world.agent("coder-2"), actor=world.admin, state="available", now=now
    )
    assert _work(world, "coder-2", now)["work"] is True
    assert _claim_next(world, "coder-2", now=now).key == "T-2"


def test_an_overloaded_reviewer_claims_no_review(world):
    world.ready_for_review("T-1")
    agent_set_availability(
        agent=world.reviewer, actor=world.admin, state="overloaded", now=world.now
    )
    now = world.tick()
    assert _work(world, "code-reviewer-1", now)["work"] is False
    with pytest.raises(AgentUnavailable):
        reviews.review_claim(task=world.task("T-1"), agent=world.reviewer, now=now)


def test_disabled_over_the_others(world):
    agent_set_availability(agent=world.coder, actor=world.admin, state="overloaded", now=world.now)
    agent_set_enabled(agent=world.coder, actor=world.admin, enabled=False, now=world.now)
    assert agent_availability(world.coder, world.now).state == "disabled"


def test_the_http_answers(world):
    """Through the API with the agent's own key: claim-next 429 agent_unavailable (exit 7),
    /work a 200 "wait" with Retry-After."""
    world.unclaimed("T-1")
    agent_set_availability(agent=world.coder, actor=world.admin, state="overloaded", now=world.now)
    client = agent_client(world.coder)
    base = api_base(world.project.slug)
    with time_machine.travel(world.now, tick=False):
        body = assert_envelope(
            client.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json"),
            429,
            "agent_unavailable",
        )
        assert body["details"]["exit"] == 7
        work = client.get(f"{base}/work")
    assert work.status_code == 200
    assert work.json()["work"] is False
    assert work.json()["availability"] == "overloaded"
    assert work["Retry-After"] == str(config_of(world.project).coder_poll_interval)
    agent_set_enabled(agent=world.coder, actor=world.admin, enabled=False, now=world.now)
    assert_envelope(client.get(f"{base}/work"), 403, "permission_denied")


def _crash(world, agent_id, now, exit_code=1):
    """The agent's supervisor reports a run of its agent command that crashed."""
    agent = world.agent(agent_id)
    run = run_start(project=world.project, agent=agent, now=now - timedelta(seconds=2))
    run_finish(run=run, agent=agent, now=now, exit_code=exit_code)


@pytest.mark.parametrize(
    ("exits", "in_error"),
    [
        ((1, 1, 1), True),  # seed 000's crash loop: three crashes within 5 min
        ((1, 1), False),
        ((1, 42, 1), False),  # 42 is a requested restart, 0 a finished role: not crashes
        ((1, 0, 1), False),
    ],
)
def test_a_crash_loop_reported_by_the_supervisor_puts_the_agent_in_error(world, exits, in_error):
    for n, exit_code in enumerate(exits):
        _crash(world, "coder-1", world.now + timedelta(seconds=60 * n), exit_code)
    now = world.now + timedelta(seconds=60 * len(exits))
    available = agent_availability(world.agent("coder-1"), now)
    assert (available.state == "error") is in_error
    world.unclaimed("T-2")
    sweep = watch_sweep(project=world.project, now=now)
    alerts = Alert.objects.filter(project=world.project, type=Alert.Type.AGENT_ERROR)
    assert [a.subject for a in alerts.filter(resolved_at__isnull=True)] == (
        ["coder-1"] if in_error else []
    )
    if not in_error:
        assert _claim_next(world, now=now).key == "T-2"
        return
    assert any("coder-1" in line for line in sweep.alerts)
    # The alert names its real cause: a crash loop, not lease expiries.
    (alert,) = alerts.filter(resolved_at__isnull=True)
    assert "3 crashes of its agent command within 5 min" in alert.message, alert.message
    assert "lease expiries" not in alert.message
    with pytest.raises(AgentUnavailable):
        _claim_next(world, now=now)
    # The loop leaves the window 5 min after its first crash: the agent takes work again and the
    # watcher resolves its alert.
    later = world.now + timedelta(seconds=ERROR_WINDOW + 1)
    assert agent_availability(world.agent("coder-1"), later).state == "enabled"
    watch_sweep(project=world.project, now=later)
    assert not alerts.filter(resolved_at__isnull=True).exists()
    assert _claim_next(world, now=later).key == "T-2"


@pytest.mark.parametrize("within_window", [True, False], ids=["error-first", "no-error"])
@pytest.mark.parametrize("who", ["watcher", "claim"])
def test_the_fourth_expiry_blocks_the_task_whether_or_not_the_agent_is_in_error(
    world, within_window, who
):
    """decisions.md "Retries and agent in error": three expiries within 5 min put the coder in
    error (no new work), but the retry of the claim it holds is the task's (seed 003), so the
    4th expiry blocks the task however close the expiries were; acted on by the watcher's
    sweep or by the coder's own claim-next, whichever comes first."""
    config = config_of(world.project)
    config.retry_backoff = [5, 10, 15]  # short leases, short backoff: all within 5 min
    config.save(update_fields=["retry_backoff"])
    world.claimed("T-1", lease_duration_override=30)
    world.unclaimed("T-2")
    first = None
    for n in range(3):
        _expire_and_sweep(world, "T-1")
        first = first or world.now
        due = retry_at(world.task("T-1"), config) + timedelta(seconds=1)
        world.now = due if within_window else max(due, world.now + timedelta(seconds=ERROR_WINDOW))
        in_error = agent_availability(world.coder, world.now).state == "error"
        assert in_error is (within_window and n == 2)
        if in_error:  # its retry is due: /work says work, though the agent is in error
            answer = _work(world, "coder-1", world.now)
            assert (answer["work"], answer["availability"]) == (True, "error")
        assert _claim_next(world).key == "T-1"  # the retry, in error or not
        assert world.task("T-1").crashes == n + 1
    # The 4th expiry, one past the schedule.
    grace = config.lease_grace
    world.now = world.task("T-1").lease_expires + timedelta(seconds=grace + 1)
    if who == "watcher":
        sweep = watch_sweep(project=world.project, now=world.now)
        assert any("T-1" in line for line in sweep.actions), sweep.actions
    else:
        assert _claim_next(world) is None  # it blocked T-1 instead, and gave nothing else
    task = world.task("T-1")
    assert task.status == "BLOCKED"
    assert "coder-1" in task.failed_by
    # Now it holds nothing: in error, new work is refused (429, exit 7: wait until it clears).
    available = agent_availability(world.coder, world.now)
    assert available.state == ("error" if within_window and who == "watcher" else "enabled")
    if available.state == "error":  # the watcher recorded the 4th expiry too
        with pytest.raises(AgentUnavailable) as refused:
            _claim_next(world)
        assert refused.value.status_code == 429
        assert refused.value.details["retry_after"] == int(
            (available.until - world.now).total_seconds()
        )
    else:
        assert available.state == "enabled"
        assert _claim_next(world).key == "T-2"
    # Whatever the order, it stays blocked for a human, and the agent's error clears by itself.
    later = first + timedelta(seconds=4 * ERROR_WINDOW)
    watch_sweep(project=world.project, now=later)
    assert world.task("T-1").status == "BLOCKED"
    assert agent_availability(world.coder, later).state == "enabled"
