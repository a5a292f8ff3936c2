"""`Agent.left_at`: when the agent's session ended (`agent_leave`), cleared by its next
registration; its heartbeat is refused meanwhile (`liza_heartbeat_v2`, boards migration 0034).

Agents that left before this migration are marked from the log: those whose last applied
registration event (`registered`, `restarted`) or departure (`deregistered`) is a departure,
at that event's time — what `agent_leave` and `agent_register` would have written.
"""

from django.db import migrations, models

BACKFILL = """
UPDATE agents_agent a SET left_at = last.timestamp
FROM (
    SELECT DISTINCT ON (project_id, actor_id) project_id, actor_id, action, timestamp
    FROM boards_event
    WHERE actor_kind = 'agent' AND outcome = 'applied'
      AND action IN ('registered', 'restarted', 'deregistered')
    ORDER BY project_id, actor_id, timestamp DESC, id DESC
) last
WHERE last.project_id = a.project_id AND last.actor_id = a.agent_id
  AND last.action = 'deregistered';
"""


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0009_budgets_usage"),
        ("boards", "0033_review_claim_checks_sql"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="left_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
