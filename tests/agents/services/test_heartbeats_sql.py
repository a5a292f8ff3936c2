"""The heartbeat's rules are `liza_heartbeat_v3` (boards migration 0035), the product's only
implementation of them; this holds `agent_heartbeat`, which calls it, equal to the Python
reference model of the rules as the service ran them before (`heartbeat_oracle`) over random
boards, at the same `now`: the answer (or the refusal, its error and its rejected-attempt
event) and every agent, task and review row after.

Boards are written row by row, not walked through the services: every combination of the
fields the rules read must get the reference model's answer — any role and state, disabled,
left (with or without a task it held), registered or created by an admin and never registered,
the generation its process sends (none, its session's, an older superseded one's, a newer one),
a lost task, a task of any state held by the agent or taken over, task and review leases on,
just before and just after the grace boundary, per-task lease overrides, review claims closed,
given a verdict or of another project, progress on either side of the stall boundary or ahead
of the server's clock. The last tests plant `>` as `>=` at the task lease's boundary, the
rules before `liza_heartbeat_v2` (a departed agent's heartbeat accepted) in the reference
model, and `<` as `<=` in v3's generation check, and show the property finds each.
"""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from agents.models import Agent
from agents.services import agent_heartbeat, heartbeats
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.services import review_claims
from boards.coordination.services.tasks import claim_call
from boards.errors import Forbidden, LeaseLost, NotRegistered, ProtocolError
from boards.protocol import format_timestamp
from tests.agents.services import heartbeat_oracle as oracle
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = T0 + timedelta(days=1)
LEASE = 300
GENERATION = 3  # the agent row's, registered (a session that left keeps its number)
SENT = {"same": 0, "older": -1, "newer": 1}
ROLES = {"coder": "coder-1", "code_reviewer": "code-reviewer-1", "planner": "planner-1"}
# Microseconds off the boundary (positive: earlier, so dead sooner), or far from it.
NUDGES = (-LEASE * 1_000_000, -1_000_000, -1, 0, 1, 1_000_000)
LEASE_AT = st.one_of(st.none(), st.sampled_from(NUDGES))
# Shorter and longer than the project's lease: a longer one sets the agent's own lease.
OVERRIDE = st.sampled_from((None, None, 0, 120, 600))

TASK = st.fixed_dictionaries(
    {
        "status": st.sampled_from(("CLAIMED", "CLAIMED", "CLAIMED", "READY_FOR_REVIEW", "MERGED")),
        "mine": st.sampled_from((True, True, True, False)),
        "lease": LEASE_AT,
        "override": OVERRIDE,
    }
)
CLAIM = st.fixed_dictionaries(
    {
        "verdict": st.sampled_from(("", "", "", "APPROVED")),
        "closed": st.sampled_from((False, False, False, True)),
        "lease": LEASE_AT,
        "override": OVERRIDE,
        "elsewhere": st.sampled_from((False, False, False, True)),  # another project's task
    }
)
BOARD = st.fixed_dictionaries(
    {
        "grace": st.sampled_from((0, 60)),
        "stall": st.sampled_from((30, 600)),
        "role": st.sampled_from(("coder", "coder", "code_reviewer", "code_reviewer", "planner")),
        "status": st.sampled_from(("STARTING", "IDLE", "WORKING", "WAITING", "REVIEWING")),
        "enabled": st.sampled_from((True, True, True, True, False)),
        "lost": st.sampled_from((False, False, False, False, True)),
        # Its session: registered, left (`agent_leave`), or created by an admin and never
        # registered (its heartbeat is legitimate: STARTING → IDLE).
        "session": st.sampled_from(("registered", "registered", "left", "never")),
        # The generation its process sends against the row's (`GENERATION`, 0 never registered):
        # none (an older client), its own, a superseded session's, one ahead of the row.
        "sent": st.sampled_from((None, "same", "same", "older", "newer")),
        "task": st.one_of(st.none(), TASK),
        "claims": st.lists(CLAIM, max_size=3),
        "agent_lease": st.one_of(st.none(), st.sampled_from((-3600, 0, 3600))),
        "context": st.one_of(st.none(), st.integers(0, 100)),
        # progress: None, on the stall boundary nudged by µs, fresh, or ahead of now.
        "progress": st.one_of(st.none(), st.sampled_from((-1, 0, 1, "fresh", "ahead"))),
    }
)


