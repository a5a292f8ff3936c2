"""The review-slot rule is `liza_review_slot_v2` (boards migration 0028), the product's only
implementation of it; this holds it equal to the Python reference model (`review_slot_oracle`)
over random boards, at the same `now`, for every reviewer: the queue review claim-next picks
from and `/work` asks (`reviewable_tasks`), and each task's refusal (`review_slot`).

Boards are written row by row, not walked through the services: the rule reads rows, and every
combination of the fields it reads must get the reference model's answer. Review leases sit on,
just before and just after the grace boundary; each task's log holds submissions, reviews given
back (by agents and by a person of the same name, applied and refused, judged or because the
reviewer's session was stopping) and in-state events, in an order its timestamps do not tell.
Planted differences — `>` as `>=` on the grace boundary, a release remembered past a
resubmission, an in-state event taken for a submission, a release's event trusted without the
review it closed, a stopping release taken for a judged one, the first release of the round
taken for the last — are found by the property. A statement-count test pins the pick at one
statement.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import Agent
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.reviews import review_slot, reviewable_tasks
from boards.coordination.services.reviews import review_claim_next
from boards.protocol import Action
from tests.coordination.selectors import properties
from tests.coordination.selectors.review_slot_oracle import (
    Card,
    Claim,
    Mark,
    Reviewer,
    reviewable,
    slot,
)
from tests.factories import T0, ProjectFactory
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

NOW = T0 + timedelta(days=1)
STATES = ("READY_FOR_REVIEW", "READY_FOR_REVIEW", "READY_FOR_REVIEW", "CLAIMED", "APPROVED")
REVIEWERS = ("code-reviewer-1", "code-reviewer-2", "code-reviewer-3")
PEOPLE = ("", "coder-1", *REVIEWERS)
CRITICALITIES = ("standard", "complex", "security-sensitive", "security-sensitive")

CLAIM = st.fixed_dictionaries(
    {
        "reviewer": st.sampled_from(("coder-1", *REVIEWERS)),
        "verdict": st.sampled_from(("", "", "APPROVED", "REJECTED")),
        # None, or an expiry on `now - grace` nudged by -1 s, -1 µs, 0, +1 µs or +1 s.
        "lease": st.one_of(st.none(), st.sampled_from((-1_000_000, -1, 0, 0, 1, 1_000_000))),
        "closed": st.sampled_from((False, False, False, True)),
    }
)
# The task's log, in append order: a submission (into READY_FOR_REVIEW from CLAIMED), a review
# given back (judged, or because the reviewer's session was stopping: its data says so, as
# review_release writes it), or an event that leaves the task READY_FOR_REVIEW; by an agent or
# by a person named like one, applied or refused, at a time that may tie or run backwards.
MARKS = {
    "entered": (Action.READY_FOR_REVIEW, "CLAIMED", "READY_FOR_REVIEW", {}),
    "released": (Action.REVIEW_RELEASED, "", "", {"reason": "out of context"}),
    "stopped": (Action.REVIEW_RELEASED, "", "", {"reason": "signal", "stopping": True}),
    "stayed": (Action.EDITED, "READY_FOR_REVIEW", "READY_FOR_REVIEW", {"stopping": True}),
}
MARK = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(("entered", "released", "released", "stopped", "stayed")),
        "by": st.sampled_from(("coder-1", *REVIEWERS)),
        "applied": st.sampled_from((True, True, True, False)),
        "agent": st.sampled_from((True, True, True, False)),
        "at": st.integers(0, 2),
    }
)
TASK = st.fixed_dictionaries(
    {
        "status": st.sampled_from(STATES),
        "suspended": st.sampled_from((False, False, True)),
        "goal": st.sampled_from(properties.GOALS),
        "assigned_to": st.sampled_from(PEOPLE),
        "failed_by": st.lists(st.sampled_from(PEOPLE[1:]), max_size=2, unique=True),
        "criticality": st.sampled_from(CRITICALITIES),
        "round": st.lists(CLAIM, max_size=3, unique_by=lambda c: c["reviewer"]),
        "history": st.lists(MARK, max_size=5),
        "priority": st.integers(1, 3),
        "created": st.integers(0, 2),  # ties happen, then the id decides
    }
)
REVIEWER = st.fixed_dictionaries(
    {
        "status": st.sampled_from(("STARTING", "IDLE", "IDLE", "IDLE", "REVIEWING")),
        "security": st.booleans(),
    }
)
BOARD = st.fixed_dictionaries(
    {
        "grace": st.sampled_from((0, 60)),
        "reviewers": st.tuples(REVIEWER, REVIEWER, REVIEWER),
        "tasks": st.lists(TASK, min_size=1, max_size=6),
    }
)


def _build(board):
    """Write the board; the config (unsaved: the selectors take it from the caller), the
    reviewers as rows and as the reference model's, and the model's cards."""
    project = ProjectFactory()
    config = ProjectConfig(project=project, lease_grace=board["grace"])
    goals = properties.goal_rows(project)
    agents = [
        Agent.objects.create(
            project=project,
            agent_id=agent_id,
            role="code_reviewer",
            status=spec["status"],
            security_reviewer=spec["security"],
        )
        for agent_id, spec in zip(REVIEWERS, board["reviewers"], strict=True)
    ]
    Agent.objects.create(project=project, agent_id="coder-1", role="coder", status="IDLE")
    cards = []
    for i, spec in enumerate(board["tasks"]):
        task = properties.task_row(
            project, goals, i, spec, failed_by=spec["failed_by"], criticality=spec["criticality"]
        )
        claims, closed = [], []
        for claim in spec["round"]:
            expires = (
                None
                if claim["lease"] is None
                else NOW - timedelta(seconds=board["grace"], microseconds=claim["lease"])
            )
            Review.objects.create(
                project=project,
                task=task,
                reviewer=claim["reviewer"],
                review_commit="c0ffee01",
                claimed_at=T0,
                lease_expires=expires,
                verdict=claim["verdict"],
                closed_at=T0 if claim["closed"] else None,
            )
            (closed if claim["closed"] else claims).append(
                Claim(claim["reviewer"], claim["verdict"], expires)
            )
        history = [_event(project, task, mark) for mark in spec["history"]]
        cards.append(
            Card(
                pk=task.pk,
                status=spec["status"],
                suspended=spec["suspended"],
                goal_status=spec["goal"],
                assigned_to=spec["assigned_to"],
                failed_by=tuple(spec["failed_by"]),
                criticality=spec["criticality"],
                round=tuple(claims),
                closed=tuple(closed),
                history=tuple(history),
                priority=spec["priority"],
                created=task.created,
            )
        )
    return project, config, agents, cards


def _event(project, task: Task, mark: dict) -> Mark:
    """The event row of `mark` (ids in the order written), and the reference model's mark."""
    action, from_status, to_status, data = MARKS[mark["kind"]]
    row = Event.objects.create(
        project=project,
        task=task,
        timestamp=T0 - timedelta(seconds=mark["at"]),
        actor_kind="agent" if mark["agent"] else "human",
        actor_id=mark["by"],
        action=action,
        from_status=from_status,
        to_status=to_status,
        outcome="applied" if mark["applied"] else "rejected",
        detail=mark["kind"],
        data=data,
    )
    return Mark(
        row.action,
        row.actor_kind,
        row.actor_id,
        row.outcome,
        row.from_status,
        row.to_status,
        stopping=mark["kind"] == "stopped",
    )


