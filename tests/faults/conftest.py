"""The fault tests' private PostgreSQL, migrated and seeded (tests/faults/support.py)."""

from __future__ import annotations

import json

import pytest

from tests import private_postgres
from tests.ci import unavailable
from tests.faults.support import SEED, django_run


@pytest.fixture
def database():
    """The private server, with `database_url`, `keys` (agent id → API key) and `key`
    (coder-1's)."""
    reason = private_postgres.available()
    if reason:
        unavailable(reason)
    with private_postgres.private_postgres() as pg:
        url = pg.create_database("liza_faults")
        django_run(url, "import django; django.setup(); "
                        "from django.core.management import call_command; "
                        "call_command('migrate', verbosity=0)")  # fmt: skip
        pg.keys = json.loads(django_run(url, SEED).splitlines()[-1])
        pg.key = pg.keys["coder-1"]
        pg.database_url = url
        yield pg
