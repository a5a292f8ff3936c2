"""Claim-next and the named claim against their reference model (`claim_oracle`, the Python
the service ran before issue 26) over random boards, at the same `now`: the answer (the task,
none, or the refusal with its error and details), every task, agent and anomaly row after, the
events written (action, actor, from/to, detail, data, board snapshot, outcome), the task's
alerts a move ends, and what open boards are told to redraw (the outbox).

Each board is written once; the reference model runs on it in a savepoint that is rolled back,
then the service in another, so both start from the same rows (the same keys). Boards are
written row by row, not walked through the services, so that the combinations the rules tell
apart come up: every claim kind, a takeover at hypothesis exhaustion, a retry past the
schedule (blocked), dead leases on each side of the retry boundary, dependencies, goals,
suspension, handoffs, previous holders still on the task or moved on, the CLAIMED column at its
WIP limit, a missing base commit. A busy previous holder (its row locked by another
transaction) needs a second connection: tests/concurrency/test_claim_races.py covers it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from agents.models import Agent
from boards.coordination import outbox
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Alert, Anomaly, Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import tasks as service
from boards.errors import ProtocolError
from tests.coordination.selectors import properties
from tests.coordination.services.tasks import claim_checks as checks
from tests.coordination.services.tasks import claim_oracle as oracle
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db

NOW = T0 + timedelta(days=1)
LEASE = 300
CLAIMER = "coder-1"
CODERS = (CLAIMER, "coder-2", "coder-3")
# Where a task's lease sits: dead by far, on its retry boundary nudged by µs, or alive.
NUDGES = (-3_600_000_000, -3_600_000_000, -3_600_000_000, -1, 0, 1, 3_600_000_000)

# Alerts bound to states a claim leaves (or a block), and to none (a state timeout).
ALERTS = (
    Alert.Type.LEASE_EXPIRED,
    Alert.Type.INTEGRATION_FAILED,
    Alert.Type.APPROACHING_LIMITS,
    Alert.Type.ORPHANED_REJECTED,
    Alert.Type.STATE_TIMEOUT,
)

TASK = st.fixed_dictionaries(
    {
        "status": st.sampled_from(
            (
                "UNCLAIMED",
                "UNCLAIMED",
                "CLAIMED",
                "CLAIMED",
                "CLAIMED",
                "REJECTED",
                "REJECTED",
                "INTEGRATION_FAILED",
                "READY_FOR_REVIEW",
                "BLOCKED",
                "MERGED",
            )
        ),
        "assigned_to": st.sampled_from(("", "", *CODERS, "coder-2", "coder-3")),
        "failed_by": st.sampled_from(([], [], [], ["coder-2"], ["coder-3"], [CLAIMER])),
        "crashes": st.sampled_from((0, 0, 0, 1, 2, 3)),
        "lease": st.one_of(st.none(), st.sampled_from(NUDGES)),
        "suspended": st.sampled_from((False, False, False, False, True)),
        "goal": st.sampled_from((None, None, None, *properties.GOALS)),
        "handoff_pending": st.sampled_from((False, False, False, True)),
        "priority": st.integers(1, 3),
        "created": st.integers(0, 3),
        "worktree": st.sampled_from(("", "wt/old")),
        "base_commit": st.sampled_from(("", "b0")),
        "integration_fix": st.sampled_from((False, False, True)),
        "override": st.sampled_from((None, None, 0, 600)),
        "iteration": st.sampled_from((None, 1, 2)),
        "review_cycles_current": st.integers(0, 2),
        "depends": st.sampled_from(([], [], [], [0], [1, 2])),
        # Whitespace the event's one-line detail folds (Python's, which the SQL must match).
        "description": st.sampled_from(
            ("plain", "two  spaces", "a\nnew line\t tab ", "nbsp\u00a0unit\x1fsep\u2028 ")
        ),
    }
)
AGENT = st.fixed_dictionaries(
    {
        "exists": st.sampled_from((True, True, True, False)),
        "status": st.sampled_from(("STARTING", "IDLE", "IDLE", "WORKING", "WAITING", "HANDOFF")),
        "on_task": st.sampled_from((True, True, False)),  # current_task = the task it holds
        "lease": st.one_of(st.none(), st.sampled_from((-3600, 3600, 7200))),
    }
)
BOARD = st.fixed_dictionaries(
    {
        "grace": st.sampled_from((0, 60)),
        "backoff": st.sampled_from(([], [30], [30, 60])),
        "wip": st.sampled_from((None, None, 1, 2)),
        "tasks": st.lists(TASK, min_size=1, max_size=5),
        "agents": st.fixed_dictionaries({coder: AGENT for coder in CODERS}),
        "worktree": st.sampled_from(("", "wt/mine")),
        "base_commit": st.sampled_from(("b1", "b1", "b1", "")),
        # claim-next, or a named claim of one of the board's tasks
        "named": st.one_of(st.none(), st.integers(0, 4)),
        "checks": checks.CHECKS,
    }
)


def _lease(board, spec):
    if spec["lease"] is None:
        return None
    backoff = board["backoff"]
    wait = 0 if spec["crashes"] >= len(backoff) else backoff[spec["crashes"]]
    boundary = NOW - timedelta(seconds=board["grace"] + wait)
    return boundary + timedelta(microseconds=spec["lease"])


def _build(board):
    """Write the board; the project, the claimer (as its key gives it) and its named task."""
    made = ProjectFactory()
    ProjectConfig.objects.update_or_create(
        project=made,
        defaults={
            "lease_duration": LEASE,
            "lease_grace": board["grace"],
            "retry_backoff": board["backoff"],
            "wip_limits": {} if board["wip"] is None else {"CLAIMED": board["wip"]},
            "max_concurrent": board["checks"]["max_concurrent"],
        },
    )
    goals = properties.goal_rows(made)
    made_checks = checks.project_checks(made, board["checks"], NOW)
    project = Project.objects.get(pk=made.pk)  # its config and pause read afresh
    rows = []
    for i, spec in enumerate(board["tasks"]):
        rows.append(
            properties.task_row(
                project,
                goals,
                i,
                spec,
                failed_by=spec["failed_by"],
                crashes=spec["crashes"],
                lease_expires=_lease(board, spec),
                handoff_pending=spec["handoff_pending"],
                worktree=spec["worktree"],
                base_commit=spec["base_commit"],
                integration_fix=spec["integration_fix"],
                lease_duration_override=spec["override"],
                iteration=spec["iteration"],
                review_cycles_current=spec["review_cycles_current"],
            )
        )
        Task.objects.filter(pk=rows[-1].pk).update(description=f"task {i} {spec['description']}")
    for task in rows:
        # Open alerts about the task: the claim's and the block's moves end some of them.
        Alert.objects.bulk_create(
            Alert(project=project, task=task, type=kind, subject=task.key, message=kind, created=T0)
            for kind in ALERTS
        )
    for task, spec in zip(rows, board["tasks"], strict=True):
        task.depends_on.set([rows[d] for d in spec["depends"] if d < len(rows) and rows[d] != task])
    claimer = None
    for coder, spec in board["agents"].items():
        if not spec["exists"] and coder != CLAIMER:
            continue
        held = [t for t in rows if t.assigned_to == coder and t.status != "UNCLAIMED"]
        agent = Agent.objects.create(
            project=project,
            agent_id=coder,
            role="coder",
            status=spec["status"],
            current_task=held[0] if held and spec["on_task"] else None,
            lease_expires=None if spec["lease"] is None else NOW + timedelta(seconds=spec["lease"]),
            heartbeat=T0,
            registered_at=T0,
            iterations_total=2,
        )
        if coder == CLAIMER:
            claimer = agent
    checks.agent_checks(claimer, rows, board["checks"], NOW, made_checks)
    named = board["named"]
    task = rows[named] if named is not None and named < len(rows) else None
    return project, claimer, task


def _state(project_id: int) -> dict:
    """Every row the claim may write, and the outbox, comparable across the two runs."""
    pending = outbox._pending().pop(project_id, {})
    events = [
        {k: v for k, v in event.items() if k != "id"}
        for event in Event.objects.filter(project_id=project_id).order_by("pk").values()
    ]
    return {
        "tasks": list(Task.objects.filter(project_id=project_id).order_by("pk").values()),
        "agents": list(Agent.objects.filter(project_id=project_id).order_by("pk").values()),
        "events": events,
        "alerts": list(
            Alert.objects.filter(project_id=project_id)
            .order_by("pk")
            .values_list("pk", "resolved_at")
        ),
        "anomalies": [
            {k: v for k, v in a.items() if k != "id"}
            for a in Anomaly.objects.filter(project_id=project_id).order_by("pk").values()
        ],
        # An event's key differs between the runs (a sequence is not rolled back): counted.
        "outbox": sorted(
            (kind, object_id if kind != outbox.EVENT else 0, controls)
            for (kind, object_id), controls in pending.items()
        ),
    }


def _run(claim, project, agent, task, board) -> tuple:
    """One implementation on the board, in a savepoint rolled back after: (answer, state)."""
    outbox._pending().clear()
    kwargs = {"worktree": board["worktree"], "base_commit": board["base_commit"], "now": NOW}
    with properties.rolled_back():
        # The claimer as its key gives it: loaded afresh, not the object that wrote the row.
        fresh = Agent.objects.get(pk=agent.pk)
        try:
            if task is None:
                got = claim["next"](project=project, agent=fresh, **kwargs)
            else:
                got = claim["named"](task=Task.objects.get(pk=task.pk), agent=fresh, **kwargs)
            answer = ("task", None if got is None else (got.pk, _fields(got)))
        except ProtocolError as exc:
            answer = ("refused", type(exc).__name__, exc.message, exc.details)
        state = _state(project.pk)
    return answer, state


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


REFERENCE = {"next": oracle.claim_next, "named": oracle.claim}
PRODUCT = {"next": service.task_claim_next, "named": service.task_claim}


def differences(board) -> list[str]:
    """Where the service and the reference model disagree on `board` (its rows rolled back)."""
    found: list[str] = []
    with properties.rolled_back():
        project, agent, task = _build(board)
        expected = _run(REFERENCE, project, agent, task, board)
        got = _run(PRODUCT, project, agent, task, board)
        # `/work` answers a coder's question about claim-next (a disabled agent's key is refused
        # before it asks; a reviewer's `/work` is about reviews).
        coder = board["checks"]["enabled"] and board["checks"]["role"] == "coder"
        says = _work_says(project, agent) if task is None and coder else None
    # What the examples reached (pytest --hypothesis-show-statistics).
    actions = sorted({e["action"] for e in expected[1]["events"]})
    if currently_in_test_context():
        event(f"{'named' if task is not None else 'next'} {expected[0][0]} {actions}")
    if got[0] != expected[0]:
        found.append(f"answer {got[0]} != model's {expected[0]}")
    # A missing base commit is refused after the pick found a task: the request's, not the
    # board's answer, which `/work` does not know.
    gives = (got[0][0] == "task" and got[0][1] is not None) or got[0][-2:-1] == (
        "base_commit: integration HEAD at claim time is required",
    )
    if says is not None and says != gives:
        # `/work` asks the claim's own SQL (issue 26): it says work exactly when claim-next,
        # asked next, gives a task — also where the claim blocks a task and passes on.
        found.append(f"/work says work={says}, claim-next answers {got[0]}")
    for name, rows in expected[1].items():
        if got[1][name] != rows:
            found.append(f"{name}: {_diff(got[1][name], rows)}")
    return found


def _work_says(project, agent) -> bool:
    """`/work`'s answer for the claimer at `NOW`, before any claim (read-only, rolled back)."""
    with properties.rolled_back():
        fresh = Agent.objects.get(pk=agent.pk)
        return work_for_role(project=project, role=fresh.role, agent=fresh, now=NOW)["work"]