def _differences(board) -> list[str]:
    """Where the SQL and the reference model disagree on `board`, for each reviewer; the
    board's rows are rolled back afterwards."""
    found: list[str] = []
    with properties.rolled_back():
        project, config, agents, cards = _build(board)
        security = {a.agent_id for a in agents if a.security_reviewer}
        for agent in agents:
            model = Reviewer(agent.agent_id, agent.status, agent.security_reviewer)
            asked = dict(grace=config.lease_grace, now=NOW, security_ids=security)
            sql = [
                t.pk
                for t in reviewable_tasks(project=project, reviewer=agent, now=NOW, config=config)
            ]
            expected = reviewable(cards, model, **asked)
            if sql != expected:
                found.append(f"{agent.agent_id}: sql {sql} != model {expected}")
            codes = dict(
                Task.objects.filter(project=project)
                .annotate(slot=review_slot(agent, NOW, config, project_id=project.pk))
                .values_list("pk", "slot")
            )
            for card in cards:
                if codes[card.pk] != slot(card, model, **asked):
                    found.append(
                        f"{agent.agent_id} on {card.pk}: sql {codes[card.pk]!r} != "
                        f"model {slot(card, model, **asked)!r}"
                    )
    return found


def _on_the_boundary(*, grace: int, nudge: int, verdict: str = "") -> dict:
    """A standard task whose one claim (code-reviewer-2's) has its lease on (or 1 µs off) the
    grace boundary: its slot is open to code-reviewer-1 exactly when the lease is dead."""
    claim = {"reviewer": "code-reviewer-2", "verdict": verdict, "lease": nudge, "closed": False}
    task = {
        "status": "READY_FOR_REVIEW",
        "suspended": False,
        "goal": None,
        "assigned_to": "coder-1",
        "failed_by": [],
        "criticality": "standard",
        "round": [claim],
        "history": [],
        "priority": 1,
        "created": 0,
    }
    idle = {"status": "IDLE", "security": False}
    return {"grace": grace, "reviewers": (idle, idle, idle), "tasks": [task]}


