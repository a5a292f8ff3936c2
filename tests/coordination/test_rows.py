"""`boards.coordination.rows`, the hot paths' plain statements, give and write exactly what the ORM
would:
the same field values read (JSON, datetimes, nulls, choices), only the named fields written,
an inserted row equal to the ORM's, a real row lock, no model signal skipped, and the bearer
key's joined lookup equal to the ORM's `select_related`."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.db.models import Case, Value, When
from django.db.models.signals import post_save, pre_save

from agents.models import Agent, AgentKey
from agents.selectors import agent_key_lookup
from agents.services import agent_key_issue, agent_key_revoke
from boards.coordination import rows
from boards.coordination.models.projects import Goal, ProjectConfig, Sprint
from boards.coordination.models.records import CircuitBreaker, Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.breaker import breaker_status
from boards.coordination.selectors.sprints import goal_current, sprint_current
from boards.coordination.services.goals import goal_abort, goal_create
from boards.coordination.services.sprints import sprint_abort, sprint_checkpoint, sprint_create
from boards.protocol import OPEN_SPRINT_STATES, GoalStatus
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

# The models the services read or write through boards.coordination.rows.
MODELS = (Task, Agent, Review, Sprint, Event)


def _values(row) -> dict:
    return {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}


@pytest.fixture
def world():
    """Rows with most kinds of value set: a task under review (a review lease, a failed-by list,
    dependencies), agents mid-work, an open sprint, and their events."""
    world = World()
    goal = goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.merged("T-1")
    world.under_review("T-2", depends_on=["T-1"])
    world.blocked("T-3", coder="coder-2")
    return world


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_row_read_lean_equals_the_orms(world, model):
    found = list(model.objects.all())
    assert found  # the world has rows of every kind
    sql = rows.select_sql(model, f"{connection.ops.quote_name(model._meta.pk.column)} = %s")
    for row in found:
        lean = rows.fetch(model, sql, [row.pk])
        assert type(lean) is model
        assert _values(lean) == _values(row)
        assert not lean._state.adding and lean._state.db == "default"
        with transaction.atomic():
            assert _values(rows.get_locked(model, row.pk)) == _values(row)


def test_a_missing_row_is_does_not_exist(world):
    with pytest.raises(Task.DoesNotExist), transaction.atomic():
        rows.get_locked(Task, 10**9)
    assert rows.fetch(Task, rows.select_sql(Task, "id = %s"), [10**9]) is None


def test_save_fields_writes_the_named_fields_only(world):
    task = world.task("T-2")
    before = _values(task)
    task.lease_expires = world.now + timedelta(hours=1)
    task.description = "changed in memory, not saved"
    rows.save_fields(task, ["lease_expires"])
    after = _values(Task.objects.get(pk=task.pk))
    assert after == {**before, "lease_expires": world.now + timedelta(hours=1)}


def test_save_fields_writes_every_loaded_field_and_no_deferred_one(world):
    task = Task.objects.only("key", "priority", "failed_by").get(pk=world.task("T-3").pk)
    Task.objects.filter(pk=task.pk).update(description="written meanwhile by someone else")
    task.priority = 1
    task.failed_by = ["coder-9"]
    rows.save_fields(task)
    fresh = Task.objects.get(pk=task.pk)
    assert (fresh.priority, fresh.failed_by) == (1, ["coder-9"])
    assert fresh.description == "written meanwhile by someone else"

    whole = world.task("T-2")
    whole.review_cycles_total = 7
    whole.description = "saved whole"
    rows.save_fields(whole)
    assert _values(Task.objects.get(pk=whole.pk)) == _values(whole)


def test_insert_gives_the_row_the_orm_gives(world):
    model = Event.objects.filter(task__isnull=False).last()
    fields = {
        f.attname: getattr(model, f.attname)
        for f in Event._meta.concrete_fields
        if not f.primary_key
    }
    lean = Event(**fields)
    rows.insert(lean)
    assert lean.pk is not None and lean.pk != model.pk
    assert not lean._state.adding
    orm = Event.objects.create(**fields)
    assert _values(Event.objects.get(pk=lean.pk)) == {**_values(orm), "id": lean.pk}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_no_signal_receiver_is_skipped(model):
    """rows writes without Model.save(): fine only while nothing listens to these models."""
    assert not pre_save.has_listeners(model)
    assert not post_save.has_listeners(model)


def test_get_locked_holds_the_row_until_the_transaction_ends(world):
    task = world.task("T-2")
    seen: list[str] = []
    locked, release = threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                rows.get_locked(Task, task.pk)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    def try_lock():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM boards_task WHERE id = %s FOR UPDATE NOWAIT", [task.pk]
                )
            seen.append("got it")
        except OperationalError:
            seen.append("locked")
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    assert locked.wait(10)
    other = threading.Thread(target=try_lock)
    other.start()
    other.join(10)
    release.set()
    thread.join(10)
    after = threading.Thread(target=try_lock)
    after.start()
    after.join(10)
    assert seen == ["locked", "got it"]


def _orm_key(prefix: str):
    return (
        AgentKey.objects.select_related("agent", "agent__project", "agent__project__config")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )


@pytest.mark.parametrize("config", ["with its config", "made before configs existed"])
def test_the_key_lookup_gives_what_the_orms_select_related_gives(
    world, config, django_assert_num_queries
):
    """`agent_key_lookup` (every agent request) reads the key, its agent, the project and its
    config in one joined statement: the same rows, related without a further query."""
    if config != "with its config":
        ProjectConfig.objects.filter(project=world.project).delete()
    agent = world.agent("coder-2")
    key, plain = agent_key_issue(agent=agent, actor=world.admin, now=world.now)
    with django_assert_num_queries(1):
        lean = agent_key_lookup(plain=plain)
        assert (lean.agent.project.pk, lean.agent.pk) == (world.project.pk, agent.pk)
        held = config_of(lean.agent.project)
    orm = _orm_key(key.prefix)
    assert _values(lean) == _values(orm)
    assert _values(lean.agent) == _values(orm.agent)
    assert _values(lean.agent.project) == _values(orm.agent.project)
    if config == "with its config":
        assert _values(held) == _values(orm.agent.project.config)
        assert held.project is lean.agent.project
    else:
        assert held.pk is None  # seed 002's defaults, as config_of gives without a row
        with pytest.raises(ProjectConfig.DoesNotExist):
            orm.agent.project.config  # noqa: B018


def test_the_key_lookup_refuses_revoked_unknown_and_wrong_secrets(world):
    agent = world.agent("coder-1")
    key, plain = agent_key_issue(agent=agent, actor=world.admin, now=world.now)
    assert agent_key_lookup(plain=plain).pk == key.pk
    assert agent_key_lookup(plain=plain[:-1] + ("A" if plain[-1] != "A" else "B")) is None
    assert agent_key_lookup(plain="liza_" + "0" * AgentKey.PREFIX_LEN + "_secret") is None
    agent_key_revoke(key=key, actor=world.admin, now=world.tick())
    assert agent_key_lookup(plain=plain) is None


def _orm_current(project) -> Sprint | None:
    open_first = Case(When(status__in=OPEN_SPRINT_STATES, then=Value(0)), default=Value(1))
    return Sprint.objects.filter(project=project).order_by(open_first, "-started", "-id").first()


def test_the_current_sprint_is_the_orms_at_every_step_of_a_sprint_life():
    """`sprint_current` (every claim and heartbeat, through `stop_reason`): the open sprint
    first, else the latest; one lean statement, checked against the ORM's ordering."""
    world = World()
    project, planner, admin = world.project, world.planner, world.admin

    def same() -> Sprint | None:
        lean = sprint_current(project=project)
        orm = _orm_current(project)
        assert (lean and _values(lean)) == (orm and _values(orm))
        return lean

    assert same() is None
    goal = goal_create(project=project, actor=planner, description="G", now=world.tick())
    first = sprint_create(project=project, actor=planner, goal=goal, now=world.tick())
    assert same().pk == first.pk
    sprint_checkpoint(sprint=first, actor=admin, reason="look", now=world.tick())
    assert same().status == "CHECKPOINT"
    sprint_abort(sprint=same(), actor=admin, reason="wrong plan", now=world.tick())
    assert same().status == "ABORTED"
    second = sprint_create(project=project, actor=planner, goal=goal, now=world.tick())
    assert same().pk == second.pk
    sprint_abort(sprint=second, actor=admin, reason="again", now=world.tick())
    assert same().pk == second.pk  # the latest, both closed


