"""Contention is not an outage (boards.errors `contention`, `Contention`; the operation runner
`boards.operations.base.run_again_on_lost_race`): real PostgreSQL errors, provoked between
connections of their own, are each answered for what they are.

- a deadlock's victim (40P01) and a serialization failure (40001): the runner runs the whole
  transaction again; still losing after `LOST_RACE_RUNS`, the answer is 409 `contention`;
- a lock or statement timeout (55P03, 57014): 409 `contention` at once;
- only a database that cannot be reached is 503 `unavailable`.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import OperationalError, connection, transaction
from django.db.backends.postgresql.base import DatabaseWrapper

from agents.models import Agent, IdempotentRequest
from boards.coordination import rows
from boards.coordination.models.tasks import Task
from boards.errors import (
    Contention,
    Unavailable,
    as_protocol_error,
    contention,
    database_unavailable,
    lost_race,
)
from boards.operations.base import LOST_RACE_RUNS, run_again_on_lost_race
from tests.api.helpers import api_base, assert_envelope, bearer, http_start, key_for
from tests.concurrency.conftest import agent_row_held, run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)


# -- real errors, provoked --------------------------------------------------------------------


def _lock_in_turn(first: int, second: int, both_hold: threading.Barrier | None) -> None:
    """Lock agent row `first`, wait until the other side holds its own first row, lock
    `second`: two of these in opposite orders are a deadlock. Without `both_hold` (a run
    again), nobody waits."""
    with transaction.atomic():
        rows.get_locked(Agent, first)
        if both_hold is not None:
            both_hold.wait(10)
        rows.get_locked(Agent, second)


def _deadlock(world: World) -> OperationalError:
    a, b = world.coder.pk, world.reviewer.pk
    both_hold = threading.Barrier(2)
    outcomes = run_together(
        lambda: _lock_in_turn(a, b, both_hold), lambda: _lock_in_turn(b, a, both_hold)
    )
    (error,) = [o.error for o in outcomes if not o.ok]
    assert isinstance(error, OperationalError), error
    return error


def _serialization_failure(world: World) -> OperationalError:
    agent = world.coder.pk
    read, written = threading.Event(), threading.Event()

    def repeatable_read() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT context_percent FROM agents_agent WHERE id = %s", [agent])
            read.set()
            assert written.wait(10)
            cursor.execute("UPDATE agents_agent SET context_percent = 2 WHERE id = %s", [agent])

    def write_between() -> None:
        assert read.wait(10)
        Agent.objects.filter(pk=agent).update(context_percent=1)
        written.set()

    first, _ = run_together(repeatable_read, write_between)
    assert isinstance(first.error, OperationalError), first.error
    return first.error


def _lock_timeout(world: World) -> OperationalError:
    agent = world.coder.pk
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            rows.get_locked(Agent, agent)
            held.set()
            done.wait(10)

    def wait_too_long() -> None:
        assert held.wait(10)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '100ms'")
                rows.get_locked(Agent, agent)
        finally:
            done.set()

    _, waiter = run_together(hold, wait_too_long)
    assert isinstance(waiter.error, OperationalError), waiter.error
    return waiter.error


def _statement_timeout(world: World) -> OperationalError:
    with (
        pytest.raises(OperationalError) as raised,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SET LOCAL statement_timeout = '100ms'")
        cursor.execute("SELECT pg_sleep(2)")
    return raised.value


def _refused(world: World) -> OperationalError:
    """A connection to a port where no PostgreSQL listens."""
    nowhere = DatabaseWrapper({**connection.settings_dict, "PORT": "1"}, alias="nowhere")
    with pytest.raises(OperationalError) as raised:
        nowhere.ensure_connection()
    return raised.value


# provoke → (SQLSTATE, `contention`'s reason, run again)
CASES = {
    "deadlock": (_deadlock, "40P01", "deadlock", True),
    "serialization failure": (_serialization_failure, "40001", "serialization_failure", True),
    "lock timeout": (_lock_timeout, "55P03", "lock_timeout", False),
    "statement timeout": (_statement_timeout, "57014", "statement_timeout", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_contention_on_rows_is_a_retryable_409_not_an_outage(case):
    provoke, state, reason, runs_again = CASES[case]
    error = provoke(World())
    assert error.__cause__.sqlstate == state
    assert contention(error) == reason
    assert lost_race(error) is runs_again
    assert not database_unavailable(error)
    answer = as_protocol_error(error)
    assert isinstance(answer, Contention)
    assert (answer.code, answer.status_code, answer.exit) == ("contention", 409, 7)
    assert answer.details["reason"] == reason
    assert answer.details["retry_after"] == Contention.RETRY_AFTER


def test_a_database_that_cannot_be_reached_is_still_unavailable():
    error = _refused(World())
    assert contention(error) is None and not lost_race(error)
    assert database_unavailable(error)
    answer = as_protocol_error(error)
    assert isinstance(answer, Unavailable)
    assert (answer.code, answer.status_code, answer.exit) == ("unavailable", 503, 7)


# -- the runner -------------------------------------------------------------------------------


def test_a_deadlock_victim_is_run_again_whole_and_both_sides_pass():
    world = World()
    a, b = world.coder.pk, world.reviewer.pk
    both_hold = threading.Barrier(2)
    runs = {"a": 0, "b": 0}

    def side(name: str, first: int, second: int):
        def once() -> None:
            runs[name] += 1
            _lock_in_turn(first, second, both_hold if runs[name] == 1 else None)

        return lambda: run_again_on_lost_race(once)

    outcomes = run_together(side("a", a, b), side("b", b, a))
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    # The winner ran once; the victim ran again, whole (more than once when, on a loaded
    # machine, its run again took the first row back before the winner got it: another
    # deadlock, which the runner's third run outlasts).
    winner, victim = sorted(runs.values())
    assert winner == 1 and 2 <= victim <= LOST_RACE_RUNS


def test_a_transaction_that_keeps_losing_runs_three_times_then_answers_contention():
    error = _deadlock(World())
    runs = []

    def loses() -> None:
        runs.append(1)
        raise error

    with pytest.raises(OperationalError):
        run_again_on_lost_race(loses)
    assert len(runs) == LOST_RACE_RUNS == 3
    assert isinstance(as_protocol_error(error), Contention)


@pytest.mark.parametrize("case", ["statement timeout", "inside a transaction"])
def test_the_runner_runs_once_what_it_cannot_run_again_whole(case):
    world = World()
    error = _statement_timeout(world) if case == "statement timeout" else _deadlock(world)
    runs = []

    def fails() -> None:
        runs.append(1)
        raise error

    with pytest.raises(OperationalError):
        if case == "inside a transaction":
            with transaction.atomic():  # the transaction around it runs it again, not this
                run_again_on_lost_race(fails)
        else:
            run_again_on_lost_race(fails)
    assert len(runs) == 1


# -- over HTTP: the heartbeat (agent row, then its task) against a transaction in the other order


def _waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def _deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _task_then_agent(task: int, agent: int, pid: int) -> None:
    """Lock the task, wait until the request (backend `pid`) waits for it, lock its agent.
    PostgreSQL looks for a circle after `deadlock_timeout` of waiting, and the first to look
    is the victim: this side looks much later, so the request is the one rolled back."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL deadlock_timeout = '10s'")
        rows.get_locked(Task, task)
        deadline = time.monotonic() + 10
        while not _waiting_on_a_lock(pid):
            assert time.monotonic() < deadline, "the request never waited for the task"
            time.sleep(0.01)
        rows.get_locked(Agent, agent)


