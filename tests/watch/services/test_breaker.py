"""The circuit breaker (original-liza.md §2.7, seed 002 `circuit_breaker`, issue #11): each
pattern at its threshold and not below it, only on the open sprint's evidence, evaluated by the
watcher's sweep under its lock; a trip happens once; a human resolves it with a reason."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections

from boards import protocol as p
from boards.coordination.models.projects import Sprint
from boards.coordination.models.records import Alert, CircuitBreaker, CircuitBreakerCheck, Event
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.services.projects import config_update
from boards.coordination.services.sprints import sprint_create, sprint_resume, sprint_set_deadline
from boards.coordination.services.stops import sprint_abort
from boards.errors import Conflict, Forbidden, ProtocolValidationError
from boards.protocol import Action, SprintStatus
from boards.watch.services import watch as watch_services
from boards.watch.services.breaker import circuit_breaker_resolve
from boards.watch.services.watch import watch_sweep
from tests.factories import member
from tests.watch.breaker_fixtures import (
    ambiguity,
    assumption,
    blocker,
    log,
    retry,
    trade_off,
    trip,
    workaround,
)

# (pattern, anomalies that trip it): each row matches its pattern and no other.
FIRES = [
    ("retry_cluster", [retry("E1"), retry("E1"), retry("E2")]),
    ("debt_accumulation", [trade_off("flatten"), trade_off("skip cache"), trade_off("no retry")]),
    ("assumption_cascade", [assumption("ids are ints"), assumption("ids are ints")]),
    (
        "workaround_pattern",
        [workaround(root_cause="no nesting"), trade_off("flatten", False, root_cause="no nesting")],
    ),
    # liza-analyze.sh falls back from root_cause to what.
    (
        "workaround_pattern",
        [workaround(what="skip validation"), trade_off("skip validation", False)],
    ),
    ("spec_gap_cluster", [ambiguity(spec_ref="specs/api.md"), ambiguity(spec_ref="specs/api.md")]),
    ("external_service_outage", [blocker("payment-api"), blocker("payment-api")]),
]

# (pattern, why it does not trip, anomalies just below its threshold)
BELOW = [
    ("retry_cluster", "no error_pattern shared", [retry("E1"), retry("E2"), retry("E3")]),
    ("retry_cluster", "only 2 retry_loop", [retry("E1"), retry("E1")]),
    ("debt_accumulation", "2 with debt", [trade_off("a"), trade_off("b"), trade_off("c", False)]),
    (
        "debt_accumulation",
        "'true' is a string",
        [trade_off("a"), trade_off("b"), trade_off("c", "true")],
    ),
    ("assumption_cascade", "one", [assumption("ids are ints")]),
    ("assumption_cascade", "different", [assumption("ids are ints"), assumption("ids are int")]),
    (
        "workaround_pattern",
        "root_cause first, what only as fallback",
        [workaround(root_cause="a", what="same"), workaround(root_cause="b", what="same")],
    ),
    ("workaround_pattern", "one", [workaround(root_cause="no nesting")]),
    ("spec_gap_cluster", "no spec_ref", [ambiguity(), ambiguity()]),
    (
        "spec_gap_cluster",
        "different refs",
        [ambiguity(spec_ref="a.md"), ambiguity(spec_ref="b.md")],
    ),
    ("external_service_outage", "exact match", [blocker("payment-api"), blocker("Payment-api")]),
    ("external_service_outage", "one", [blocker("payment-api")]),
]


@pytest.fixture
def sprint(world) -> Sprint:
    world.unclaimed("T-1")
    return sprint_create(
        project=world.project, actor=world.planner, planned=["T-1"], now=world.tick()
    )


def _breaker(world) -> CircuitBreaker:
    return CircuitBreaker.objects.get(project=world.project)


def _sweep(world):
    return watch_sweep(project=world.project, now=world.tick())


def _events(world, action: str) -> list[Event]:
    return list(
        Event.objects.filter(project=world.project, action=action, outcome=Event.Outcome.APPLIED)
    )


def _assert_untripped(world) -> None:
    breaker = _breaker(world)
    assert (breaker.status, breaker.current_trigger) == ("OK", None)
    assert not CircuitBreakerCheck.objects.filter(project=world.project, result="TRIGGERED")
    assert _events(world, Action.CIRCUIT_BREAKER_TRIGGERED) == []
    assert not Alert.objects.filter(project=world.project, type=Alert.Type.CIRCUIT_BREAKER)


@pytest.mark.parametrize(("pattern", "specs"), FIRES, ids=[f[0] for f in FIRES])
def test_each_pattern_trips_with_its_one_severity(world, sprint, pattern, specs):
    logged = log(world, specs, task="T-1")
    now = world.tick()
    sweep = watch_sweep(project=world.project, now=now)

    severity = p.BREAKER_PATTERNS[pattern]
    assert f"circuit breaker triggered: {pattern} ({severity}) in {sprint.sprint_id}" in (
        sweep.actions
    )
    breaker = _breaker(world)
    stamp = p.format_timestamp(now)
    assert breaker.status == "TRIGGERED"
    assert breaker.last_check == now
    assert breaker.current_trigger == {
        "timestamp": stamp,
        "pattern": pattern,
        "severity": severity,
        "report_file": "circuit_breaker_report.md",
    }
    [check] = CircuitBreakerCheck.objects.filter(project=world.project)
    assert (check.timestamp, check.pattern, check.result) == (now, pattern, "TRIGGERED")
    assert check.details == {"severity": severity}
    report = check.report
    assert (report["pattern"], report["severity"], report["sprint"]) == (
        pattern,
        severity,
        sprint.sprint_id,
    )
    assert {a["id"] for a in report["anomalies"]} <= {a.pk for a in logged}
    assert sum(row["count"] for row in report["evidence"]) >= 2
    assert all(row["tasks"] == ["T-1"] for row in report["evidence"])
    assert report["checklist"][1] == p.BREAKER_SEVERITIES[severity]
    # The sprint stops for a human, the system's doing, the reason naming the pattern.
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.CHECKPOINT
    [checkpoint] = _events(world, "sprint_checkpoint")
    assert (checkpoint.actor_kind, checkpoint.actor_id) == ("system", "system")
    assert pattern in checkpoint.detail
    [tripped] = _events(world, Action.CIRCUIT_BREAKER_TRIGGERED)
    assert (tripped.actor_kind, tripped.data["pattern"]) == ("system", pattern)
    [alert] = Alert.objects.filter(project=world.project, type=Alert.Type.CIRCUIT_BREAKER)
    assert (alert.level, alert.subject, alert.resolved_at) == ("critical", stamp, None)
    assert pattern in alert.message


@pytest.mark.parametrize(("pattern", "why", "specs"), BELOW, ids=[f"{b[0]}: {b[1]}" for b in BELOW])
def test_just_below_its_threshold_a_pattern_trips_nothing(world, sprint, pattern, why, specs):
    log(world, specs, task="T-1")
    assert not any("circuit breaker" in line for line in _sweep(world).actions)
    _assert_untripped(world)
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS


@pytest.mark.parametrize("split", [False, True], ids=["all before", "split across sprints"])
@pytest.mark.parametrize(("pattern", "specs"), FIRES, ids=[f[0] for f in FIRES])
def test_anomalies_of_another_sprint_do_not_count(world, sprint, pattern, specs, split):
    """The protocol's window, the current sprint (liza-analyze.sh scanned all anomalies [Δ])."""
    earlier, later = (specs[:-1], specs[-1:]) if split else (specs, [])
    log(world, earlier, task="T-1")
    sprint_abort(sprint=sprint, actor=world.admin, reason="Replanned", now=world.tick())
    sprint_create(project=world.project, actor=world.planner, now=world.tick())
    log(world, later)
    _sweep(world)
    _assert_untripped(world)


