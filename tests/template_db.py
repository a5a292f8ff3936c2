"""One migrated template database per set of migrations, that every xdist worker's test
database is copied from (`CREATE DATABASE … TEMPLATE`) instead of migrating its own.

Migrating an empty database (62 migrations) costs each worker ~13-20 s of CPU, mostly Django
rendering model states; copying a migrated one costs ~0.4 s. The first worker migrates the
template (under a file lock, in a `manage.py migrate` of its own, exactly as a worker would);
the others wait for it and copy it. Django still runs `migrate` on each copy: everything is
applied already, so it only checks. The template's name carries a hash of every migration
file, so a changed migration gets a new template (and the old ones are dropped).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIGRATED = "liza test template: migrated"  # the template's comment once it is complete


def migrations_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/**/migrations/*.py")):
        if ".venv" in path.parts or "node_modules" in path.parts:
            continue
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def migrated_template(settings_dict: Mapping[str, Any]) -> str:
    """The name of a migrated template for the database of `settings_dict` (made if needed)."""
    import psycopg
    from psycopg import sql

    from tests.live_server import database_url, sibling_database_url

    url = database_url(settings_dict)
    prefix = f"test_{settings_dict['NAME']}_tpl_"
    name = prefix + migrations_hash()
    lock_path = Path(tempfile.gettempdir()) / f"{name}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one migrates, the others wait for its template
        with psycopg.connect(sibling_database_url(url, "postgres"), autocommit=True) as admin:
            comment = admin.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
                [name],
            ).fetchone()
            if comment is not None and comment[0] == MIGRATED:
                return name
            stale = admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [prefix + "%"]
            ).fetchall()
            for (old,) in stale:  # an interrupted migration, or older migrations
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(old)))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
                cwd=ROOT,
                env={
                    **os.environ,
                    "DATABASE_URL": sibling_database_url(url, name),
                    "DJANGO_SETTINGS_MODULE": "tests.settings",
                },
                check=True,
                timeout=600,
            )
            admin.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                    sql.Identifier(name), sql.Literal(MIGRATED)
                )
            )
    return name