def _lease(board, nudge):
    if nudge is None:
        return None
    return NOW - timedelta(seconds=board["grace"], microseconds=nudge)


def _progress(board):
    progress = board["progress"]
    if progress is None:
        return None
    if progress == "fresh":
        return NOW - timedelta(seconds=1)
    if progress == "ahead":
        return NOW + timedelta(seconds=5)
    return NOW - timedelta(seconds=2 * board["stall"], microseconds=progress)


def _build(board) -> tuple[Agent, oracle.Config]:
    """Write the board; the heartbeating agent (loaded afresh, as the key cache gives it) and
    the reference model's config."""
    project, other = ProjectFactory(), ProjectFactory()
    ProjectConfig.objects.update_or_create(
        project=project,
        defaults={
            "lease_duration": LEASE,
            "lease_grace": board["grace"],
            "stall_timeout": board["stall"],
        },
    )
    agent_id = ROLES[board["role"]]
    task = lost = None
    if board["task"] is not None:
        spec = board["task"]
        task = Task.objects.create(
            project=project,
            key="held",
            description="held",
            created=T0,
            status=spec["status"],
            assigned_to=agent_id if spec["mine"] else "coder-9",
            lease_expires=_lease(board, spec["lease"]),
            lease_duration_override=spec["override"],
        )
    if board["lost"]:
        lost = Task.objects.create(
            project=project,
            key="lost",
            description="lost",
            created=T0,
            status="CLAIMED",
            assigned_to="coder-9",
            lease_expires=NOW,
        )
    for i, claim in enumerate(board["claims"]):
        reviewed = Task.objects.create(
            project=other if claim["elsewhere"] else project,
            key=f"r{i}",
            description=f"reviewed {i}",
            created=T0,
            status="READY_FOR_REVIEW",
            assigned_to="coder-2",
            lease_duration_override=claim["override"],
        )
        Review.objects.create(
            project=reviewed.project,
            task=reviewed,
            reviewer=agent_id,
            review_commit="c0ffee01",
            claimed_at=T0,
            lease_expires=_lease(board, claim["lease"]),
            verdict=claim["verdict"],
            closed_at=T0 if claim["closed"] else None,
        )
    agent = Agent.objects.create(
        project=project,
        agent_id=agent_id,
        role=board["role"],
        status=board["status"],
        enabled=board["enabled"],
        current_task=task,
        lost_task=lost,
        lost_reason="taken over" if lost else "",
        lease_expires=None
        if board["agent_lease"] is None
        else NOW + timedelta(seconds=board["agent_lease"]),
        heartbeat=T0,
        context_percent=7,
        registered_at=None if board["session"] == "never" else T0,
        generation=_generation(board),
        left_at=NOW - timedelta(seconds=1) if board["session"] == "left" else None,
    )
    config = oracle.Config(LEASE, board["grace"], board["stall"])
    return Agent.objects.get(pk=agent.pk), config


def _generation(board) -> int:
    return 0 if board["session"] == "never" else GENERATION


def _sent(board) -> int | None:
    sent = board["sent"]
    return None if sent is None else _generation(board) + SENT[sent]


def _rows(model) -> oracle.Rows:
    return {row["id"]: row for row in model.objects.order_by("pk").values()}