def _rejection_cycles(world, key: str, cycles: int) -> None:
    for _ in range(cycles):
        world.claim(key)
        world.submit(key)
        world.claim_review(key)
        world.verdict(key, "REJECTED")
    assert world.task(key).review_cycles_total == cycles


@pytest.mark.parametrize(
    ("threshold", "cycles", "scope", "fires"),
    [
        (3, 3, "planned", True),
        (3, 3, "stretch", True),
        (3, 2, "planned", False),  # just below
        (3, 3, "previous sprint", False),  # another sprint's task
        (None, 8, "planned", True),  # issue #11's default, 8 (#123: 8 cycles went unnoticed)
        (None, 7, "planned", False),
    ],
)
def test_review_churn_trips_on_a_task_of_the_sprint_at_the_threshold(
    world, threshold, cycles, scope, fires
):
    changes = {"max_review_cycles": 20}  # no auto-block before the churn threshold
    if threshold is not None:
        changes["review_churn_threshold"] = threshold
    config_update(project=world.project, actor=world.admin, now=world.tick(), **changes)
    world.unclaimed("T-1")
    world.unclaimed("T-2")
    kwargs = {"stretch": ["T-1"]} if scope == "stretch" else {"planned": ["T-1", "T-2"]}
    first = sprint_create(project=world.project, actor=world.planner, now=world.tick(), **kwargs)
    if scope == "previous sprint":
        sprint_abort(sprint=first, actor=world.admin, reason="Replanned", now=world.tick())
        sprint_create(project=world.project, actor=world.planner, planned=["T-2"], now=world.tick())
    _rejection_cycles(world, "T-1", cycles)
    sweep = _sweep(world)

    if not fires:
        _assert_untripped(world)
        return
    sprint = sprint_open(project=world.project)
    assert f"circuit breaker triggered: review_churn (SCOPE_FLAW) in {sprint.sprint_id}" in (
        sweep.actions
    )
    report = CircuitBreakerCheck.objects.get(project=world.project, result="TRIGGERED").report
    assert report["evidence"] == [
        {"value": f"{cycles} review cycles", "count": cycles, "tasks": ["T-1"], "anomalies": []}
    ]
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.CHECKPOINT