def _orm_goal(project) -> Goal | None:
    in_progress_first = Case(When(status=GoalStatus.IN_PROGRESS, then=0), default=1)
    return (
        Goal.objects.filter(project=project).order_by(in_progress_first, "-created", "-id").first()
    )


def test_the_current_goal_and_the_breaker_are_the_orms_through_a_goal_life():
    """`goal_current` and `breaker_status` (the board header, every render): the goal
    IN_PROGRESS first, else the latest; the breaker row, else an unsaved one. One lean
    statement each, checked against the ORM."""
    world = World()
    project, planner, admin = world.project, world.planner, world.admin

    def same() -> Goal | None:
        lean, orm = goal_current(project=project), _orm_goal(project)
        assert (lean and _values(lean)) == (orm and _values(orm))
        breaker = CircuitBreaker.objects.filter(project=project).first()
        assert _values(breaker_status(project=project)) == _values(
            breaker or CircuitBreaker(project=project)
        )
        return lean

    CircuitBreaker.objects.filter(project=project).delete()  # a project made before breakers
    assert same() is None
    first = goal_create(project=project, actor=planner, description="G1", now=world.tick())
    assert same().pk == first.pk
    goal_abort(goal=first, actor=admin, reason="wrong goal", now=world.tick())
    second = goal_create(project=project, actor=planner, description="G2", now=world.tick())
    assert same().pk == second.pk
    goal_abort(goal=second, actor=admin, reason="again", now=world.tick())
    assert same().pk == second.pk  # the latest, both ended


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