def _row(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def _events(project_id) -> list[tuple]:
    return list(
        Event.objects.filter(project_id=project_id)
        .order_by("pk")
        .values_list("action", "task_id", "from_status", "data__code")
    )


def _expected_refusal(answer, agents, tasks, agent_pk, sent):
    """The error, its details and the rejected-attempt event the service raises and logs."""
    agent = agents[agent_pk]
    if answer.outcome == "disabled":
        return Forbidden, {}, [("agent_heartbeat_failed", None, "", "permission_denied")]
    if answer.outcome == "superseded":
        details = {
            "agent_id": agent["agent_id"],
            "generation": sent,
            "current_generation": agent["generation"],
            "registered_at": format_timestamp(agent["registered_at"]),
            "exit": 8,
        }
        return NotRegistered, details, [("heartbeat_failed", None, "", "not_registered")]
    if answer.outcome == "left":
        details = {
            "agent_id": agent["agent_id"],
            "left_at": format_timestamp(agent["left_at"]),
            "exit": 8,
        }
        return NotRegistered, details, [("heartbeat_failed", None, "", "not_registered")]
    task = tasks[answer.task]
    event = [("heartbeat_failed", task["id"], task["status"], "lease_lost")]
    if answer.outcome == "lost":
        details = {
            "task": task["key"],
            "reason": agent["lost_reason"],
            "assigned_to": task["assigned_to"] or None,
            "exit": 42,
        }
        return LeaseLost, details, event
    return LeaseLost, {"task": task["key"], "exit": 42}, event


class _Rollback(Exception):
    """Undo one example's rows."""


def _differences(board) -> list[str]:
    """Where the service (the SQL) and the reference model disagree on `board`: the answer,
    the refusal and its event, every row after. The board's rows are rolled back afterwards."""
    found: list[str] = []
    try:
        with transaction.atomic():
            agent, config = _build(board)
            before = {m: _rows(m) for m in (Agent, Task, Review)}
            expected = copy.deepcopy(before)
            progress_at = _progress(board)
            answer = oracle.heartbeat(
                expected[Agent],
                expected[Task],
                expected[Review],
                agent.pk,
                now=NOW,
                config=config,
                context_percent=board["context"],
                progress_at=progress_at,
                generation=_sent(board),
            )
            try:
                result = agent_heartbeat(
                    agent=agent,
                    now=NOW,
                    context_percent=board["context"],
                    progress_at=progress_at,
                    generation=_sent(board),
                )
            except ProtocolError as exc:
                result, refused = None, exc
            if answer.outcome == "ok":
                if result is None:
                    found.append(f"sql refused {refused!r}, model ok")
                else:
                    found += _answer_differences(result, answer, expected, board, config)
                if _events(agent.project_id):  # a heartbeat writes no event
                    found.append(f"events {_events(agent.project_id)}")
            elif result is not None:
                found.append(f"sql ok, model {answer.outcome}")
            else:
                error, details, events = _expected_refusal(
                    answer, expected[Agent], expected[Task], agent.pk, _sent(board)
                )
                if type(refused) is not error or refused.details != details:
                    found.append(f"refusal {refused!r} {refused.details} != {error} {details}")
                if _events(agent.project_id) != events:
                    found.append(f"events {_events(agent.project_id)} != {events}")
            for model in (Agent, Task, Review):
                after = _rows(model)
                if after != expected[model]:
                    changed = {
                        pk: {
                            k: (v, expected[model][pk][k])
                            for k, v in row.items()
                            if v != expected[model][pk][k]
                        }
                        for pk, row in after.items()
                        if row != expected[model].get(pk)
                    }
                    found.append(f"{model.__name__} rows (sql, model): {changed}")
            raise _Rollback
    except _Rollback:
        pass
    return found


def _answer_differences(result, answer, expected, board, config) -> list[str]:
    found = []
    if _row(result.agent) != expected[Agent][result.agent.pk]:
        found.append(f"answered agent {_row(result.agent)} != {expected[Agent][result.agent.pk]}")
    task = _row(result.task) if result.task is not None else None
    if task != (expected[Task][answer.task] if answer.task is not None else None):
        found.append(f"answered task {task} != model's {answer.task}")
    if result.task is not None and result.agent.current_task.pk != result.task.pk:
        found.append("the answered agent's current task is not the answered task")
    if [r.pk for r in result.reviews] != answer.reviews:
        found.append(f"reviews {[r.pk for r in result.reviews]} != {answer.reviews}")
    for review in result.reviews:
        if (
            _row(review) != expected[Review][review.pk]
            or _row(review.task) != (expected[Task][review.task_id])
        ):
            found.append(f"answered review {review.pk} or its task differs")
    stalled = oracle.stale(_progress(board), NOW, config)
    if (result.stop.code if result.stop else None) != ("stalled" if stalled else None):
        found.append(f"stop {result.stop} but stale={stalled}")
    return found


def _board(**changes) -> dict:
    """A coder holding its CLAIMED task, nothing else: the common heartbeat, changed."""
    task = {"status": "CLAIMED", "mine": True, "lease": -LEASE * 1_000_000, "override": None}
    board = {
        "grace": 60,
        "stall": 600,
        "role": "coder",
        "status": "WORKING",
        "enabled": True,
        "lost": False,
        "session": "registered",
        "sent": "same",
        "task": task,
        "claims": [],
        "agent_lease": 0,
        "context": None,
        "progress": None,
    }
    for key, value in changes.items():
        if key.startswith("task_"):
            board["task"] = {**task, key.removeprefix("task_"): value}
        else:
            board[key] = value
    return board


def _claim(nudge: int) -> dict:
    return {"verdict": "", "closed": False, "lease": nudge, "override": None, "elsewhere": False}


# The task lease and a review lease on the grace boundary, both graces; the stall boundary.
BOUNDARY_BOARDS = [
    _board(grace=grace, task_lease=nudge) for grace in (0, 60) for nudge in (-1, 0, 1)
]
EDGE_BOARDS = [
    *[
        _board(role="code_reviewer", status="REVIEWING", task=None, claims=[_claim(nudge)])
        for nudge in (-1, 0, 1)
    ],
    *[_board(progress=nudge) for nudge in (-1, 0, 1)],
    # Leases longer than the project's: they set the agent's own lease.
    _board(task_override=600),
    _board(
        role="code_reviewer",
        task=None,
        claims=[{**_claim(-LEASE * 1_000_000), "override": 600}],
    ),
    _board(status="STARTING", task=None),
    _board(enabled=False),
    _board(lost=True),
    # Left: with its task (handed off) and a lost one; disabled too; never registered.
    _board(session="left"),
    _board(session="left", lost=True),
    _board(session="left", enabled=False),
    _board(session="left", role="code_reviewer", task=None, claims=[_claim(-1)]),
    _board(session="never", status="STARTING", task=None),
    _board(task_mine=False),
    # The generation: none sent, a superseded session's (holding a task, a reviewer's claims,
    # left since, disabled too), one ahead of the row's.
    _board(sent=None),
    _board(sent="older"),
    _board(sent="older", role="code_reviewer", task=None, claims=[_claim(-1)]),
    _board(sent="older", session="left"),
    _board(sent="older", enabled=False),
    _board(sent="newer"),
    _board(sent="older", session="never", status="STARTING", task=None),
]


def _with_edges(test):
    for board in BOUNDARY_BOARDS + EDGE_BOARDS:
        test = example(board=board)(test)
    return test


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@_with_edges
def test_the_heartbeat_sql_equals_the_reference_model(board):
    assert _differences(board) == []


def test_a_planted_difference_on_the_grace_boundary_is_caught():
    """The task lease's live `>` planted as `>=`, in this test's transaction only (DDL is
    transactional in PostgreSQL; the rollback restores the migration's function): a board with
    the lease exactly on its boundary tells them apart, and only that one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = 'liza_heartbeat_v3'"
        )
        definition = cursor.fetchone()[0]
        needle = "NOT t.lease_expires + make_interval(secs => p_grace) > p_now"
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, needle.replace(" > ", " >= ")))
    on_it = [board["task"]["lease"] == 0 for board in BOUNDARY_BOARDS]
    assert [bool(_differences(board)) for board in BOUNDARY_BOARDS] == on_it


# Those whose process is of the live session: a superseded one is refused before `left`.
LEFT_BOARDS = [b for b in EDGE_BOARDS if b["session"] == "left" and b["sent"] == "same"]


def test_the_old_rules_planted_in_the_model_are_caught_on_the_boards_of_departed_agents(
    monkeypatch,
):
    """`liza_heartbeat_v1`'s rules planted in the reference model — a departed agent's
    heartbeat extends its leases as if it had never left — disagree with the SQL on every board
    of an agent that left (the SQL refuses, the model does not) and on no other."""
    model = oracle.heartbeat

    def before_v2(agents, tasks, reviews, agent_pk, **kwargs):
        agent = agents[agent_pk]
        left, agent["left_at"] = agent["left_at"], None
        try:
            return model(agents, tasks, reviews, agent_pk, **kwargs)
        finally:
            agent["left_at"] = left

    monkeypatch.setattr(oracle, "heartbeat", before_v2)
    boards = [*LEFT_BOARDS, _board(), _board(session="never", status="STARTING", task=None)]
    # A disabled agent is refused either way: only the left and enabled ones tell them apart.
    caught = [bool(_differences(board)) for board in boards]
    assert caught == [board["session"] == "left" and board["enabled"] for board in boards]


SENT_BOARDS = [board for board in EDGE_BOARDS if board["sent"] != "same"] + [_board()]


def test_a_planted_difference_in_the_generation_check_is_caught():
    """v3's stale-generation check planted as `<=` (a process of the live session refused too),
    in this test's transaction only: the boards where the process sends its own session's
    generation tell them apart — only those of an enabled agent, which reach the check."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = 'liza_heartbeat_v3'"
        )
        definition = cursor.fetchone()[0]
        needle = "p_generation < a.generation"
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, "p_generation <= a.generation"))
    caught = [bool(_differences(board)) for board in SENT_BOARDS]
    assert caught == [b["sent"] == "same" and b["enabled"] for b in SENT_BOARDS]