@pytest.mark.parametrize("keyed", [False, True], ids=["no key", "Idempotency-Key"])
@pytest.mark.parametrize("path", ["hot path", "DRF view"])
def test_a_heartbeat_chosen_as_a_deadlock_victim_is_run_again_and_answered(path, keyed):
    world = World(now=http_start())
    task = world.claimed("T-1")
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/agents/heartbeat" + (
        "?again=1" if path == "DRF view" else ""
    )
    headers = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if keyed else {}
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    before = _deadlocks()
    partner: list[BaseException] = []

    def other_order() -> None:
        try:
            _task_then_agent(task.pk, world.coder.pk, pid)
        except BaseException as exc:
            partner.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=other_order, daemon=True)
    thread.start()
    time.sleep(0.2)  # the partner holds the task before the heartbeat asks for it
    response = client.post(url, {}, format="json", **headers)
    thread.join(30)
    assert response.status_code == 200, response.content
    assert response.json()["agent"]["agent_id"] == "coder-1"
    # PostgreSQL did detect the circle (the heartbeat was its victim, and was run again), and
    # the other side went on.
    assert partner == []
    deadline = time.monotonic() + 5
    while _deadlocks() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _deadlocks() > before
    if keyed:
        assert IdempotentRequest.objects.filter(agent=world.coder).count() == 1


@pytest.mark.parametrize("keyed", [False, True], ids=["no key", "Idempotency-Key"])
def test_a_statement_timeout_is_answered_contention_and_its_key_applies_later(keyed):
    world = World(now=http_start())
    world.claimed("T-1")
    client = bearer(key_for(world.coder))
    url = f"{api_base(world.project.slug)}/agents/heartbeat"
    headers = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())} if keyed else {}
    with agent_row_held(world.coder.pk, timeout=10):
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = '300ms'")
        try:
            response = client.post(url, {}, format="json", **headers)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET statement_timeout")
    error = assert_envelope(response, 409, "contention")
    assert error["details"] == {"reason": "statement_timeout", "retry_after": 1, "exit": 7}
    assert response["Retry-After"] == "1"
    # Nothing stayed of it: the same request, sent again, is applied.
    assert not IdempotentRequest.objects.filter(agent=world.coder).exists()
    again = client.post(url, {}, format="json", **headers)
    assert again.status_code == 200, again.content
    assert again.get("Idempotent-Replayed") is None
