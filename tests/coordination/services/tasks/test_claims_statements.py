"""What one claim-next costs in SQL (issue 26): for a coder holding nothing in a project
without budgets, one statement — `liza_claim_v3` (boards migration 0031) locks the agent, reads
what the coder holds and whether there are budgets, then picks, locks and writes (the task, the
previous holder, the coder, the event) through `liza_claim_v2`, with the current sprint and the
agent's recent failures read beside it. A coder holding a task is checked before a second call.
Pinned so that neither the writes nor the checks' reads creep back into Python statements."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boards.coordination.services import tasks


def statements(world, **kwargs) -> tuple[object, list[str]]:
    coder = world.agent("coder-1")  # as the key gives it
    with CaptureQueriesContext(connection) as queries:
        got = tasks.task_claim_next(project=world.project, agent=coder, now=world.tick(), **kwargs)
    # The test's own transaction makes the service's atomic block a savepoint: not a statement
    # the service runs in production (there it is BEGIN … COMMIT).
    return got, [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


@pytest.mark.django_db
def test_a_claim_next_is_one_statement(world):
    world.unclaimed("task-1")
    got, sql = statements(world, base_commit="b1")
    assert got.key == "task-1"
    # The checks' reads, the pick and every write: one statement.
    assert len(sql) == 1, "\n".join(s[:120] for s in sql)
    assert "FROM liza_claim_v3(" in sql[0]
    assert sql[0].lstrip().startswith("SELECT")


@pytest.mark.django_db
def test_a_coder_holding_a_task_is_checked_before_a_second_call(world):
    world.rejected("task-1")  # coder-1's own REJECTED task goes back to it first
    world.unclaimed("task-2")
    got, sql = statements(world, base_commit="b1")
    assert got.key == "task-1"
    assert len(sql) == 2, "\n".join(s[:120] for s in sql)
    assert all("FROM liza_claim_v3(" in s for s in sql)
