"""Review claim-next and the named review claim against their reference model (`review_oracle`,
the Python the service ran before issue 26) over random boards, at the same `now`: the answer
(the review, none, or the refusal with its error and details), every task, agent, review and
alert row after, the events written (action, actor, from/to, detail, data, board snapshot,
outcome), and what open boards are told to redraw (the outbox). `/work` says work exactly when
claim-next, asked next, gives a review.

Each board is written once; the reference model runs on it in a savepoint that is rolled back,
then the service in another, so both start from the same rows. Boards are written row by row,
not walked through the services, so that the combinations the rules tell apart come up: several
reviewers (security-flagged or not, STARTING, IDLE or REVIEWING, one that lost a review),
criticalities and their quorum, verdicts given, review leases dead or alive on each side of the
grace boundary, closed claims and reviews given back this round, the claimer's own live (held)
or dead claim, dead claims whose reviewer is REVIEWING, IDLE or gone, suspension, goals,
per-task lease overrides, an overloaded reviewer and an enforced `max_concurrent`. A busy holder
(its row locked by another transaction) needs a second connection: see
test_a_busy_holder_makes_claim_next_pass_the_task_over below.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from agents.models import Agent
from boards.coordination import outbox
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import review_claims as service
from boards.errors import ProtocolError
from boards.protocol import Action
from tests.coordination.selectors import properties
from tests.coordination.services.tasks import claim_checks as checks
from tests.coordination.services.tasks import review_oracle as oracle
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = T0 + timedelta(days=1)
LEASE = 300
CLAIMER = "code-reviewer-1"
REVIEWERS = (CLAIMER, "code-reviewer-2", "code-reviewer-3")
# A review lease on `now - grace`, nudged by µs: dead by far, on the boundary, alive.
NUDGES = (-3_600_000_000, -1, 0, 1, 3_600_000_000)

CLAIM = st.fixed_dictionaries(
    {
        "reviewer": st.sampled_from(REVIEWERS),
        "verdict": st.sampled_from(("", "", "", "APPROVED", "REJECTED")),
        "lease": st.one_of(st.none(), st.sampled_from(NUDGES)),
        "closed": st.sampled_from((False, False, False, True)),
    }
)
TASK = st.fixed_dictionaries(
    {
        "status": st.sampled_from(
            ("READY_FOR_REVIEW", "READY_FOR_REVIEW", "READY_FOR_REVIEW", "CLAIMED", "APPROVED")
        ),
        "criticality": st.sampled_from(("standard", "complex", "security-sensitive")),
        "assigned_to": st.sampled_from(("coder-1", "coder-1", "coder-1", CLAIMER)),
        "failed_by": st.sampled_from(([], [], [CLAIMER], ["code-reviewer-2"])),
        "suspended": st.sampled_from((False, False, False, False, True)),
        "goal": st.sampled_from((None, None, None, *properties.GOALS)),
        "priority": st.integers(1, 3),
        "created": st.integers(0, 2),
        "override": st.sampled_from((None, None, 0, 600)),
        "commit": st.sampled_from(("c0ffee01", "two  words\u00a0\n")),
        "round": st.lists(CLAIM, max_size=3, unique_by=lambda c: c["reviewer"]),
        # The claimer gave back its review of this round (review_release): closed, its event.
        "released": st.sampled_from((False, False, False, True)),
    }
)
REVIEWER = st.fixed_dictionaries(
    {
        "exists": st.sampled_from((True, True, True, False)),
        "status": st.sampled_from(("STARTING", "IDLE", "IDLE", "IDLE", "REVIEWING")),
        "security": st.booleans(),
        "lease": st.one_of(st.none(), st.sampled_from((-3600, 3600, 7200))),
        "lost": st.sampled_from((False, False, True)),  # lost_task: the board's first task
        "enabled": st.sampled_from((True, True, True, True, True, False)),  # else overloaded
        # It left (`agent_leave`) and has not registered since: it claims no review.
        "left": st.sampled_from((False, False, False, True)),
    }
)
BOARD = st.fixed_dictionaries(
    {
        "grace": st.sampled_from((0, 60)),
        "max_concurrent": st.sampled_from((None, None, None, 1, 2)),
        "tasks": st.lists(TASK, min_size=1, max_size=5),
        "reviewers": st.fixed_dictionaries({r: REVIEWER for r in REVIEWERS}),
        # review claim-next, or a named review claim of one of the board's tasks
        "named": st.one_of(st.none(), st.none(), st.integers(0, 4)),
        # stop work, budgets, failures, overloaded, disabled, role, limits (claim_checks)
        "checks": checks.REVIEW_CHECKS,
    }
)


def _review_rows(project, task, spec, grace) -> None:
    for claim in spec["round"]:
        Review.objects.create(
            project=project,
            task=task,
            reviewer=claim["reviewer"],
            review_commit=task.review_commit,
            claimed_at=T0 + timedelta(minutes=len(claim["reviewer"]) % 3),
            lease_expires=None
            if claim["lease"] is None
            else NOW - timedelta(seconds=grace) + timedelta(microseconds=claim["lease"]),
            verdict=claim["verdict"],
            closed_at=T0 if claim["closed"] else None,
        )
    if spec["released"] and all(c["reviewer"] != CLAIMER for c in spec["round"]):
        Review.objects.create(
            project=project,
            task=task,
            reviewer=CLAIMER,
            review_commit=task.review_commit,
            claimed_at=T0,
            closed_at=T0,
        )
        Event.objects.create(
            project=project,
            task=task,
            timestamp=T0,
            actor_kind="agent",
            actor_id=CLAIMER,
            action=Action.REVIEW_RELEASED,
            outcome="applied",
            detail="given back",
            data={},
        )


def _build(board):
    """Write the board; the project, the claimer (as its key gives it) and its named task."""
    made = ProjectFactory()
    ProjectConfig.objects.update_or_create(
        project=made,
        defaults={
            "lease_duration": LEASE,
            "lease_grace": board["grace"],
            "max_concurrent": (
                {}
                if board["max_concurrent"] is None
                else {"code_reviewer": board["max_concurrent"]}
            )
            | board["checks"]["max_concurrent"],
        },
    )
    goals = properties.goal_rows(made)
    made_checks = checks.project_checks(made, board["checks"], NOW)
    project = Project.objects.get(pk=made.pk)  # its config and pause read afresh
    Agent.objects.create(project=project, agent_id="coder-1", role="coder", status="WAITING")
    rows = []
    for i, spec in enumerate(board["tasks"]):
        task = properties.task_row(
            project,
            goals,
            i,
            spec,
            failed_by=spec["failed_by"],
            criticality=spec["criticality"],
            review_commit=spec["commit"],
            lease_duration_override=spec["override"],
        )
        # Open alerts about the task: a review claim moves no task, so it ends none of them.
        Alert.objects.create(
            project=project,
            task=task,
            type=Alert.Type.REVIEW_LEASE_EXPIRED,
            subject=task.key,
            message="m",
            created=T0,
        )
        _review_rows(project, task, spec, board["grace"])
        rows.append(task)
    claimer = None
    for reviewer, spec in board["reviewers"].items():
        if not spec["exists"] and reviewer != CLAIMER:
            continue
        agent = Agent.objects.create(
            project=project,
            agent_id=reviewer,
            role="code_reviewer",
            status=spec["status"],
            security_reviewer=spec["security"],
            lease_expires=None if spec["lease"] is None else NOW + timedelta(seconds=spec["lease"]),
            heartbeat=T0,
            registered_at=T0,
            lost_task=rows[0] if spec["lost"] else None,
            lost_reason="taken back" if spec["lost"] else "",
            # Overloaded (seed 003): it keeps what it holds, takes no new review.
            overloaded=not spec["enabled"],
            left_at=T0 if spec["left"] else None,
        )
        if reviewer == CLAIMER:
            claimer = agent
    # The claimer's checks; a reviewer spec's `enabled` False is an overload too.
    overloaded = board["checks"]["overloaded"] or not board["reviewers"][CLAIMER]["enabled"]
    checks.agent_checks(
        claimer, rows, {**board["checks"], "overloaded": overloaded}, NOW, made_checks
    )
    named = board["named"]
    task = rows[named] if named is not None and named < len(rows) else None
    return project, claimer, task


def _state(project_id: int) -> dict:
    """Every row a review claim may write, and the outbox, comparable across the two runs."""
    pending = outbox._pending().pop(project_id, {})

    def without_id(rows):
        return [{k: v for k, v in row.items() if k != "id"} for row in rows]

    return {
        "tasks": list(Task.objects.filter(project_id=project_id).order_by("pk").values()),
        "agents": list(Agent.objects.filter(project_id=project_id).order_by("pk").values()),
        # A new review's key differs between the runs (a sequence is not rolled back).
        "reviews": without_id(
            Review.objects.filter(project_id=project_id)
            .order_by("task_id", "reviewer", "closed_at", "pk")
            .values()
        ),
        "events": without_id(Event.objects.filter(project_id=project_id).order_by("pk").values()),
        "alerts": list(
            Alert.objects.filter(project_id=project_id)
            .order_by("pk")
            .values_list("pk", "resolved_at")
        ),
        "outbox": sorted(
            (kind, object_id if kind != outbox.EVENT else 0, controls)
            for (kind, object_id), controls in pending.items()
        ),
    }


def _fields(review) -> dict:
    got = {f.attname: getattr(review, f.attname) for f in review._meta.concrete_fields}
    got.pop("id")
    return {**got, "task": review.task.key}


def _run(claim, project, agent, task) -> tuple:
    """One implementation on the board, in a savepoint rolled back after: (answer, state)."""
    outbox._pending().clear()
    try:
        with properties.rolled_back():
            fresh = Agent.objects.get(pk=agent.pk)  # as its key gives it
            try:
                if task is None:
                    got = claim["next"](project=project, agent=fresh, now=NOW)
                else:
                    got = claim["named"](task=Task.objects.get(pk=task.pk), agent=fresh, now=NOW)
                answer = ("review", None if got is None else _fields(got))
            except ProtocolError as exc:
                answer = ("refused", type(exc).__name__, exc.message, exc.details)
            state = _state(project.pk)
    except DatabaseError as exc:  # a planted difference may break a constraint
        return ("error", type(exc).__name__), {}
    return answer, state


REFERENCE = {"next": oracle.review_claim_next, "named": oracle.review_claim}
PRODUCT = {"next": service.review_claim_next, "named": service.review_claim}


def differences(board) -> list[str]:
    """Where the service and the reference model disagree on `board` (its rows rolled back)."""
    found: list[str] = []
    with properties.rolled_back():
        project, agent, task = _build(board)
        expected = _run(REFERENCE, project, agent, task)
        got = _run(PRODUCT, project, agent, task)
        # `/work` answers a reviewer's question about review claim-next (a disabled agent's key
        # is refused before it asks; a coder's `/work` is about tasks).
        reviewer = board["checks"]["enabled"] and board["checks"]["role"] == "code_reviewer"
        says = _work_says(project, agent) if task is None and reviewer else None
    actions = sorted({e["action"] for e in expected[1].get("events", [])})
    if currently_in_test_context():
        event(f"{'named' if task is not None else 'next'} {expected[0][0]} {actions}")
    if got[0] != expected[0]:
        found.append(f"answer {got[0]} != model's {expected[0]}")
    gives = got[0][0] == "review" and got[0][1] is not None
    if says is not None and says != gives:
        # `/work` asks the claim's own SQL (the slot, the held review): it says work exactly
        # when review claim-next, asked next, gives a review.
        found.append(f"/work says work={says}, review claim-next answers {got[0]}")
    for name, rows in expected[1].items():
        if got[1].get(name) != rows:
            found.append(f"{name}: service {got[1].get(name)} != model {rows}")
    return found


def _work_says(project, agent) -> bool:
    """`/work`'s answer for the claimer at `NOW`, before any claim (read-only, rolled back)."""
    with properties.rolled_back():
        fresh = Agent.objects.get(pk=agent.pk)
        return work_for_role(project=project, role=fresh.role, agent=fresh, now=NOW)["work"]


