"""The agent row, written by every heartbeat, keeps 20 % of each page free so the update can be
HOT on PostgreSQL (boards 0007_heartbeat_hot says why)."""

from django.db import migrations


def set_fillfactor(value: int):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE agents_agent SET (fillfactor = {value})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("agents", "0003_idempotency")]

    operations = [migrations.RunPython(set_fillfactor(80), set_fillfactor(100))]
