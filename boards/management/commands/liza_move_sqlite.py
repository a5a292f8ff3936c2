"""manage.py liza_move_sqlite [--path var/liza.sqlite3]

Until this release the embedded default kept its data in SQLite (`var/liza.sqlite3`). The
embedded default is now a PostgreSQL cluster (liza_site/embedded_db.py), and `.ci/serve` calls
this command before `migrate` on every start. The first time it finds the old file it moves every
row into the PostgreSQL database, which must hold no projects and no users yet:

1. the PostgreSQL database is migrated to exactly the migrations the old file has (so a file of
   any earlier release works, and no later, PostgreSQL-only migration ever runs on SQLite);
2. every table is copied with its primary keys in one transaction (foreign keys are checked at
   its commit, identity sequences continue after the highest id), each table's row count read
   back from both sides before the commit: any difference rolls everything back;
3. the database is migrated to this release and the validator (`liza_validate`) runs on every
   project; what it finds is printed (it was so in SQLite: the move copies, it does not repair).

Only then is the old file renamed `liza.sqlite3.moved` (kept, never deleted: remove it yourself
once you are content). Without an old file, or once moved, the command does nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

CHUNK = 2000


class Command(BaseCommand):
    help = "Move the old embedded SQLite database (var/liza.sqlite3) into PostgreSQL, verified."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--path", type=Path, default=Path(settings.VAR_DIR) / "liza.sqlite3")

    def handle(self, *args, path: Path, **options) -> None:
        if not path.is_file():
            return
        self.stdout.write(f"Moving the SQLite database {path} into PostgreSQL...")
        old = sqlite3.connect(path)
        try:
            # The old default ran in WAL mode: what sits in -wal goes into the file first, so
            # the file kept afterwards holds everything on its own.
            old.execute("PRAGMA journal_mode=DELETE")
            applied = old.execute("SELECT app, name FROM django_migrations").fetchall()
            self._migrate_to(set(applied))
            with transaction.atomic():
                counts = self._copy_tables(old)
        except sqlite3.DatabaseError as exc:
            raise CommandError(f"{path} is not a Liza Board database: {exc}") from exc
        finally:
            old.close()
        call_command("migrate", verbosity=0, interactive=False)
        self._validate()
        moved = path.with_name(path.name + ".moved")
        path.rename(moved)
        self.stdout.write(
            f"Moved {sum(counts.values())} rows in {len(counts)} tables (row counts checked); "
            f"the old file is kept as {moved} (delete it when you no longer need it)."
        )

    def _migrate_to(self, applied: set[tuple[str, str]]) -> None:
        """The PostgreSQL schema of the old file: its leaf migrations, applied here."""
        executor = MigrationExecutor(connection)
        done_here = executor.loader.applied_migrations
        if done_here and not set(done_here) <= applied:
            raise CommandError(
                "the PostgreSQL database is already migrated beyond the old SQLite file: "
                "nothing was moved (move one of them aside and start again)"
            )
        graph = executor.loader.graph
        unknown = applied - set(graph.nodes)
        if unknown:
            raise CommandError(f"the old file has migrations this release does not know: {unknown}")
        targets = [node for node in applied if not (graph.node_map[node].children & applied)]
        executor.migrate(targets)

    def _copy_tables(self, old: sqlite3.Connection) -> dict[str, int]:
        from django.contrib.auth import get_user_model

        from boards.coordination.models.projects import Project

        if Project.objects.exists() or get_user_model().objects.exists():
            raise CommandError(
                "the PostgreSQL database already holds projects or users: nothing was moved "
                "(move one of them aside and start again)"
            )
        tables = [
            name
            for (name,) in old.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name != 'django_migrations' ORDER BY name"
            )
        ]
        quote = connection.ops.quote_name
        counts = {}
        with connection.cursor() as cursor:
            # What the migrations wrote (content types, permissions) gives way to the old
            # file's rows, whose ids the other old rows refer to.
            cursor.execute(f"TRUNCATE {', '.join(quote(t) for t in tables)} CASCADE")
            for table in tables:
                types = _column_types(cursor, table)
                columns = [row[1] for row in old.execute(f"PRAGMA table_info({quote(table)})")]
                missing = [c for c in columns if c not in types]
                if missing:
                    raise CommandError(f"{table}: columns {missing} have no place in PostgreSQL")
                sql = (
                    f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
                    f"VALUES ({', '.join(_placeholder(types[c]) for c in columns)})"
                )
                listed = ", ".join(quote(c) for c in columns)
                rows = old.execute(f"SELECT {listed} FROM {quote(table)}")
                while chunk := rows.fetchmany(CHUNK):
                    cursor.executemany(
                        sql,
                        [
                            [_value(v, types[c]) for c, v in zip(columns, row, strict=True)]
                            for row in chunk
                        ],
                    )
                (there,) = old.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()
                cursor.execute(f"SELECT count(*) FROM {quote(table)}")
                (here,) = cursor.fetchone()
                if here != there:
                    raise CommandError(
                        f"{table}: {there} rows in SQLite, {here} copied; nothing was moved"
                    )
                counts[table] = here
                if "id" in types:
                    cursor.execute(
                        "SELECT setval(pg_get_serial_sequence(%s, 'id'), coalesce(max(id), 1),"
                        f" max(id) IS NOT NULL) FROM {quote(table)}"
                        " WHERE pg_get_serial_sequence(%s, 'id') IS NOT NULL",
                        [table, table],
                    )
        return counts

    def _validate(self) -> None:
        from boards.coordination.models.projects import Project
        from boards.interop.exporting import project_violations

        for project in Project.objects.order_by("slug"):
            violations, _ = project_violations(project, now=None)
            for violation in violations:
                self.stderr.write(f"{project.slug}: INVALID: {violation} (as it was in SQLite)")


def _column_types(cursor, table: str) -> dict[str, str]:
    cursor.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        [table],
    )
    return dict(cursor.fetchall())


def _placeholder(pg_type: str) -> str:
    # Values go as text and PostgreSQL parses them with its own input functions: SQLite's
    # 0/1 booleans, its timestamp and JSON text. bytea goes as bytes.
    return "%s" if pg_type == "bytea" else f"%s::{pg_type}"


def _value(value, pg_type: str):
    if value is None or pg_type == "bytea":
        return value
    if pg_type == "interval" and isinstance(value, int):
        return f"{value} microseconds"  # Django's DurationField on SQLite: microseconds
    return str(value)