def _task(**changes) -> dict:
    """A standard task READY_FOR_REVIEW, coded by coder-1, with no review yet, changed."""
    task = {
        "status": "READY_FOR_REVIEW",
        "criticality": "standard",
        "assigned_to": "coder-1",
        "failed_by": [],
        "suspended": False,
        "goal": None,
        "priority": 2,
        "created": 0,
        "override": None,
        "commit": "c0ffee01",
        "round": [],
        "released": False,
    }
    return {**task, **changes}


def _claim(reviewer, lease=None, verdict="", closed=False) -> dict:
    return {"reviewer": reviewer, "verdict": verdict, "lease": lease, "closed": closed}


def _board(*tasks, named=None, max_concurrent=None, claimer=None, checked=None, **others) -> dict:
    """The claimer (IDLE) and the two other reviewers (REVIEWING) with `tasks`."""
    spec = {
        "exists": True,
        "status": "REVIEWING",
        "security": False,
        "lease": 3600,
        "lost": False,
        "enabled": True,
        "left": False,
    }
    return {
        "grace": 60,
        "max_concurrent": max_concurrent,
        "tasks": list(tasks),
        "reviewers": {
            CLAIMER: {**spec, "status": "IDLE", "lease": None, **(claimer or {})},
            "code-reviewer-2": {**spec, **others.get("r2", {})},
            "code-reviewer-3": {**spec, **others.get("r3", {})},
        },
        "named": named,
        "checks": checks.checks_of(**{"role": "code_reviewer", **(checked or {})}),
    }


