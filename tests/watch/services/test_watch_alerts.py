"""The watcher's alerts (SPEC §9): one open alert per (type, subject), raised the first sweep
that sees its condition, counted while it lasts, escalated when it worsens, resolved the first
sweep after it clears. The clock is the `now` every sweep takes."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Discovery, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services import records, tasks
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services.projects import project_pause, project_resume
from boards.coordination.services.tasks import task_abandon
from boards.coordination.services.tasks.limits import task_set_limits
from boards.interop.exporting import project_violations
from boards.interop.invariants import Violation
from boards.protocol import AgentStatus, format_timestamp
from boards.watch.services.watch import watch_sweep


def _open(world, type_: str) -> list[Alert]:
    return list(Alert.objects.filter(project=world.project, type=type_, resolved_at__isnull=True))


def _all(world, type_: str) -> list[Alert]:
    return list(Alert.objects.filter(project=world.project, type=type_))


def test_a_blocked_task_raises_one_alert_counted_each_sweep_and_resolved_when_it_ends(world):
    world.blocked("T-1")
    first = world.tick()
    sweep = watch_sweep(project=world.project, now=first)
    assert sweep.alerts == ["alert warning: BLOCKED: T-1 — Spec is silent on errors"]
    for _ in range(2):
        assert watch_sweep(project=world.project, now=world.tick(10)).alerts == []
    [alert] = _open(world, Alert.Type.BLOCKED)
    assert (alert.subject, alert.count, alert.created, alert.last_seen) == (
        "T-1",
        3,
        first,
        world.now,
    )
    assert alert.task == world.task("T-1")

    # The move that ends the condition ends the alert with it (issue 25), not the next sweep.
    resolved_at = world.tick()
    task_abandon(task=world.task("T-1"), actor=world.planner, reason="dropped", now=resolved_at)
    [alert] = _all(world, Alert.Type.BLOCKED)
    assert alert.resolved_at == resolved_at and alert.count == 3
    assert watch_sweep(project=world.project, now=world.tick()).alerts == []


def test_an_expired_lease_alert_lasts_until_another_coder_takes_the_task_over(world):
    task = world.claimed("T-1")
    dead = task.lease_expires + timedelta(seconds=config_of(world.project).lease_grace + 1)
    watch_sweep(project=world.project, now=dead)
    [alert] = _open(world, Alert.Type.LEASE_EXPIRED)
    assert (alert.subject, alert.agent_id) == ("T-1", "coder-1")

    world.now = dead + timedelta(seconds=5)
    world.claim("T-1", "coder-2")  # the takeover
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.LEASE_EXPIRED) == []
    assert len(_all(world, Alert.Type.LEASE_EXPIRED)) == 1


def test_a_lapsed_review_claim_alerts_until_a_reviewer_claims_again(world):
    world.ready_for_review("T-1")
    world.claim_review("T-1")
    review = world.task("T-1").reviews.get()
    dead = review.lease_expires + timedelta(seconds=config_of(world.project).lease_grace + 1)
    watch_sweep(project=world.project, now=dead)  # closes the claim, then sees the condition
    [alert] = _open(world, Alert.Type.REVIEW_LEASE_EXPIRED)
    assert (alert.subject, alert.agent_id) == ("T-1", "code-reviewer-1")
    world.now = dead
    world.claim_review("T-1", "code-reviewer-2")
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.REVIEW_LEASE_EXPIRED) == []


def test_a_stale_checkpoint_escalates_at_30_minutes_2_hours_and_8_hours(world):
    world.unclaimed("T-1")
    sprint = sprint_services.sprint_create(
        project=world.project, actor=world.planner, planned=["T-1"], now=world.tick()
    )
    at = world.tick()
    sprint_services.sprint_checkpoint(sprint=sprint, actor=world.admin, reason="look", now=at)

    assert watch_sweep(project=world.project, now=at + timedelta(minutes=30)).alerts == []
    assert watch_sweep(project=world.project, now=at + timedelta(minutes=31)).alerts == [
        "alert warning: CHECKPOINT STALE: sprint-1 at CHECKPOINT (for 31 min)"
    ]
    stuck = at + timedelta(hours=2, minutes=1)
    assert watch_sweep(project=world.project, now=stuck).alerts == [
        "alert escalated to critical: CHECKPOINT STUCK: sprint-1 at CHECKPOINT (for 121 min)"
    ]
    abandoned = at + timedelta(hours=8, minutes=1)
    # Already critical: a step at the same level (the escalation webhook sends it too).
    assert watch_sweep(project=world.project, now=abandoned).alerts == [
        "alert escalated: CHECKPOINT ABANDONED?: sprint-1 at CHECKPOINT (for 481 min)"
    ]
    assert watch_sweep(project=world.project, now=abandoned + timedelta(minutes=1)).alerts == []
    [alert] = _open(world, Alert.Type.STALE_CHECKPOINT)
    assert (alert.level, alert.escalated_at, alert.count) == (Alert.Level.CRITICAL, abandoned, 4)
    # The stored text holds no age (issue 25): the age is computed when shown, from `since`.
    assert alert.message == "CHECKPOINT ABANDONED?: sprint-1 at CHECKPOINT"
    assert alert.since == at

    resumed = abandoned + timedelta(minutes=2)
    sprint_services.sprint_resume(sprint=sprint, actor=world.admin, decision="go", now=resumed)
    watch_sweep(project=world.project, now=resumed)
    assert _open(world, Alert.Type.STALE_CHECKPOINT) == []


def test_a_stale_pause_warns_after_30_minutes_and_clears_on_resume(world):
    at = world.tick()
    project_pause(project=world.project, actor=world.admin, reason="lunch", now=at)
    world.project.refresh_from_db()
    watch_sweep(project=world.project, now=at + timedelta(minutes=29))
    assert _open(world, Alert.Type.STALE_PAUSE) == []
    watch_sweep(project=world.project, now=at + timedelta(minutes=31))
    [alert] = _open(world, Alert.Type.STALE_PAUSE)
    assert alert.level == Alert.Level.WARNING
    watch_sweep(project=world.project, now=at + timedelta(hours=3))
    [alert] = _open(world, Alert.Type.STALE_PAUSE)
    assert alert.level == Alert.Level.CRITICAL and alert.message.startswith("PAUSE FORGOTTEN?")
    project_resume(project=world.project, actor=world.admin, now=at + timedelta(hours=3))
    world.project.refresh_from_db()
    watch_sweep(project=world.project, now=at + timedelta(hours=3, seconds=1))
    assert _open(world, Alert.Type.STALE_PAUSE) == []


def test_an_immediate_discovery_alerts_until_it_is_triaged(world):
    records.discovery_create(
        project=world.project,
        actor=world.coder,
        description="No idempotency keys",
        severity="high",
        urgency="immediate",
        now=world.tick(),
    )
    watch_sweep(project=world.project, now=world.tick())
    [alert] = _open(world, Alert.Type.IMMEDIATE_DISCOVERY)
    assert (alert.subject, alert.level) == ("disc-1", Alert.Level.CRITICAL)
    records.discovery_triage(
        discovery=Discovery.objects.get(project=world.project, disc_id="disc-1"),
        actor=world.admin,
        decision="reject",
        note="not a problem",
        now=world.tick(),
    )
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.IMMEDIATE_DISCOVERY) == []


def test_approaching_limits_warns_two_below_the_effective_limit(world):
    world.claimed("T-1")  # iteration 1
    task_set_limits(task=world.task("T-1"), actor=world.admin, now=world.tick(), max_iterations=4)
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.APPROACHING_LIMITS) == []  # 1 < 4 − 2
    task_set_limits(task=world.task("T-1"), actor=world.admin, now=world.tick(), max_iterations=3)
    watch_sweep(project=world.project, now=world.tick())
    [alert] = _open(world, Alert.Type.APPROACHING_LIMITS)
    assert alert.message == "APPROACHING LIMIT: T-1 — iteration 1/3"


def test_integration_failed_is_critical(world):
    world.integration_failed("T-1")
    watch_sweep(project=world.project, now=world.tick())
    [alert] = _open(world, Alert.Type.INTEGRATION_FAILED)
    assert (alert.subject, alert.level) == ("T-1", Alert.Level.CRITICAL)


def test_the_database_allows_one_open_alert_per_type_and_subject(world):
    fields = {"project": world.project, "type": Alert.Type.BLOCKED, "subject": "T-1"}
    Alert.objects.create(**fields, message="a", created=world.now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Alert.objects.create(**fields, message="b", created=world.now)
    Alert.objects.filter(project=world.project).update(resolved_at=world.now)
    Alert.objects.create(**fields, message="c", created=world.now)  # a new one once resolved


# -- the original watcher's other conditions (reference §2.6: 4, 5, 6, 8, 10, 11) -------------


def test_a_draft_left_for_more_than_30_minutes_is_stale(world):
    world.draft("T-1")
    created = world.task("T-1").created
    watch_sweep(project=world.project, now=created + timedelta(minutes=30))
    assert _open(world, Alert.Type.STALE_DRAFT) == []
    watch_sweep(project=world.project, now=created + timedelta(minutes=31))
    [alert] = _open(world, Alert.Type.STALE_DRAFT)
    assert (alert.subject, alert.level) == ("T-1", Alert.Level.WARNING)
    assert alert.message == "STALE DRAFT: T-1 (Planner crash?)"
    assert alert.since == created
    tasks.task_finalize(task=world.task("T-1"), actor=world.planner, now=world.tick())
    watch_sweep(project=world.project, now=created + timedelta(minutes=32))
    assert _open(world, Alert.Type.STALE_DRAFT) == []


def test_work_in_progress_without_an_event_for_30_minutes_is_stalled(world):
    world.ready_for_review("T-1")  # no lease runs: sweeps themselves write nothing
    last = Event.objects.filter(project=world.project).order_by("-timestamp")[0].timestamp
    watch_sweep(project=world.project, now=last + timedelta(minutes=30))
    assert _open(world, Alert.Type.STALLED) == []
    watch_sweep(project=world.project, now=last + timedelta(minutes=45))
    [alert] = _open(world, Alert.Type.STALLED)
    assert (alert.subject, alert.message) == (
        world.project.slug,
        "STALLED: no progress",
    )
    assert alert.since == last
    world.now = last + timedelta(minutes=46)
    world.claim_review("T-1")  # progress
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.STALLED) == []


def test_a_project_with_nothing_that_could_move_is_not_stalled(world):
    world.draft("T-1")  # waits for the planner, not for progress
    world.blocked("T-2")  # waits for a human
    watch_sweep(project=world.project, now=world.tick(3600 * 5))
    assert _open(world, Alert.Type.STALLED) == []


def test_a_rejected_task_whose_coder_is_not_working_is_orphaned(world):
    world.rejected("T-1")
    rejected_at = world.now
    assert world.coder.status == AgentStatus.WAITING  # it has not taken its task back
    watch_sweep(project=world.project, now=rejected_at + timedelta(seconds=30))
    assert _open(world, Alert.Type.ORPHANED_REJECTED) == []
    watch_sweep(project=world.project, now=rejected_at + timedelta(seconds=31))
    [alert] = _open(world, Alert.Type.ORPHANED_REJECTED)
    assert (alert.level, alert.agent_id) == (Alert.Level.CRITICAL, "coder-1")
    assert alert.message == (
        "ORPHANED REJECTED: T-1 — assigned to coder-1 but the agent is WAITING"
    )
    world.now = rejected_at + timedelta(seconds=40)
    world.claim("T-1")  # its coder takes it back
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.ORPHANED_REJECTED) == []


def test_a_task_taken_over_by_another_coder_is_reported_reassigned(world):
    task = world.claimed("T-1")
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.REASSIGNED) == []
    config = config_of(world.project)
    world.now = task.lease_expires + timedelta(
        seconds=config.lease_grace + config.retry_backoff[0] + 1
    )
    world.claim("T-1", "coder-2")
    watch_sweep(project=world.project, now=world.tick())
    [alert] = _open(world, Alert.Type.REASSIGNED)
    assert (
        alert.message == "REASSIGNED: T-1 — now coder-2 (was coder-1), hypothesis exhaustion risk"
    )


def test_a_review_loop_at_its_cliff_and_hypothesis_exhaustion_are_critical(world):
    world.rejected("T-1")
    task_set_limits(
        task=world.task("T-1"), actor=world.admin, now=world.tick(), max_review_cycles=2
    )
    watch_sweep(project=world.project, now=world.tick())
    assert _open(world, Alert.Type.REVIEW_LOOP) == []  # 1 cycle of 2
    Task.objects.filter(pk=world.task("T-1").pk).update(
        review_cycles_current=2, failed_by=["coder-1", "coder-2"]
    )
    watch_sweep(project=world.project, now=world.tick())
    [loop] = _open(world, Alert.Type.REVIEW_LOOP)
    [exhausted] = _open(world, Alert.Type.HYPOTHESIS_EXHAUSTION)
    assert loop.message == "REVIEW LOOP: T-1 — 2 cycles (at cliff)"
    assert exhausted.message == "HYPOTHESIS EXHAUSTION: T-1 — requires rescope"
    assert loop.level == exhausted.level == Alert.Level.CRITICAL


# -- INVALID STATE: the invariants, checked by the watcher once a minute ---------------------


def test_a_broken_invariant_is_a_critical_alert_naming_the_rule_and_the_last_event(world):
    task = world.claimed("T-1")
    broken = Violation("lease_fields", "T-1", "a CLAIMED task has a lease", "lease_expires")
    sweep = watch_sweep(project=world.project, now=world.tick(), violations=[broken])
    [alert] = _open(world, Alert.Type.INVALID_STATE)
    assert (alert.level, alert.task_id, alert.subject) == (
        Alert.Level.CRITICAL,
        task.pk,
        "lease_fields T-1",
    )
    last = Event.objects.filter(task=task).order_by("-timestamp", "-id")[0]
    assert alert.message == (
        "INVALID STATE: lease_fields: T-1: a CLAIMED task has a lease (lease_expires); "
        f"last event: {last.action} by {last.actor_id} at {format_timestamp(last.timestamp)}"
    )
    assert sweep.alerts == [f"alert critical: {alert.message}"]
    # Sweeps that did not check the invariants leave it as it is; one that did clears it.
    watch_sweep(project=world.project, now=world.tick(10))
    assert _open(world, Alert.Type.INVALID_STATE) == [alert]
    watch_sweep(project=world.project, now=world.tick(10), violations=[])
    assert _open(world, Alert.Type.INVALID_STATE) == []


def test_the_watcher_command_checks_the_invariants_of_a_project_broken_behind_its_back(world):
    world.claimed("T-1")
    # What no service would write: a CLAIMED task without its lease (an edit in the database).
    Task.objects.filter(pk=world.task("T-1").pk).update(lease_expires=None)
    violations, _ = project_violations(world.project)
    assert violations, "the edit must break an invariant for this test to mean anything"

    out = StringIO()
    call_command("liza_watch", once=True, project=[world.project.slug], stdout=out)
    raised = _open(world, Alert.Type.INVALID_STATE)
    assert {a.subject for a in raised} == {f"{v.rule} {v.subject}"[:64] for v in violations}
    assert "alert critical: INVALID STATE" in out.getvalue()