def test_a_heartbeat_model_blind_to_generations_is_caught_on_superseded_boards(monkeypatch):
    """The rules before v3 planted in the reference model — the generation ignored, a stale
    process's heartbeat extending the live session's leases — disagree with the SQL on every
    board of an enabled agent whose process sends an older generation, and on no other."""
    model = oracle.heartbeat

    def before_v3(*args, generation=None, **kwargs):
        return model(*args, **kwargs)

    monkeypatch.setattr(oracle, "heartbeat", before_v3)
    caught = [bool(_differences(board)) for board in SENT_BOARDS]
    assert caught == [b["sent"] == "older" and b["enabled"] for b in SENT_BOARDS]


@pytest.mark.parametrize(
    ("statement", "arguments"),
    [
        (heartbeats._call_sql, ()),
        (claim_call._call_sql, (False,)),
        (claim_call._call_sql, (True,)),
        (review_claims._call_sql, (False,)),
        (review_claims._call_sql, (True,)),
    ],
    ids=["heartbeat", "claim", "claim+reads", "review-claim", "review-claim+reads"],
)
def test_the_hot_statements_fit_psycopgs_parse_cache(statement, arguments):
    """psycopg parses a statement's placeholders once and keeps the result only for statements
    up to MAX_CACHED_STATEMENT_LENGTH characters; a longer one is parsed again at every call
    (the heartbeat's was, at 4,462: 0.09 ms of each). Column lists grow with the models."""
    assert len(statement(*arguments)) <= MAX_CACHED_STATEMENT_LENGTH
