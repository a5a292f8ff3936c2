"""Suite-wide fixtures. Database tests run on PostgreSQL (SPEC §2): real locks, real triggers."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.factories import T0

SUITE_SETTINGS = "tests.settings"


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """The suite's settings even under an exported DJANGO_SETTINGS_MODULE=liza_site.settings,
    which pytest-django prefers to pyproject's `tests.settings`: the fast password hasher.
    (Servers started by tests/live_server.py load tests.settings themselves.)"""
    if settings.configured and settings.SETTINGS_MODULE != SUITE_SETTINGS:
        from tests import settings as suite

        settings.PASSWORD_HASHERS = suite.PASSWORD_HASHERS


# The modules whose tests take tens of seconds each (real servers, private databases, property
# tests, the original's bash validator): started first. xdist hands tests out in collection
# order, and a minute-long test collected last keeps one worker busy while the other idles.
LONG = (
    "tests/site/",
    "tests/faults/",
    "tests/concurrency/",
    "tests/e2e/",
    "tests/agents/client/",
    "tests/contract/",
    "tests/interop/",
    "tests/coordination/selectors/test_work.py",
)


def _django_group(item) -> int:
    """pytest-django's order: 0 database tests in a rolled-back transaction, 1 transactional
    ones (they flush the tables, so they come after), 2 no database."""
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    if (marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))) or (
        "transactional_db" in fixtures or "live_server" in fixtures
    ):
        return 1
    return 0 if marker or "db" in fixtures else 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """After pytest-django's ordering, the long tests first within each of its groups — and the
    long tests that use no test database (servers of their own) before everything."""

    def key(item) -> tuple[int, bool]:
        group, long = _django_group(item), item.nodeid.startswith(LONG)
        rank = {0: 1, 1: 2, 2: 0 if long else 3}[group]
        return rank, not long

    items.sort(key=key)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """pytest-django's (each xdist worker's database name), and each worker's test database
    copied from one migrated template rather than migrated on its own (tests/template_db.py)."""
    from tests.template_db import migrated_template

    default = settings.DATABASES["default"]
    default.setdefault("TEST", {})["TEMPLATE"] = migrated_template(default)


@pytest.fixture(autouse=True)
def _heartbeats_published_within_their_test():
    """A committed heartbeat's board message waits up to `outbox.BEAT_WINDOW`: sent when its
    test ends, not during a later test — whose Redis may be a dead port, where the failure
    would mark Redis down (liza_site.outages) for that test."""
    yield
    from boards.coordination import outbox

    outbox._beats.send_waiting()


@pytest.fixture(autouse=True, scope="session")
def _key_counter_of_this_worker():
    """This worker's own key counter (liza_site.key_generation): the workers share one Redis
    database, and another worker's revoke or pause bumping the shared counter would empty this
    one's cached keys mid-test — a test that needs a cached key (tests/api/test_hot.py,
    tests/agents/test_keycache.py) then failed now and then. Servers the tests start keep the
    product's counter (within one server its bumps and reads agree), except the `liza` command
    line's (tests/agents/client), which reads this one so that a test's pause reaches it."""
    from liza_site import key_generation

    key_generation.KEY = f"liza:keygen:{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


@pytest.fixture
def now():
    return T0


@pytest.fixture
def world(db):
    from tests.lifecycle import World

    return World()


# Between two transactional tests Django empties every table with one `TRUNCATE` of all 39: on
# PostgreSQL that creates new files for each table and its indexes, ~330 ms a test here, while
# deleting the (few) rows of every table takes ~7 ms. The statements below are what the suite's
# flush runs instead: the same tables emptied in one transaction, with the session's triggers
# (the log's append-only guard, deferred foreign keys) not fired, as TRUNCATE does not fire them
# either. Sequences are left as TRUNCATE without RESTART IDENTITY leaves them; a test that asks
# for `reset_sequences` keeps Django's own statements.
def _delete_flush(original):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return original(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        quoted = [self.quote_name(table) for table in tables]
        return [
            "SET LOCAL session_replication_role = replica",
            *(f"DELETE FROM {table}" for table in quoted),
        ]

    return sql_flush


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    from django.db.backends.postgresql.operations import DatabaseOperations

    DatabaseOperations.sql_flush = _delete_flush(DatabaseOperations.sql_flush)