def test_a_trip_happens_once_and_not_again_for_the_same_evidence_after_its_resolution(
    world, sprint
):
    log(world, [blocker("payment-api"), blocker("payment-api")])
    first = _sweep(world)
    assert any(line.startswith("circuit breaker triggered") for line in first.actions)
    for _ in range(3):  # still TRIGGERED: nothing is evaluated, nothing tripped again
        assert not any("circuit breaker" in line for line in _sweep(world).actions)
    assert len(_events(world, Action.CIRCUIT_BREAKER_TRIGGERED)) == 1
    [alert] = Alert.objects.filter(project=world.project, type=Alert.Type.CIRCUIT_BREAKER)
    assert alert.count == 4 and alert.resolved_at is None  # one alert, seen by each sweep

    circuit_breaker_resolve(
        breaker=_breaker(world), actor=world.admin, reason="Gateway back up", now=world.tick()
    )
    sprint_resume(sprint=sprint, actor=world.admin, decision="Carry on", now=world.tick())
    for _ in range(3):  # the same two anomalies: nothing new to decide
        assert not any("circuit breaker" in line for line in _sweep(world).actions)
    assert len(_events(world, Action.CIRCUIT_BREAKER_TRIGGERED)) == 1
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None  # the condition cleared
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.IN_PROGRESS
    # History: the trip with its resolution, then one OK entry for the clean checks after it.
    history = list(CircuitBreakerCheck.objects.filter(project=world.project))
    assert [(c.pattern, c.result) for c in history] == [
        ("external_service_outage", "TRIGGERED"),
        ("", "OK"),
    ]

    # New evidence re-arms it: a third anomaly blaming the same service trips again.
    log(world, [blocker("payment-api")])
    again = _sweep(world)
    assert (
        "circuit breaker triggered: external_service_outage (EXTERNAL_DEPENDENCY) in "
        + (sprint.sprint_id)
        in again.actions
    )
    assert len(_events(world, Action.CIRCUIT_BREAKER_TRIGGERED)) == 2
    assert (
        Alert.objects.filter(
            project=world.project, type=Alert.Type.CIRCUIT_BREAKER, resolved_at__isnull=True
        )
        .exclude(pk=alert.pk)
        .count()
        == 1
    )  # a new trip is a new alert


def test_clean_checks_do_not_flood_the_history(world, sprint):
    """The original appends {pattern: null, result: OK} per run; here only when the last entry
    is not one already, while last_check follows every sweep."""
    for _ in range(5):
        now = world.tick(10)
        watch_sweep(project=world.project, now=now)
    assert _breaker(world).last_check == now
    assert [
        (c.pattern, c.result) for c in CircuitBreakerCheck.objects.filter(project=world.project)
    ] == [("", "OK")]


def test_several_patterns_at_once_make_one_trip_named_by_the_last(world, sprint):
    """One severity per trigger: liza-analyze.sh reports the last pattern that matched in its
    order; the others are listed in the report, and their evidence is covered by this trip."""
    log(world, [assumption("ids are ints"), assumption("ids are ints")])
    log(world, [blocker("payment-api"), blocker("payment-api")])
    _sweep(world)
    check = CircuitBreakerCheck.objects.get(project=world.project, result="TRIGGERED")
    assert (check.pattern, check.details["severity"]) == (
        "external_service_outage",
        "EXTERNAL_DEPENDENCY",
    )
    assert [m["pattern"] for m in check.report["also_matched"]] == ["assumption_cascade"]
    assert len(check.report["anomalies"]) == 4
    circuit_breaker_resolve(
        breaker=_breaker(world), actor=world.admin, reason="Both handled", now=world.tick()
    )
    _sweep(world)
    assert len(_events(world, Action.CIRCUIT_BREAKER_TRIGGERED)) == 1


def test_a_trip_while_the_sprint_is_at_checkpoint_leaves_it_there(world, sprint):
    sprint_set_deadline(
        sprint=sprint, actor=world.admin, deadline=world.now + timedelta(minutes=1), now=world.now
    )
    log(world, [blocker("payment-api"), blocker("payment-api")])
    sweep = watch_sweep(project=world.project, now=world.tick(120))
    assert sweep.actions[0].startswith("sprint checkpoint:")  # the deadline, first
    assert sweep.actions[1].startswith("circuit breaker triggered")
    assert _breaker(world).status == "TRIGGERED"
    assert len(_events(world, "sprint_checkpoint")) == 1


