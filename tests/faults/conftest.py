"""The fault tests' private PostgreSQL, migrated and seeded (tests/faults/support.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import private_postgres
from tests.ci import unavailable
from tests.faults.support import SEED, django_run


@pytest.fixture(scope="session")
def migrated_cluster() -> Iterator[Path]:
    """A private cluster's data directory with `liza_faults` migrated, stopped cleanly: each
    test's server starts from a copy of it (a migration costs ten seconds and more; the copy
    well under one), once per test process."""
    reason = private_postgres.available()
    if reason:
        unavailable(reason)
    with private_postgres.private_postgres() as pg:
        url = pg.create_database("liza_faults")
        django_run(url, "import django; django.setup(); "
                        "from django.core.management import call_command; "
                        "call_command('migrate', verbosity=0)")  # fmt: skip
        pg.stop("fast")
        yield pg.data


@pytest.fixture
def database(migrated_cluster):
    """The private server, its own (a copy of the migrated cluster), seeded now, with
    `database_url`, `keys` (agent id → API key) and `key` (coder-1's)."""
    with private_postgres.private_postgres(template=migrated_cluster) as pg:
        url = pg.url("liza_faults")
        pg.keys = json.loads(django_run(url, SEED).splitlines()[-1])
        pg.key = pg.keys["coder-1"]
        pg.database_url = url
        yield pg
