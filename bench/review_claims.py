"""Review claim-next in-process: the service (`liza_review_claim_v1`, boards migration 0032)
against the Python it replaced, kept as the reference model of its property test
(tests/coordination/services/tasks/review_oracle.py), alternated in one process on one board
(issue 26). No bench mode of `claims.py` claims reviews, so this is pytest-run, on the suite's
throwaway test database:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/liza_bench_reviews \\
        .venv/bin/python -m pytest -p no:cacheprovider -q -s bench/review_claims.py

The board: 40 tasks READY_FOR_REVIEW (priorities 1–3), 8 reviewers asking in turn, each round
in a savepoint rolled back so both sides start from the same rows; `dead`: a ninth reviewer's
review of the first task lapsed, so the first claim closes it. Prints the median and mean time
of one claim-next on each side, their ratio, and the statements of one claim-next (the round's
reads of the 8 agents included: one a claim). Compare the ratio, not the times: the machine is
shared.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from boards.coordination.models.tasks import Review
from boards.coordination.services import review_claims as service
from tests.coordination.selectors import properties
from tests.coordination.services.helpers import goal_world
from tests.coordination.services.tasks import review_oracle as oracle
from tests.lifecycle import register

REVIEWERS = 8
TASKS = 40
ROUNDS = 12
SIDES = {"before": oracle.review_claim_next, "after": service.review_claim_next}


def _round(world, claim, *, dead: bool) -> list[float]:
    took = []
    with properties.rolled_back():
        if dead:
            Review.objects.filter(reviewer="code-reviewer-1").update(
                lease_expires=world.now - timedelta(hours=1)
            )
        for i in range(2, REVIEWERS + 2):
            agent = Agent.objects.get(project=world.project, agent_id=f"code-reviewer-{i}")
            start = time.perf_counter()
            got = claim(project=world.project, agent=agent, now=world.now)
            took.append(time.perf_counter() - start)
            assert got is not None
    return took


@pytest.mark.django_db
@pytest.mark.parametrize("dead", [False, True])
def test_review_claim_next_before_and_after(dead):
    world = goal_world()
    for i in range(4, TASKS + 1):
        register(world.project, f"coder-{i}", now=world.now)
    for i in range(4, REVIEWERS + 2):
        register(world.project, f"code-reviewer-{i}", now=world.now)
    for i in range(TASKS):
        world.ready_for_review(f"t{i}", coder=f"coder-{1 + i}", priority=1 + i % 3)
    if dead:
        world.claim_review("t0", reviewer="code-reviewer-1")
    world.tick()
    for claim in SIDES.values():  # warm up
        _round(world, claim, dead=dead)
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for n in range(ROUNDS):
        for side in sorted(SIDES, reverse=bool(n % 2)):  # alternated
            times[side].extend(_round(world, SIDES[side], dead=dead))
    statements = {}
    for side, claim in SIDES.items():
        with CaptureQueriesContext(connection) as queries:
            _round(world, claim, dead=dead)
        sql = [q for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
        statements[side] = len(sql) / REVIEWERS
    before, after = (statistics.median(times[s]) for s in ("before", "after"))
    print(
        f"\ndead claim closed: {dead}; one review claim-next, median (mean) of "
        f"{len(times['after'])}: before {before * 1000:.1f} ms "
        f"({statistics.mean(times['before']) * 1000:.1f}), after {after * 1000:.1f} ms "
        f"({statistics.mean(times['after']) * 1000:.1f}); before/after ×{before / after:.2f}; "
        f"statements {statements['before']:.1f} → {statements['after']:.1f}"
    )