def test_the_hot_statements_are_prepared_once_per_connection_and_nothing_else_is():
    """PostgreSQL parses and plans the heartbeat's, claim-next's and review claim-next's
    statements once per connection (after `prepare_threshold` calls), not at every call: their
    parse and plan were ~60 % of a heartbeat's database CPU. Django's own queries are not
    prepared (client-side binding), so a pooler that cannot hold prepared statements only has
    the hot ones to turn off (DB_PREPARED_STATEMENTS=0)."""
    from agents.services import agent_heartbeat
    from boards.coordination.services.review_claims import review_claim_next
    from boards.coordination.services.tasks import task_claim_next

    world = World()
    connection.close()  # a connection of its own: nothing prepared on it yet
    assert _prepared() == []
    threshold = connection.connection.prepare_threshold
    assert threshold == connection.settings_dict["OPTIONS"]["prepare_threshold"] == 5
    calls = {
        "liza_heartbeat_v3(": lambda: agent_heartbeat(agent=world.coder, now=world.tick()),
        # Empty queues: each call is the whole statement, answering nothing to claim.
        "liza_claim_v3(": lambda: task_claim_next(
            project=world.project, agent=world.coder, now=world.tick()
        ),
        "liza_review_claim_v2(": lambda: review_claim_next(
            project=world.project, agent=world.reviewer, now=world.tick()
        ),
    }
    for function, call in calls.items():
        for n in range(1, threshold + 2):  # prepared at the call after `threshold` calls
            call()
            Task.objects.filter(project=world.project).count()  # an ORM query as often
            prepared = [s for s in _prepared() if function in s]
            assert len(prepared) == (n == threshold + 1), (function, n)
    prepared = _prepared()
    assert len(prepared) == len(calls), prepared
    assert all(any(f in s for s in prepared) for f in calls)
