"""Every (task state × task operation × caller) answers what docs/api-answers.md says.

The table below is the documented answer of the API for each operation on a task, in each of
seed 000's 11 states, by the principal the operation is for and by one it is not for: HTTP
status, protocol error code and exit code (boards.errors.EXIT_CODES). A refusal leaves the row
exactly as it was and writes one rejected-attempt event carrying its code (SPEC §4.1, §6). The
published table (docs/api-answers.md) is rendered from this one, and a test keeps them equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.errors import EXIT_CODES, Contention, Unavailable
from boards.operations.base import LOST_RACE_RUNS
from boards.protocol import TASK_STATES, TERMINAL_TASK_STATES, TaskStatus
from tests.api.helpers import agent_client, api_base, http_start, session_client
from tests.lifecycle import World
from tests.module_rows import shared_rows

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "api-answers.md"
T = TaskStatus
NON_TERMINAL = {s for s in TASK_STATES if s not in TERMINAL_TASK_STATES}

OK, CREATED = (200, ""), (201, "")
INVALID = (409, "invalid_transition")
CONFLICT = (409, "conflict")
FORBIDDEN = (403, "permission_denied")

# operation: (path under tasks/<key>/, body, for whom, a principal it is not for, states in
# which it succeeds, answers that differ from `invalid_transition` in the other states)
OPERATIONS: dict[str, tuple] = {
    "claim": (
        "claim",
        {"base_commit": "b0000001"},
        "coder-3",
        "planner-1",
        {T.UNCLAIMED: OK, T.INTEGRATION_FAILED: OK},
        # another coder's live claim; another coder's REJECTED task while its coder is alive
        {T.CLAIMED: CONFLICT, T.REJECTED: CONFLICT},
    ),
    "request-review": (
        "request-review",
        {"review_commit": "c0000001", "tree_clean": True},
        "coder-1",
        "code-reviewer-2",
        {T.CLAIMED: OK},
        {},
    ),
    "block": (
        "block",
        {"reason": "The spec is silent", "questions": ["Which way?"]},
        "coder-1",
        "planner-1",
        {T.CLAIMED: OK},
        {},
    ),
    "handoff": (
        "handoff",
        {"summary": "Half done", "next_action": "Finish the tests"},
        "coder-1",
        "code-reviewer-2",
        {T.CLAIMED: CREATED},
        {},
    ),
    "review/claim": (
        "review/claim",
        None,
        "code-reviewer-2",
        "coder-2",
        {T.READY_FOR_REVIEW: CREATED},
        {},
    ),
    "merge": (
        "merge",
        {"merge_commit": "m0000001"},
        "code-reviewer-1",
        "coder-2",
        {T.APPROVED: OK},
        {},
    ),
    "integration-failure": (
        "integration-failure",
        {"reason": "Conflict in api.py"},
        "code-reviewer-1",
        "coder-2",
        {T.APPROVED: OK},
        {},
    ),
    "finalize": ("finalize", None, "planner-1", "coder-2", {T.DRAFT: OK}, {}),
    "release": (
        "release",
        {"reason": "Use the v2 API"},
        "planner-1",
        "coder-2",
        {T.BLOCKED: OK},
        {},
    ),
    "abandon": ("abandon", {"reason": "Not needed"}, "planner-1", "coder-2", {T.BLOCKED: OK}, {}),
    "rescope": (
        "rescope",
        {"reason": "Too big", "new_tasks": [{"key": "N-1", "description": "The first half"}]},
        "planner-1",
        "coder-2",
        {T.BLOCKED: CREATED},
        {},
    ),
    "override-block": (
        "override-block",
        {"reason": "Stop: wrong approach"},
        "admin",
        # Agents never override-block: the edge itself is refused (SPEC §5.1).
        "coder-2",
        {s: OK for s in NON_TERMINAL if s != T.BLOCKED},
        {},
    ),
    "cancel": (
        "cancel",
        {"reason": "Out of scope"},
        "admin",
        "coder-2",
        dict.fromkeys(NON_TERMINAL, OK),
        {},
    ),
}
WRONG_CALLER = {"override-block": INVALID}


def expected(operation: str, state: str, right: bool) -> tuple[int, str]:
    _, _, _, _, succeeds, others = OPERATIONS[operation]
    if not right:
        return WRONG_CALLER.get(operation, FORBIDDEN)
    return succeeds.get(state) or others.get(state) or INVALID


CASES = [
    (operation, state, right)
    for operation in OPERATIONS
    for state in TASK_STATES
    for right in (True, False)
]


def _client(world: World, who: str):
    if who == "admin":
        return session_client(world.admin)
    return agent_client(world.agent(who))


@pytest.fixture(scope="module")
def worlds(django_db_setup, django_db_blocker) -> Iterator[dict[str, World]]:
    """A world per state with its task T-1 in that state, built once for the module's 286
    calls (26 per state); each call, and all it writes, is rolled back after its test
    (tests/module_rows.py)."""
    with shared_rows(django_db_blocker) as unblocked:
        with unblocked():
            built = {}
            for state in TASK_STATES:
                built[state] = World(now=http_start())
                built[state].drive_to(state, "T-1")
        yield built


@pytest.mark.parametrize(
    ("operation", "state", "right"),
    CASES,
    ids=[f"{o}-{s}-{'for' if r else 'not-for'}" for o, s, r in CASES],
)
def test_the_answer_is_the_documented_one(worlds, operation, state, right):
    path, body, for_whom, not_for, _, _ = OPERATIONS[operation]
    world = worlds[state]
    task = world.task("T-1")
    assert task.status == state  # as built: what earlier tests did was rolled back
    before = Task.objects.filter(pk=task.pk).values().get()
    rejected_before = Event.objects.filter(task=task, outcome=Event.Outcome.REJECTED).count()
    status, code = expected(operation, state, right)

    client = _client(world, for_whom if right else not_for)
    url = f"{api_base(world.project.slug)}/tasks/T-1/{path}"
    response = client.post(url, body or {}, format="json")

    assert response.status_code == status, (response.status_code, response.json())
    if code:
        error = response.json()["error"]
        assert (error["code"], error["details"]["exit"]) == (code, EXIT_CODES[code])
        assert Task.objects.filter(pk=task.pk).values().get() == before
        rejected = Event.objects.filter(task=task, outcome=Event.Outcome.REJECTED)
        assert rejected.count() == rejected_before + 1
        assert rejected.order_by("-id").first().data["code"] == code


def render() -> str:
    """The published table (docs/api-answers.md)."""
    states = list(TASK_STATES)
    lines = [
        "# What the API answers: every task operation in every state",
        "",
        "Generated from `tests/api/test_protocol_answers.py`, which checks every cell",
        "against the running API; edit the table there, never here. Each operation is",
        "`POST /api/v1/projects/<slug>/tasks/<key>/<path>`. A cell is the HTTP status and, for a",
        "refusal, the error code and the exit code an agent takes (`details.exit`). A refusal",
        "leaves the task as it was and writes one rejected-attempt event with its code.",
        "",
        "| operation | caller | " + " | ".join(states) + " |",
        "|---|---|" + "---|" * len(states),
    ]
    for operation, (_, _, for_whom, not_for, _, _) in OPERATIONS.items():
        for right, who in ((True, for_whom), (False, not_for)):
            cells = []
            for state in states:
                status, code = expected(operation, state, right)
                cells.append(f"{status}" if not code else f"{status} {code} ({EXIT_CODES[code]})")
            caller = who if right else f"{who} (not for it)"
            lines.append(f"| `{operation}` | {caller} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Callers: `coder-1` is the task's coder (it claimed, submitted or blocked it); `coder-3`",
        "holds nothing; `code-reviewer-1` approved it; `planner-1` is the planner; `admin` is a",
        "project admin signed in. Beyond this table: a paused project, a sprint at CHECKPOINT or",
        "an aborted sprint answers claims `paused` / `checkpoint` / `aborted` (409, exit 42); an",
        "agent whose work was taken away answers `lease_lost` (409, exit 42) to every operation on",
        "that task; another project's task, or a missing one, is 404 `not_found` (exit 5).",
        "",
        "Any operation, in any state, may also answer one of two retryable errors; the same",
        "request (with its `Idempotency-Key`) may be sent again, and nothing of the first was",
        "written:",
        "",
        "| code | HTTP | exit | Retry-After | when |",
        "|---|---|---|---|---|",
        f"| `contention` | {Contention.status_code} | {EXIT_CODES['contention']} |"
        f" {Contention.RETRY_AFTER} s | the rows it needed were"
        " busy with another request: PostgreSQL chose its transaction as a deadlock's victim"
        f" (40P01) or a serialization failure (40001) each of the {LOST_RACE_RUNS} times the"
        " server ran it, or"
        " it waited past a lock or statement timeout (55P03, 57014); `details.reason` says which"
        " (`deadlock`, `serialization_failure`, `lock_timeout`, `statement_timeout`) |",
        f"| `unavailable` | {Unavailable.status_code} | {EXIT_CODES['unavailable']} |"
        f" {Unavailable.RETRY_AFTER} s | the database cannot be"
        " reached (refused, lost, restarting) |",
        "",
        "The `liza` client sends both again itself (its backoff, at least the Retry-After) before",
        "it gives up with exit 7.",
        "",
    ]
    return "\n".join(lines)


def test_the_published_table_is_this_one():
    assert DOC.read_text() == render(), "regenerate docs/api-answers.md from render()"