def _diff(got, expected) -> str:
    if isinstance(got, list) and len(got) == len(expected):
        pairs = [
            {k: (v, e.get(k)) for k, v in g.items() if v != e.get(k)}
            if isinstance(g, dict)
            else (g, e)
            for g, e in zip(got, expected, strict=True)
            if g != e
        ]
        return f"(service, model) {pairs}"
    return f"service {got} != model {expected}"


def _task(**changes) -> dict:
    """An UNCLAIMED task nobody held, changed."""
    task = {
        "status": "UNCLAIMED",
        "assigned_to": "",
        "failed_by": [],
        "crashes": 0,
        "lease": None,
        "suspended": False,
        "goal": None,
        "handoff_pending": False,
        "priority": 2,
        "created": 0,
        "worktree": "",
        "base_commit": "",
        "integration_fix": False,
        "override": None,
        "iteration": None,
        "review_cycles_current": 0,
        "depends": [],
        "description": "plain",
    }
    return {**task, **changes}


def _board(
    *tasks, named=None, wip=None, claimer="IDLE", base_commit="b1", checked=None, **agents
) -> dict:
    """The claimer (IDLE) and the other coders (WORKING on what they hold) with `tasks`."""
    held = {"exists": True, "status": "WORKING", "on_task": True, "lease": None}
    return {
        "grace": 60,
        "backoff": [30, 60],
        "wip": wip,
        "tasks": list(tasks),
        "agents": {
            CLAIMER: {**held, "status": claimer},
            "coder-2": {**held, **agents.get("coder_2", {})},
            "coder-3": {**held, **agents.get("coder_3", {})},
        },
        "worktree": "",
        "base_commit": base_commit,
        "named": named,
        "checks": checks.checks_of(**(checked or {})),
    }