def test_without_an_open_sprint_nothing_is_evaluated(world):
    log(world, [blocker("payment-api"), blocker("payment-api")])
    _sweep(world)
    _assert_untripped(world)
    assert _breaker(world).last_check is None


@pytest.mark.django_db(transaction=True)
def test_the_evaluation_runs_inside_the_sweep_lock(world, sprint):
    """A watcher that cannot take the project's sweep lock evaluates nothing either."""
    log(world, [blocker("payment-api"), blocker("payment-api")])
    held, release = threading.Event(), threading.Event()

    def other_watcher():
        connection = connections.create_connection("default")
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_lock(%s, %s)",
                    [watch_services._LOCK_NAMESPACE, world.project.pk],
                )
                held.set()
                release.wait(10)
                cursor.execute(
                    "SELECT pg_advisory_unlock(%s, %s)",
                    [watch_services._LOCK_NAMESPACE, world.project.pk],
                )
        finally:
            connection.close()

    thread = threading.Thread(target=other_watcher)
    thread.start()
    try:
        assert held.wait(10)
        assert _sweep(world).skipped
        _assert_untripped(world)
    finally:
        release.set()
        thread.join()
    assert not _sweep(world).skipped
    assert _breaker(world).status == "TRIGGERED"


# -- the resolution -------------------------------------------------------------------------------


def test_an_admin_resolves_a_trip_with_a_reason_audited_in_the_history(world, sprint):
    trip(world)
    now = world.tick()
    breaker = circuit_breaker_resolve(
        breaker=_breaker(world), actor=world.admin, reason="  Gateway fixed by ops  ", now=now
    )
    assert (breaker.status, breaker.current_trigger) == ("OK", None)
    check = CircuitBreakerCheck.objects.get(project=world.project, result="TRIGGERED")
    assert check.details == {
        "severity": "EXTERNAL_DEPENDENCY",
        "resolution": "Gateway fixed by ops",
        "resolved_at": p.format_timestamp(now),
        "resolved_by": world.admin.username,
    }
    [event] = _events(world, Action.CIRCUIT_BREAKER_RESOLVED)
    assert (event.actor_kind, event.actor_id) == ("human", world.admin.username)
    assert "Gateway fixed by ops" in event.detail
    # Continuing the sprint stays its own decision.
    assert Sprint.objects.get(pk=sprint.pk).status == SprintStatus.CHECKPOINT


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_a_resolution_needs_a_written_reason(world, sprint, reason):
    trip(world)
    with pytest.raises(ProtocolValidationError):
        circuit_breaker_resolve(
            breaker=_breaker(world), actor=world.admin, reason=reason, now=world.tick()
        )
    assert _breaker(world).status == "TRIGGERED"


def test_only_a_triggered_breaker_can_be_resolved(world, sprint):
    with pytest.raises(Conflict):
        circuit_breaker_resolve(
            breaker=_breaker(world), actor=world.admin, reason="Nothing", now=world.tick()
        )
    assert Event.objects.filter(
        project=world.project, action="circuit_breaker_resolved_failed"
    ).exists()


@pytest.mark.parametrize("who", ["viewer", "member", "planner", "system"])
def test_only_a_project_admin_resolves(world, sprint, who):
    from boards.coordination.services.actors import SYSTEM

    trip(world)
    actor = {
        "viewer": lambda: member(world.project, "viewer"),
        "member": lambda: member(world.project, "member"),
        "planner": lambda: world.planner,
        "system": lambda: SYSTEM,
    }[who]()
    with pytest.raises(Forbidden):
        circuit_breaker_resolve(
            breaker=_breaker(world), actor=actor, reason="I say so", now=world.tick()
        )
    assert _breaker(world).status == "TRIGGERED"
    assert _events(world, Action.CIRCUIT_BREAKER_RESOLVED) == []


def test_a_triggered_state_imported_without_its_entry_is_resolved_with_one(world, sprint):
    """A state.yaml may say TRIGGERED with no history entry for it (hand-edited, v1)."""
    CircuitBreaker.objects.filter(project=world.project).update(
        status="TRIGGERED",
        current_trigger={
            "timestamp": "2026-01-05T08:00:00Z",
            "pattern": "retry_cluster",
            "severity": "ARCHITECTURE_FLAW",
            "report_file": "circuit_breaker_report.md",
        },
    )
    circuit_breaker_resolve(
        breaker=_breaker(world), actor=world.admin, reason="Old trip", now=world.tick()
    )
    [check] = CircuitBreakerCheck.objects.filter(project=world.project)
    assert (check.pattern, check.result, p.format_timestamp(check.timestamp)) == (
        "retry_cluster",
        "TRIGGERED",
        "2026-01-05T08:00:00Z",
    )
    assert check.details["resolution"] == "Old trip"
