"""Make the event log and the spec history append-only in the database itself (SPEC §4.1).

The ORM already refuses updates and deletes (boards.models.AppendOnlyModel); these triggers
also stop raw SQL, the admin's bulk actions and cascades. TRUNCATE is left alone so that a test
database can still be emptied.
"""

from django.db import migrations

TABLES = ("boards_event", "boards_specchange")


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            """
            CREATE OR REPLACE FUNCTION liza_append_only() RETURNS trigger AS $$
            BEGIN
                RAISE EXCEPTION USING
                    MESSAGE = TG_TABLE_NAME || ' rows are append-only',
                    ERRCODE = 'restrict_violation';
            END;
            $$ LANGUAGE plpgsql;
            """
        )
        for table in TABLES:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION liza_append_only();"
            )
    elif vendor == "sqlite":
        for table in TABLES:
            for op in ("UPDATE", "DELETE"):
                schema_editor.execute(
                    f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} rows are append-only'); END;"
                )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};")
        schema_editor.execute("DROP FUNCTION IF EXISTS liza_append_only();")
    elif vendor == "sqlite":
        for table in TABLES:
            for op in ("update", "delete"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_{op};")


class Migration(migrations.Migration):
    dependencies = [("boards", "0001_initial")]
    operations = [migrations.RunPython(create_triggers, drop_triggers)]
