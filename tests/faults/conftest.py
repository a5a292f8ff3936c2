"""The fault tests' private PostgreSQL, migrated and seeded (tests/faults/support.py)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from liza_site import embedded_db
from tests import private_postgres
from tests.ci import unavailable
from tests.faults.support import SEED, django_run
from tests.template_db import migrations_hash

MIGRATED = "migrated"  # the file a complete cluster's folder holds beside its data


@pytest.fixture(scope="session")
def migrated_cluster() -> Path:
    """A private cluster's data directory with `liza_faults` migrated, stopped cleanly: each
    test's server starts from a copy of it (a migration costs ten seconds and more; the copy
    well under one). Made once per set of migrations and server binaries, by the first test
    process that needs it, under a file lock, and kept in the temporary folder: the other xdist
    workers (and later runs) copy the same one instead of each migrating a cluster of its own,
    as their test databases come from one migrated template (tests/template_db.py)."""
    reason = private_postgres.available()
    if reason:
        unavailable(reason)
    binaries = str(embedded_db.server_binaries())
    key = hashlib.sha256(f"{migrations_hash()} {binaries} {os.geteuid()}".encode()).hexdigest()
    home = Path(tempfile.gettempdir()) / f"liza-faults-cluster-{key[:12]}"
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one migrates, the others wait for its cluster
        if (home / MIGRATED).is_file():
            return home / "data"
        shutil.rmtree(home, ignore_errors=True)  # an interrupted build
        home.mkdir(mode=0o755)
        with private_postgres.private_postgres() as pg:
            url = pg.create_database("liza_faults")
            django_run(url, "import django; django.setup(); "
                            "from django.core.management import call_command; "
                            "call_command('migrate', verbosity=0)")  # fmt: skip
            pg.stop("fast")
            pg.data.rename(home / "data")  # its owner and modes kept, as the server checks them
        (home / MIGRATED).write_text("")
    return home / "data"


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