DEAD = -3_600_000_000
ALIVE = 3_600_000_000
# Every claim kind and every block, once on each run (random boards reach them only now and
# then): the retry and the takeover on each side of the retry boundary.
KIND_BOARDS = [
    _board(_task(description="a\nnew line\t tab ")),
    _board(_task(description="\u3000nbsp\u00a0unit\x1f\x85sep\u2028 \u200bzero-width")),
    _board(_task(status="REJECTED", assigned_to=CLAIMER, iteration=2, worktree="wt/old")),
    *[
        _board(_task(status="CLAIMED", assigned_to=CLAIMER, crashes=crashes, lease=nudge))
        for crashes in (0, 2)
        for nudge in (-1, 0, 1)
    ],
    _board(_task(status="CLAIMED", assigned_to=CLAIMER, lease=ALIVE), claimer="STARTING"),
    _board(
        _task(status="CLAIMED", assigned_to=CLAIMER, crashes=2, lease=DEAD, failed_by=["coder-2"])
    ),
    *[
        _board(_task(status="CLAIMED", assigned_to="coder-2", lease=nudge, crashes=1))
        for nudge in (-1, 0, 1)
    ],
    _board(_task(status="CLAIMED", assigned_to="coder-2", lease=DEAD, crashes=2)),
    _board(_task(status="CLAIMED", assigned_to="coder-2", lease=DEAD, failed_by=["coder-3"])),
    _board(_task(status="CLAIMED", assigned_to="coder-2", lease=DEAD), _task(priority=3)),
    _board(_task(status="INTEGRATION_FAILED", assigned_to="coder-2", worktree="wt/old")),
    _board(_task(status="INTEGRATION_FAILED", assigned_to="coder-2"), coder_2={"on_task": False}),
    _board(_task(status="UNCLAIMED", assigned_to="coder-3", failed_by=["coder-3"])),
    _board(_task(), base_commit=""),
    _board(_task(status="INTEGRATION_FAILED", assigned_to=CLAIMER), base_commit=""),
    _board(
        _task(status="CLAIMED", assigned_to="coder-2", lease=DEAD),
        _task(status="CLAIMED", assigned_to="coder-3", lease=ALIVE),
        _task(),
        wip=2,
    ),
    _board(_task(status="REJECTED", assigned_to="coder-2", lease=DEAD), named=0),
    _board(_task(status="REJECTED", assigned_to="coder-2"), named=0, coder_2={"lease": 3600}),
    _board(_task(status="REJECTED", assigned_to="coder-2", failed_by=["coder-3"]), named=0),
    _board(_task(status="CLAIMED", assigned_to="coder-2", lease=DEAD, crashes=2), named=0),
    _board(_task(status="INTEGRATION_FAILED", assigned_to=CLAIMER, iteration=1), named=0),
    _board(_task(status="CLAIMED", assigned_to=CLAIMER, lease=DEAD, crashes=2), named=0),
]
# Each check of claim-next once on each run, refusing or on its edge, with the claimer holding
# nothing (claimed in one statement, checked after it) and holding a task (checked first).
HOLDING = (
    _task(status="CLAIMED", assigned_to=CLAIMER, lease=ALIVE),
    _task(status="CLAIMED", assigned_to=CLAIMER, lease=DEAD),
    _task(status="REJECTED", assigned_to=CLAIMER),
    _task(status="READY_FOR_REVIEW", assigned_to=CLAIMER),
)
CHECK_BOARDS = [
    _board(*held, _task(goal="IN_PROGRESS"), checked=one, **agents)
    for held in ((), *((h,) for h in HOLDING))
    for one, agents in (
        ({"paused": True}, {}),
        ({"sprint": "CHECKPOINT"}, {}),
        ({"sprint": "ABORTED"}, {}),
        ({"sprint": "IN_PROGRESS", "budgets": (("sprint", 0),)}, {}),
        ({"budgets": (("project", 0),)}, {}),
        ({"budgets": (("project", 1),)}, {}),
        ({"budgets": (("agent", 0),)}, {}),
        ({"budgets": (("task", 0),)}, {}),
        ({"budgets": (("goal", 0),)}, {}),
        ({"expiries": (10, 100, 200)}, {}),
        ({"expiries": (10, 100, "edge")}, {}),
        ({"expiries": (10, 100, "in")}, {}),
        ({"expiries": (10, 100, 200), "cleared": 150}, {}),
        ({"crashes": (5, 50, 150)}, {}),
        ({"overloaded": True}, {}),
        ({"enabled": False}, {}),
        ({"role": "code_reviewer"}, {}),
        ({"max_concurrent": {"coder": 1}}, {}),
        ({"max_concurrent": {"project": 2}}, {}),
        ({"paused": True, "enabled": False}, {}),
        ({"overloaded": True, "budgets": (("project", 0),)}, {}),
        ({}, {"claimer": "HANDOFF"}),
    )
] + [
    _board(
        _task(status="CLAIMED", assigned_to="coder-2", lease=DEAD),
        _task(status="CLAIMED", assigned_to="coder-3", lease=ALIVE),
        _task(),
        wip=2,
        checked={"overloaded": True},
    ),
    _board(_task(status="CLAIMED", assigned_to="coder-3", lease=ALIVE), _task(), wip=1),
    # Two tasks held (the protocol never makes it; a random board did): the held one is the
    # first by id, not by the board's order (priority, age), whose first here is a dead claim
    # out of retries that the claim would block.
    _board(
        _task(status="CLAIMED", assigned_to=CLAIMER, created=1),
        _task(status="CLAIMED", assigned_to=CLAIMER, crashes=2, lease=DEAD),
    ),
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(board=BOARD)
@properties.with_boundaries(KIND_BOARDS + CHECK_BOARDS)
def test_claims_equal_the_reference_model(board):
    assert differences(board) == []


def _planted(needle: str, replacement: str, function: str = "liza_claim_v2") -> None:
    """Replace `needle` (once in the function) in `function`, in this test's transaction
    only: DDL is transactional in PostgreSQL, and the rollback restores the migration's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = %s", [function]
        )
        definition = cursor.fetchone()[0]
        assert definition.count(needle) == 1
        cursor.execute(definition.replace(needle, replacement))


def test_a_planted_difference_in_the_takeover_is_caught():
    """The takeover's failed_by entry (SPEC §5.1) left out: every board where another coder's
    task is taken over tells them apart, and only those and the blocks (whose reason names
    failed_by): a fresh claim, a rework, a retry, an integration fix do not."""
    _planted("t.failed_by := t.failed_by || to_jsonb(previous);", "NULL;")
    caught = [bool(differences(board)) for board in KIND_BOARDS]
    events = [_reference_events(board) for board in KIND_BOARDS]
    takeovers = [any(" taken over from " in e["detail"] for e in board) for board in events]
    blocks = [any(e["action"] == "blocked" for e in board) for board in events]
    assert sum(takeovers) >= 3
    assert all(c for c, t in zip(caught, takeovers, strict=True) if t)
    assert not any(c for c, t, b in zip(caught, takeovers, blocks, strict=True) if not (t or b))


def _reference_events(board) -> list[dict]:
    with properties.rolled_back():
        project, agent, task = _build(board)
        return _run(REFERENCE, project, agent, task, board)[1]["events"]


def test_a_planted_difference_in_a_check_is_caught():
    """`liza_claim_v3` made blind to budgets (it claims at once as if the project had none):
    every check board with a budget that refuses or passes a task over tells them apart, and
    no board without a budget does."""
    _planted(
        "budgets := EXISTS (SELECT 1 FROM agents_budget WHERE project_id = a.project_id);",
        "budgets := false;",
        function="liza_claim_v3",
    )
    caught = [bool(differences(board)) for board in CHECK_BOARDS]
    budgeted = [bool(board["checks"]["budgets"]) for board in CHECK_BOARDS]
    spent_on_nothing_held = [
        b and not board["tasks"][0]["assigned_to"] and _spent(board)
        for b, board in zip(budgeted, CHECK_BOARDS, strict=True)
    ]
    assert sum(spent_on_nothing_held) >= 4
    assert all(c for c, s in zip(caught, spent_on_nothing_held, strict=True) if s)
    assert not any(c for c, b in zip(caught, budgeted, strict=True) if not b)


def _spent(board) -> bool:
    """A budget of the board at or past its limit, on a scope that applies to a claim."""
    return any(offset <= 0 for _, offset in board["checks"]["budgets"])
