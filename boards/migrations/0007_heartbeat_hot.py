"""Heartbeats become HOT updates on PostgreSQL (issue #14).

`Task.lease_expires` loses its index (a heartbeat writes it) and the tables a heartbeat updates
keep 20 % of each page free, so the new row version fits on the same page. Only new pages
honour a fillfactor: existing data gets it at the next table rewrite (VACUUM FULL / pg_repack),
which an operator may run when convenient; nothing here rewrites a table under a lock.
"""

from django.db import migrations, models

TABLES = ("boards_task", "boards_review")


def set_fillfactor(value: int):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return  # SQLite (the embedded default) has no fillfactor
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {value})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("boards", "0006_watch")]

    operations = [
        migrations.AlterField(
            model_name="task",
            name="lease_expires",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(set_fillfactor(80), set_fillfactor(100)),
    ]
