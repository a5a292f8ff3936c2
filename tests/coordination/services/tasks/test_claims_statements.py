"""What one claim-next costs in SQL (issue 26): the reads of its checks (the agent locked, the
stop answer, what the coder holds, budgets, availability) and one call of `liza_claim_v1`
(boards migration 0029), which picks, locks and writes — the task, the previous holder, the
coder, the event. Pinned so that the writes cannot creep back into Python statements."""

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
def test_a_claim_next_writes_in_one_statement(world):
    world.unclaimed("task-1")
    got, sql = statements(world, base_commit="b1")
    assert got.key == "task-1"
    # The pick and every write are the last statement; before it, only the checks' reads.
    assert "FROM liza_claim_v1(" in sql[-1]
    assert all(s.lstrip().startswith("SELECT") for s in sql), "\n".join(sql)
    assert not any("liza_claim_v1" in s for s in sql[:-1])
    assert len(sql) <= 7, "\n".join(s[:120] for s in sql)