DEAD, ALIVE = -3_600_000_000, 3_600_000_000
R2, R3 = "code-reviewer-2", "code-reviewer-3"
DEPARTED_BOARDS = [
    _board(_task(), claimer={"left": True}),
    _board(_task(), named=0, claimer={"left": True}),
    _board(
        _task(round=[_claim(CLAIMER, lease=ALIVE)]),
        _task(),
        claimer={"status": "REVIEWING", "left": True},
    ),
    _board(_task(), claimer={"status": "HANDOFF", "left": True}),
]
# Every path once on each run (random boards reach some only now and then).
KIND_BOARDS = [
    _board(_task()),
    _board(_task(commit="two  words\u00a0\n", override=600), claimer={"status": "STARTING"}),
    _board(_task(priority=3), _task(priority=1, created=1), claimer={"lost": True}),
    # dead claims of the round closed, on each side of the grace boundary
    *[_board(_task(round=[_claim(R2, lease=nudge)])) for nudge in (-1, 0, 1)],
    _board(_task(round=[_claim(R2, lease=DEAD)]), r2={"status": "IDLE"}),
    _board(_task(round=[_claim(R2, lease=DEAD)]), r2={"exists": False}),
    _board(_task(round=[_claim(R2, lease=None), _claim(R3, lease=DEAD)], criticality="complex")),
    _board(_task(round=[_claim(R2, lease=DEAD)]), named=0),
    _board(_task(round=[_claim(CLAIMER, lease=DEAD)])),
    # quorum: a complex task's second slot; a security-sensitive task's last slot
    _board(_task(criticality="complex", round=[_claim(R2, verdict="APPROVED")])),
    _board(_task(criticality="security-sensitive", round=[_claim(R2, lease=ALIVE)])),
    _board(
        _task(criticality="security-sensitive", round=[_claim(R2, lease=ALIVE)]),
        claimer={"security": True},
    ),
    # held: the claimer's live review handed back; given back this round: passed over
    _board(_task(round=[_claim(CLAIMER, lease=ALIVE)]), _task(), claimer={"status": "REVIEWING"}),
    _board(_task(released=True), _task(priority=3)),
    _board(_task(released=True), named=0),
    # refusals: overloaded, at the limit (with a review to take, and with none)
    _board(_task(), claimer={"enabled": False}),
    _board(_task(), max_concurrent=1),
    _board(_task(status="CLAIMED"), max_concurrent=1),
    _board(_task(assigned_to=CLAIMER), named=0),
    _board(_task(round=[_claim(R2, lease=ALIVE)]), named=0),
    # the claimer left: nothing for it, next or named, not even its own live review; a dead
    # claim's reviewer that left (HANDOFF) is closed as any other
    *DEPARTED_BOARDS,
    _board(_task(round=[_claim(R2, lease=DEAD)]), r2={"status": "HANDOFF", "left": True}),
]


