"""Claim-next's queue is `liza_claim_queue_v1` (boards migration 0021), the product's only
implementation of the rule; this holds it equal to the Python reference model
(`claim_queue_oracle`) over random boards, at the same `now`.

Boards are written row by row here, not walked through the services: the predicate reads rows,
and every combination of the fields it reads must get the reference model's answer (reachable
boards through the services are tests/coordination/selectors/test_work.py's). Leases sit on,
just before and just after each grace and backoff boundary, where a `<` written as `<=` would
differ; the last test plants exactly that difference and shows the property finds it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.tasks import claim_candidates, retry_waits
from tests.coordination.selectors import properties
from tests.coordination.selectors.claim_queue_oracle import Card, queues
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = T0 + timedelta(days=1)
STATES = (
    "DRAFT",
    "UNCLAIMED",
    "CLAIMED",
    "READY_FOR_REVIEW",
    "REJECTED",
    "APPROVED",
    "MERGED",
    "INTEGRATION_FAILED",
    "BLOCKED",
    "SUPERSEDED",
    "ABANDONED",
)
# The claimable states come up more often: that is where the rule has its branches.
STATE = st.sampled_from(("UNCLAIMED", "CLAIMED", "CLAIMED", "REJECTED", *STATES))
CODERS = ("coder-1", "coder-2")

TASK = st.fixed_dictionaries(
    {
        "status": STATE,
        "assigned_to": st.sampled_from(("", *CODERS)),
        "suspended": st.sampled_from((False, False, True)),
        "goal": st.sampled_from(properties.GOALS),
        "handoff_pending": st.sampled_from((False, False, True)),
        "crashes": st.integers(0, 3),
        # None, or an expiry placed around a boundary: which one (its own retry boundary most
        # often, another step, the grace alone) and a nudge of -1 s, -1 µs, 0, +1 µs or +1 s.
        "lease": st.one_of(
            st.none(),
            st.tuples(
                st.sampled_from(("own", "own", -1, 0, 1, 2)),
                st.sampled_from((-1_000_000, -1, 0, 0, 1, 1_000_000)),
            ),
        ),
        "priority": st.integers(1, 3),
        "created": st.integers(0, 2),  # ties happen, then the id decides
        "depends_on": st.lists(st.integers(0, 5), max_size=2, unique=True),
    }
)
BOARD = st.fixed_dictionaries(
    {
        "grace": st.sampled_from((0, 60)),
        "backoff": st.lists(st.sampled_from((0, 30, 120)), max_size=3),
        "tasks": st.lists(TASK, min_size=1, max_size=6),
    }
)


def _expiry(lease, *, grace: int, backoff: list[int], crashes: int):
    """The expiry on (or nudged around) `now - grace - backoff[step]` (the grace alone for
    step -1 or a step past the schedule); step "own" is the task's retry boundary (its
    crashes' step)."""
    if lease is None:
        return None
    step, nudge = lease
    step = crashes if step == "own" else step
    wait = backoff[step] if 0 <= step < len(backoff) else 0
    return NOW - timedelta(seconds=grace + wait, microseconds=nudge)


def _build(board) -> tuple[object, ProjectConfig, list[Card]]:
    """Write the board; the config (unsaved: the selector reads it from the caller) and the
    reference model's cards."""
    project = ProjectFactory()
    config = ProjectConfig(
        project=project, lease_grace=board["grace"], retry_backoff=board["backoff"]
    )
    goals = properties.goal_rows(project)
    made: list[Task] = []
    for i, spec in enumerate(board["tasks"]):
        made.append(
            properties.task_row(
                project,
                goals,
                i,
                spec,
                handoff_pending=spec["handoff_pending"],
                crashes=spec["crashes"],
                lease_expires=_expiry(
                    spec["lease"],
                    grace=board["grace"],
                    backoff=board["backoff"],
                    crashes=spec["crashes"],
                ),
            )
        )
    deps: dict[int, list[Task]] = {}
    for i, spec in enumerate(board["tasks"]):
        # Only on tasks made before it: no cycles, as the services guarantee.
        deps[i] = [made[j] for j in spec["depends_on"] if j < i]
        made[i].depends_on.set(deps[i])
    cards = [
        Card(
            pk=task.pk,
            status=spec["status"],
            assigned_to=spec["assigned_to"],
            suspended=spec["suspended"],
            goal_status=spec["goal"],
            dependency_statuses=tuple(d.status for d in deps[i]),
            handoff_pending=spec["handoff_pending"],
            crashes=spec["crashes"],
            lease_expires=task.lease_expires,
            priority=spec["priority"],
            created=task.created,
        )
        for i, (task, spec) in enumerate(zip(made, board["tasks"], strict=True))
    ]
    return project, config, cards


