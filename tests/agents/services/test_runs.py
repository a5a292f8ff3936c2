"""Issue 24: runs have a state, a duration and a reason in words; their output is streamed while
they run; a stalled run retries its task on seed 003's schedule and the `max_stalls`-th blocks
it; a supervisor that heartbeats with stale progress (hung) loses the task lease."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.models import Run, RunState, run_outcome
from agents.services import agent_heartbeat, run_finish, run_output_append, run_start
from boards.coordination.models.records import Alert, Event
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.tasks import retry_at
from boards.coordination.services import tasks
from boards.errors import Conflict, Forbidden, ProtocolValidationError
from boards.protocol import Action, TaskStatus
from boards.watch.services.watch import watch_sweep

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("exit_code", "stopped_by", "state", "reason"),
    [
        (0, "", "finished", "role complete"),
        (42, "", "finished", "session ended, work left"),
        (1, "", "finished", "crashed (exit 1)"),
        (-15, "stalled", "stalled", "stalled"),
        (0, "quota", "finished", "quota"),
        (-15, "budget", "killed", "budget"),
        (-15, "lease_lost", "killed", "stopped: lease_lost"),
        (-15, "paused", "killed", "stopped: paused"),
    ],
)
def test_a_run_ends_with_a_state_and_a_reason_in_words(world, exit_code, stopped_by, state, reason):
    world.claimed("T-1")
    # The run starts after the claim (the supervisor claims, then spawns): the claim is not
    # the session's progress.
    run = run_start(project=world.project, agent=world.coder, now=world.tick(), task="T-1")
    assert run.state == RunState.RUNNING and run.reason == ""
    assert run_outcome(exit_code, stopped_by) == (state, reason)
    if stopped_by == "stalled":
        return  # its task's side is the stall test's
    end = world.now + timedelta(minutes=3, seconds=5)
    run = run_finish(
        run=run, agent=world.coder, now=end, exit_code=exit_code, stopped_by=stopped_by
    )
    assert (run.state, run.reason) == (state, reason)
    assert run.duration() == timedelta(minutes=3, seconds=5)
    assert run.duration_text == "3 min 05 s"
    assert "exit_42" not in run.reason and "exit 42" not in run.reason


def test_output_streams_while_the_run_runs_redacted_and_bounded(world):
    world.claimed("T-1")
    run = run_start(project=world.project, agent=world.coder, now=world.now, task="T-1")
    key = "liza_0123456789ab_SECRETsecret"
    run = run_output_append(run=run, agent=world.coder, now=world.tick(), text=f"one\nkey {key}")
    assert run.output == "one\nkey [redacted]" and run.last_output_at == world.now
    for n in range(300):
        run = run_output_append(run=run, agent=world.coder, now=world.now, text=f"line {n}")
    assert run.output.splitlines()[-1] == "line 299"
    assert len(run.output.splitlines()) == 200  # the last 200 lines are kept
    with pytest.raises(ProtocolValidationError):
        run_output_append(run=run, agent=world.coder, now=world.now, text="x" * 16_001)
    with pytest.raises(Forbidden):  # only the run's own agent
        run_output_append(run=run, agent=world.agent("coder-2"), now=world.now, text="x")
    # The end keeps the streamed output when the supervisor sends none.
    run = run_finish(run=run, agent=world.coder, now=world.tick(), exit_code=42)
    assert run.output.splitlines()[-1] == "line 299"
    with pytest.raises(Conflict):
        run_output_append(run=run, agent=world.coder, now=world.now, text="late")


def _stall(world, key="T-1"):
    run = run_start(project=world.project, agent=world.coder, now=world.tick(), task=key)
    return run_finish(
        run=run, agent=world.coder, now=world.tick(), exit_code=-15, stopped_by="stalled"
    )


def test_a_stalled_run_is_retried_on_the_backoff_then_blocks_the_task_at_max_stalls(world):
    config = config_of(world.project)
    config.max_stalls = 3
    config.save(update_fields=["max_stalls"])
    world.claimed("T-1")
    alerts = Alert.objects.filter(
        project=world.project, type=Alert.Type.RUN_STALLED, resolved_at__isnull=True
    )
    for n in (1, 2):
        run = _stall(world)
        assert (run.state, run.reason) == ("stalled", "stalled")
        task = world.task("T-1")
        # The lease ended with the run: retried after the backoff, as after a dead lease.
        assert task.status == TaskStatus.CLAIMED
        assert not lease_alive(task.lease_expires, world.now + timedelta(seconds=1), config)
        due = retry_at(task, config)
        assert due == world.now + timedelta(seconds=config.retry_backoff[n - 1])
        watch_sweep(project=world.project, now=world.now + timedelta(seconds=1))
        [alert] = alerts.all()
        assert alert.subject == "T-1" and f"stall {n}/3" in alert.message
        assert (
            tasks.task_claim_next(
                project=world.project, agent=world.coder, now=due + timedelta(seconds=1)
            ).key
            == "T-1"
        )
        world.now = due + timedelta(seconds=2)
        assert world.task("T-1").crashes == n
    assert Event.objects.filter(project=world.project, action=Action.RUN_STALLED).count() == 2
    _stall(world)
    task = world.task("T-1")
    assert task.status == TaskStatus.BLOCKED
    assert "stalled 3 times" in task.blocked_reason
    watch_sweep(project=world.project, now=world.tick())
    types = set(alerts.values_list("type", flat=True))
    assert Alert.Type.RUN_STALLED in types
    assert "BLOCKED" in alerts.get(type=Alert.Type.RUN_STALLED).message


def test_a_heartbeat_with_stale_progress_does_not_extend_the_lease(world):
    """A hung supervisor: it heartbeats, but the progress it reports stopped long ago; its task
    lease is not extended, the answer says stop (stalled), and the watcher takes the lease."""
    config = config_of(world.project)
    config.stall_timeout = 60
    config.save(update_fields=["stall_timeout"])
    task = world.claimed("T-1")
    start = world.now
    fresh = agent_heartbeat(agent=world.coder, now=world.tick(), progress_at=world.now)
    assert fresh.stop is None and world.task("T-1").lease_expires > task.lease_expires
    held_until = world.task("T-1").lease_expires
    later = start + timedelta(seconds=121)  # progress 121 s old > 2 × stall_timeout
    stale = agent_heartbeat(agent=world.coder, now=later, progress_at=start)
    assert stale.stop is not None and stale.stop.code == "stalled"
    assert world.task("T-1").lease_expires == held_until  # not extended
    assert world.agent("coder-1").progress_at == start
    # It keeps heartbeating like that: the lease lapses and the watcher expires it.
    dead = held_until + timedelta(seconds=config.lease_grace + 1)
    with pytest.raises(Exception) as lost:
        agent_heartbeat(agent=world.coder, now=dead, progress_at=start)
    assert lost.value.code == "lease_lost"
    sweep = watch_sweep(project=world.project, now=dead)
    assert "lease expired: coder-1 on T-1" in sweep.actions


def test_a_runs_output_reaches_open_boards_as_a_run_output_message(world):
    from boards.board.live.render import render_changes

    world.claimed("T-1")
    run = run_start(project=world.project, agent=world.coder, now=world.now, task="T-1")
    run_output_append(run=run, agent=world.coder, now=world.tick(), text="compiling…")
    [change] = render_changes(world.project.pk, [{"kind": "run", "id": run.pk}])
    assert change["type"] == "run.output"
    assert change["run"]["id"] == run.pk and change["run"]["task"] == "T-1"
    assert change["run"]["state"] == "running" and change["output"] == "compiling…"
    assert Run.objects.get(pk=run.pk).last_output_at == world.now


def test_old_output_is_trimmed_by_age_and_the_runs_stay(world):
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    world.claimed("T-1")
    now = timezone.now()
    old = run_start(project=world.project, agent=world.coder, now=now - timedelta(days=40))
    run_finish(run=old, agent=world.coder, now=now - timedelta(days=40), exit_code=42, output="a")
    recent = run_start(project=world.project, agent=world.coder, now=now - timedelta(days=2))
    run_finish(run=recent, agent=world.coder, now=now - timedelta(days=2), exit_code=0, output="b")
    out = StringIO()
    call_command("liza_trim_runs", "--days", "30", stdout=out)
    assert "1 run output(s)" in out.getvalue()
    old, recent = Run.objects.get(pk=old.pk), Run.objects.get(pk=recent.pk)
    assert (old.output, old.reason) == ("", "session ended, work left")
    assert recent.output == "b"
