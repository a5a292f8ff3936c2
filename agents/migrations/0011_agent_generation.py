"""`Agent.generation`: the number of the agent's current registration, one more at every
`agent_register`, so a process of a superseded session is told from the live one (it carries
its registration's number in `Liza-Generation`; boards migration 0035's `liza_heartbeat_v3`,
the claims and `agent_leave` refuse an older one).

Existing rows start at their registration count, read from the log — the applied `registered`
and `restarted` events of the id — so the number means the same for every row: the id's
registrations so far (0 for an agent an admin created that never registered). No client of
the previous release holds a generation (it sends no header), so no running process is
refused by the number it starts at.
"""

from django.db import migrations, models

BACKFILL = """
UPDATE agents_agent a SET generation = counted.registrations
FROM (
    SELECT project_id, actor_id, count(*) AS registrations
    FROM boards_event
    WHERE actor_kind = 'agent' AND outcome = 'applied' AND action IN ('registered', 'restarted')
    GROUP BY project_id, actor_id
) counted
WHERE counted.project_id = a.project_id AND counted.actor_id = a.agent_id;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0010_agent_left_at"),
        ("boards", "0034_heartbeat_left_sql"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="generation",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