BOUNDARY_BOARDS = [
    _on_the_boundary(grace=grace, nudge=nudge) for grace in (0, 60) for nudge in (-1, 0, 1)
]


def _mark(kind: str, by: str = "code-reviewer-1", *, applied: bool = True, agent: bool = True):
    return {"kind": kind, "by": by, "applied": applied, "agent": agent, "at": 0}


# One standard task, no review open, code-reviewer-1's review of it closed without a verdict (as a
# release leaves it) or none, and its log one of these (the reviewers all IDLE): the release of
# code-reviewer-1 stands in this round, or it does not.
LET_GO = {"reviewer": "code-reviewer-1", "verdict": "", "lease": None, "closed": True}
ENTERED = _mark("entered", "coder-1")
ROUNDS = {
    "released this round": ([LET_GO], [ENTERED, _mark("released")]),
    "released, then resubmitted": ([LET_GO], [ENTERED, _mark("released"), ENTERED]),
    "released, then an in-state event": (
        [LET_GO],
        [ENTERED, _mark("released"), _mark("stayed", "planner-1")],
    ),
    "released, no submission logged (imported)": ([LET_GO], [_mark("released")]),
    "a refused release": ([LET_GO], [ENTERED, _mark("released", applied=False)]),
    "a person's release, named like the reviewer": (
        [LET_GO],
        [ENTERED, _mark("released", agent=False)],
    ),
    "a release logged, no review of it closed": ([], [ENTERED, _mark("released")]),
    # Its supervisor stopped (restarted, the machine rebooted): not its judgement.
    "released while stopping": ([LET_GO], [ENTERED, _mark("stopped")]),
    # Two give-backs in a round: a claim by name between them; the last decides.
    "released, claimed by name, stopped": (
        [LET_GO],
        [ENTERED, _mark("released"), _mark("stopped")],
    ),
    "stopped, claimed by name, released": (
        [LET_GO],
        [ENTERED, _mark("stopped"), _mark("released")],
    ),
}
ROUND_BOARDS = {
    name: {
        "grace": 0,
        "reviewers": ({"status": "IDLE", "security": False},) * 3,
        "tasks": [
            {**_on_the_boundary(grace=0, nudge=0)["tasks"][0], "round": rows, "history": log}
        ],
    }
    for name, (rows, log) in ROUNDS.items()
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@properties.with_boundaries([*BOUNDARY_BOARDS, *ROUND_BOARDS.values()])
def test_review_slot_sql_equals_the_reference_model(board):
    assert _differences(board) == []


def test_the_round_boards_tell_a_release_of_this_round_apart():
    """What the round boards stand for, from the reference model alone: they are examples the
    property always runs, so each must be the case its name says."""
    reviewer = Reviewer("code-reviewer-1", "IDLE", False)
    answers = {}
    for name, (rows, log) in ROUNDS.items():
        closed = tuple(Claim(r["reviewer"], r["verdict"], None) for r in rows)
        marks = tuple(Mark(*_mark_fields(m)) for m in log)
        card = Card(
            1, "READY_FOR_REVIEW", False, None, "coder-1", (), "standard", (), closed, marks, 1, T0
        )
        answers[name] = slot(card, reviewer, security_ids=set(), now=NOW, grace=0)
    assert answers == {
        "released this round": "released",
        "released, then resubmitted": None,
        "released, then an in-state event": "released",
        "released, no submission logged (imported)": "released",
        "a refused release": None,
        "a person's release, named like the reviewer": None,
        "a release logged, no review of it closed": None,
        "released while stopping": None,
        "released, claimed by name, stopped": None,
        "stopped, claimed by name, released": "released",
    }


def _mark_fields(mark: dict) -> tuple:
    action, from_status, to_status, _ = MARKS[mark["kind"]]
    outcome = "applied" if mark["applied"] else "rejected"
    kind = "agent" if mark["agent"] else "human"
    stopping = mark["kind"] == "stopped"
    return (str(action), kind, mark["by"], outcome, from_status, to_status, stopping)


@contextmanager
def _planted(needle: str, replacement: str):
    """`liza_review_slot_v2` with `needle` replaced, in this test's transaction only (DDL is
    transactional in PostgreSQL; the rollback restores the migration's function)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = 'liza_review_slot_v2'"
        )
        definition = cursor.fetchone()[0]
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, replacement))
    yield


def test_a_planted_difference_on_the_grace_boundary_is_caught():
    """The live lease's `>` planted as `>=`: a board with a lease exactly on its boundary tells
    them apart."""
    needle = "r.lease_expires + make_interval(secs => p_grace) > p_now"
    with _planted(needle, needle.replace(" > ", " >= ")):
        on_it = [board["tasks"][0]["round"][0]["lease"] == 0 for board in BOUNDARY_BOARDS]
        assert [bool(_differences(board)) for board in BOUNDARY_BOARDS] == on_it


@pytest.mark.parametrize(
    ("needle", "replacement", "caught_on"),
    [
        # The round forgotten: a release stands past the coder's resubmission.
        ("e.id > coalesce(", "e.id > 0 * coalesce(", {"released, then resubmitted"}),
        # An event that leaves the task READY_FOR_REVIEW taken for a submission.
        ("AND s.from_status <> 'READY_FOR_REVIEW'", "", {"released, then an in-state event"}),
        # The event log trusted without the review row the release closed.
        (
            "WHEN round.let_go AND (",
            "WHEN (",
            {"a release logged, no review of it closed"},
        ),
        # A give-back while the session was stopping taken for the reviewer's judgement.
        (
            """SELECT NOT e.data @> '{"stopping": true}'""",
            "SELECT true",
            {"released while stopping", "released, claimed by name, stopped"},
        ),
        # The round's first give-back taken for its last.
        (
            "ORDER BY e.id DESC",
            "ORDER BY e.id",
            {"released, claimed by name, stopped", "stopped, claimed by name, released"},
        ),
    ],
)
def test_a_planted_difference_in_the_round_is_caught(needle, replacement, caught_on):
    with _planted(needle, replacement):
        found = {name for name, board in ROUND_BOARDS.items() if _differences(board)}
    assert found == caught_on


@pytest.mark.parametrize("ready", [1, 3])
def test_the_review_pick_is_one_statement_whatever_the_board(world, ready):
    """The pick is one statement (after the spent budgets' read), however many tasks are ready:
    it was four (the budgets, the tasks, their open reviews, the security-flagged reviewers)
    while the rule was Python over rows."""
    for i in range(ready):
        world.ready_for_review(f"t{i}", coder=f"coder-{1 + i % 3}", priority=1 + i % 3)
    reviewer = world.agent("code-reviewer-1")
    with CaptureQueriesContext(connection) as pick:
        found = reviewable_tasks(
            project=world.project, reviewer=reviewer, now=world.now, config=world.project.config
        )
    assert len(found) == ready
    assert [q["sql"].count("liza_review_slot_v2") for q in pick.captured_queries] == [0, 1]


def test_review_claim_next_costs_the_same_statements_on_a_busier_board(db):
    """Review claim-next's statements do not grow with the tasks waiting for review."""
    statements = []
    for ready in (1, 3):
        world = World(now=T0)
        for i in range(ready):
            world.ready_for_review(f"t{i}", coder=f"coder-{1 + i % 3}", priority=1 + i % 3)
        reviewer = world.agent("code-reviewer-1")
        with CaptureQueriesContext(connection) as whole:
            review = review_claim_next(project=world.project, agent=reviewer, now=world.tick())
        assert review is not None and review.task.key == "t0"
        statements.append(len(whole.captured_queries))
    assert statements[0] == statements[1], statements
