"""The review-slot rule is `liza_review_slot_v1` (boards migration 0026), the product's only
implementation of it; this holds it equal to the Python reference model (`review_slot_oracle`)
over random boards, at the same `now`, for every reviewer: the queue review claim-next picks
from and `/work` asks (`reviewable_tasks`), and each task's refusal (`review_slot`).

Boards are written row by row, not walked through the services: the rule reads rows, and every
combination of the fields it reads must get the reference model's answer. Review leases sit on,
just before and just after the grace boundary; the last test plants `>` as `>=` there and shows
the property finds it. A statement-count test pins the pick at one statement.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import Agent
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.reviews import review_slot, reviewable_tasks
from boards.coordination.services.reviews import review_claim_next
from tests.coordination.selectors import properties
from tests.coordination.selectors.review_slot_oracle import Card, Claim, Reviewer, reviewable, slot
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
TASK = st.fixed_dictionaries(
    {
        "status": st.sampled_from(STATES),
        "suspended": st.sampled_from((False, False, True)),
        "goal": st.sampled_from(properties.GOALS),
        "assigned_to": st.sampled_from(PEOPLE),
        "failed_by": st.lists(st.sampled_from(PEOPLE[1:]), max_size=2, unique=True),
        "criticality": st.sampled_from(CRITICALITIES),
        "round": st.lists(CLAIM, max_size=3, unique_by=lambda c: c["reviewer"]),
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
        claims = []
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
            if not claim["closed"]:
                claims.append(Claim(claim["reviewer"], claim["verdict"], expires))
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
                priority=spec["priority"],
                created=task.created,
            )
        )
    return project, config, agents, cards


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
        "priority": 1,
        "created": 0,
    }
    idle = {"status": "IDLE", "security": False}
    return {"grace": grace, "reviewers": (idle, idle, idle), "tasks": [task]}


BOUNDARY_BOARDS = [
    _on_the_boundary(grace=grace, nudge=nudge) for grace in (0, 60) for nudge in (-1, 0, 1)
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@properties.with_boundaries(BOUNDARY_BOARDS)
def test_review_slot_sql_equals_the_reference_model(board):
    assert _differences(board) == []


def test_a_planted_difference_on_the_grace_boundary_is_caught():
    """The live lease's `>` planted as `>=`, in this test's transaction only (DDL is
    transactional in PostgreSQL; the rollback restores the migration's function): a board with
    a lease exactly on its boundary tells them apart."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = 'liza_review_slot_v1'"
        )
        definition = cursor.fetchone()[0]
        needle = "r.lease_expires + make_interval(secs => p_grace) > p_now"
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, needle.replace(" > ", " >= ")))
    on_it = [board["tasks"][0]["round"][0]["lease"] == 0 for board in BOUNDARY_BOARDS]
    assert [bool(_differences(board)) for board in BOUNDARY_BOARDS] == on_it


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
    assert [q["sql"].count("liza_review_slot_v1") for q in pick.captured_queries] == [0, 1]


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