def _differences(board) -> list[str]:
    """Where the SQL and the reference model disagree on `board`, for each coder (and for
    nobody, as `/work` asks); the board's rows are rolled back afterwards."""
    found: list[str] = []
    with properties.rolled_back():
        project, config, cards = _build(board)
        for agent_id in ("", *CODERS):
            sql = [
                list(q.values_list("pk", flat=True))
                for q in claim_candidates(project, agent_id, NOW, config)
            ]
            expected = queues(
                cards,
                agent_id=agent_id,
                now=NOW,
                grace=config.lease_grace,
                backoff=board["backoff"],
            )
            if sql != expected:
                found.append(f"{agent_id or 'nobody'}: sql {sql} != model {expected}")
        # The one-row answer (a named claim's refusal, /work's Retry-After) agrees with the
        # queue on every CLAIMED task the queue gives out.
        for task in claim_candidates(project, "", NOW, config)[3]:
            if retry_waits(task, NOW, config):
                found.append(f"{task.key}: in the queue but retry_waits")
    return found


def _on_the_boundary(*, grace: int, backoff: list[int], crashes: int, step, nudge: int) -> dict:
    """A board of one CLAIMED task of coder-1 whose lease sits on (or 1 µs off) its boundary."""
    task = {
        "status": "CLAIMED",
        "assigned_to": "coder-1",
        "suspended": False,
        "goal": None,
        "handoff_pending": False,
        "crashes": crashes,
        "lease": (step, nudge),
        "priority": 1,
        "created": 0,
        "depends_on": [],
    }
    return {"grace": grace, "backoff": backoff, "tasks": [task]}


# The boundaries themselves, tried on every run (random boards land exactly on one only now and
# then): a dead lease on, just inside and just past the grace alone and a retry step.
BOUNDARY_BOARDS = [
    _on_the_boundary(grace=grace, backoff=backoff, crashes=crashes, step="own", nudge=nudge)
    for grace, backoff, crashes in ((0, [], 0), (60, [], 0), (60, [30], 0), (60, [0, 120], 1))
    for nudge in (-1, 0, 1)
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@properties.with_boundaries(BOUNDARY_BOARDS)
def test_claim_queue_sql_equals_the_reference_model(board):
    assert _differences(board) == []


PLANTED = """
CREATE OR REPLACE FUNCTION liza_claim_queue_v1(
    t boards_task, p_agent text, p_now timestamptz, p_grace integer, p_backoff integer[]
) RETURNS integer LANGUAGE sql STABLE AS $$ {body} $$;
"""


def _function_body() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'liza_claim_queue_v1'")
        return cursor.fetchone()[0]


def test_a_planted_difference_on_the_grace_boundary_is_caught():
    """`lease_expires < now - grace - backoff` flipped to `<=`, in this test's transaction only
    (DDL is transactional in PostgreSQL; the test's rollback restores the migration's function):
    the property finds a board where the two answers differ."""
    body = _function_body()
    assert body.count("t.lease_expires < p_now") == 1
    planted = body.replace("t.lease_expires < p_now", "t.lease_expires <= p_now")
    with connection.cursor() as cursor:
        cursor.execute(PLANTED.format(body=planted))
    try:
        # As the property runs it: its boundary boards first, then generated ones.
        caught = [board for board in BOUNDARY_BOARDS if _differences(board)]
        found = (
            caught[0]
            if caught
            else find(
                BOARD,
                lambda board: bool(_differences(board)),
                # Generation only: shrinking the board to its minimum costs minutes of examples.
                settings=settings(
                    max_examples=200,
                    deadline=None,
                    database=None,
                    phases=(Phase.generate,),
                    derandomize=True,
                ),
            )
        )
    except NoSuchExample:  # pragma: no cover - the failure this test exists for
        pytest.fail("the property did not catch `<` planted as `<=` on the grace boundary")
    # Only a dead lease exactly on its boundary can tell `<` from `<=`.
    assert any(task["lease"] is not None and task["lease"][1] == 0 for task in found["tasks"])