# Each check of review claim-next once on each run, refusing or on its edge, with the claimer
# holding nothing (claimed in one statement, checked after it) and holding a live review.
HOLDING = ((), (_task(round=[_claim(CLAIMER, lease=ALIVE)]),))
CHECK_BOARDS = [
    _board(
        *held,
        _task(goal="IN_PROGRESS"),
        checked=one,
        claimer={"status": "REVIEWING"} if held else None,
    )
    for held in HOLDING
    for one in (
        {"paused": True},
        {"sprint": "CHECKPOINT"},
        {"sprint": "ABORTED"},
        {"sprint": "IN_PROGRESS", "budgets": (("sprint", 0),)},
        {"budgets": (("project", 0),)},
        {"budgets": (("project", 1),)},
        {"budgets": (("agent", 0),)},
        {"budgets": (("task", 0),)},
        {"budgets": (("goal", 0),)},
        {"expiries": (10, 100, 200)},
        {"expiries": (10, 100, "edge")},
        {"expiries": (10, 100, "in")},
        {"expiries": (10, 100, 200), "cleared": 150},
        {"crashes": (5, 50, 150)},
        {"overloaded": True},
        {"enabled": False},
        {"role": "coder"},
        {"max_concurrent": {"code_reviewer": 1}},
        {"max_concurrent": {"project": 2}},
        {"paused": True, "enabled": False},
        {"overloaded": True, "budgets": (("project", 0),)},
    )
] + [
    # the limit reached by another reviewer at work, with a review to take and with none
    _board(
        _task(criticality="complex", round=[_claim(R2, lease=ALIVE)]),
        checked={"max_concurrent": {"code_reviewer": 1}},
    ),
    _board(
        _task(status="CLAIMED", round=[_claim(R2, lease=ALIVE)]),
        checked={"max_concurrent": {"project": 1}, "overloaded": True},
    ),
    # a spent budget of the first task: passed over for the next one
    _board(_task(), _task(priority=3), checked={"budgets": (("task", 0),)}),
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@properties.with_boundaries(KIND_BOARDS + CHECK_BOARDS)
def test_review_claims_equal_the_reference_model(board):
    assert differences(board) == []


def _planted(needle: str, replacement: str, function: str = "liza_review_claim_v1") -> None:
    """Replace `needle` (once in the function) in `function`, in this test's transaction
    only: DDL is transactional in PostgreSQL, and the rollback restores it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = %s", [function]
        )
        definition = cursor.fetchone()[0]
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, replacement))


def test_a_planted_difference_in_closing_a_dead_claim_is_caught():
    """The close of a dead review claim left out: every board where a dead claim of the round is
    reclaimed tells them apart, and no other does."""
    _planted("UPDATE boards_review SET closed_at = p_now WHERE id = s.id;", "NULL;")
    caught = [bool(differences(board)) for board in KIND_BOARDS]
    reclaims = [
        any(e["action"] == Action.REVIEW_RECLAIMED for e in _reference_events(board))
        for board in KIND_BOARDS
    ]
    assert sum(reclaims) >= 6
    assert caught == reclaims


def _reference_events(board) -> list[dict]:
    with properties.rolled_back():
        project, agent, task = _build(board)
        return _run(REFERENCE, project, agent, task)[1].get("events", [])


def test_a_planted_difference_in_a_check_is_caught():
    """`liza_review_claim_v2` made blind to budgets (it claims at once as if the project had
    none): every check board with a spent budget that refuses the claim or passes the task
    over tells them apart, and no board without a budget does."""
    _planted(
        "budgets := EXISTS (SELECT 1 FROM agents_budget WHERE project_id = a.project_id);",
        "budgets := false;",
        function="liza_review_claim_v2",
    )
    caught = [bool(differences(board)) for board in CHECK_BOARDS]
    budgeted = [bool(board["checks"]["budgets"]) for board in CHECK_BOARDS]
    # A spent task budget only passes its task over: not the claimer's held review.
    spent = [
        any(
            offset <= 0 and (scope != "task" or not _holds(board))
            for scope, offset in board["checks"]["budgets"]
        )
        for board in CHECK_BOARDS
    ]
    assert sum(spent) >= 8
    assert all(c for c, s in zip(caught, spent, strict=True) if s)
    assert not any(c for c, b in zip(caught, budgeted, strict=True) if not b)


def _holds(board) -> bool:
    return any(c["reviewer"] == CLAIMER for t in board["tasks"] for c in t["round"])
