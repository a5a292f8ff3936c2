"""Rows a module's tests share instead of building them again for each test."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from django.db import transaction


@contextlib.contextmanager
def shared_rows(django_db_blocker) -> Iterator[Callable]:
    """Rows built once for several tests, for a module- or class-scoped fixture (which also
    asks for `django_db_setup`): an outer transaction, rolled back when the fixture's scope
    ends, in which each test's own transaction (pytest-django's `db`) is a savepoint rolled
    back after it. A test sees the rows as built, whatever the tests before it wrote.

    Class-scoped when other tests of the module read across projects (a staff inbox, a count
    of every project's rows): the rows then exist only while the tests sharing them run.

    Yields `unblocked`, the context in which to build them: between tests the database stays
    blocked for tests that do not ask for it. Only for tests in a rolled-back transaction (a
    transactional test would flush the rows and commit under the outer transaction).
    """
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        yield django_db_blocker.unblock
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
