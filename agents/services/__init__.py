"""Every write about agents (STYLE.md services), one module per part of an agent's life:

- `identities`: created (with a key), enabled or disabled, available or overloaded;
- `keys`: issued, used, revoked, labelled;
- `heartbeats`: registering a session, the heartbeat and its leases, leaving;
- `handoffs`: a claim handed to a successor session, and its pickup;
- `runs`: each spawn of `liza supervise`, its output;
- `usage`: a run's usage, a quota pause;
- `idempotency`: the Idempotency-Key records.

The operations are re-exported here: `from agents.services import agent_heartbeat`.
"""

from agents.services.handoffs import (
    agent_handoff,
    agent_handoff_pickup,
)
from agents.services.heartbeats import (
    HeartbeatResult,
    agent_heartbeat,
    agent_leave,
    agent_register,
    progress_stale,
)
from agents.services.idempotency import (
    IDEMPOTENCY_TTL,
    idempotent_request_abandon,
    idempotent_request_begin,
    idempotent_request_finish,
    idempotent_requests_purge,
)
from agents.services.identities import (
    AVAILABILITY_CHOICES,
    agent_create,
    agent_create_with_key,
    agent_set_availability,
    agent_set_enabled,
    agent_set_security_reviewer,
)
from agents.services.keys import (
    LAST_USED_RESOLUTION,
    agent_key_issue,
    agent_key_label,
    agent_key_revoke,
    agent_key_used,
    agent_ready,
)
from agents.services.runs import (
    RUN_CHUNK_CHARS,
    RUN_OUTPUT_CHARS,
    RUN_OUTPUT_DAYS,
    RUN_OUTPUT_LINES,
    redact_output,
    run_finish,
    run_output_append,
    run_start,
    runs_output_trim,
)
from agents.services.usage import (
    QUOTA_PAUSE_MAX,
    USAGE_FIELDS,
    agent_quota_pause,
    usage_record,
)

__all__ = [
    "AVAILABILITY_CHOICES",
    "IDEMPOTENCY_TTL",
    "LAST_USED_RESOLUTION",
    "QUOTA_PAUSE_MAX",
    "RUN_CHUNK_CHARS",
    "RUN_OUTPUT_CHARS",
    "RUN_OUTPUT_DAYS",
    "RUN_OUTPUT_LINES",
    "USAGE_FIELDS",
    "HeartbeatResult",
    "agent_create",
    "agent_create_with_key",
    "agent_handoff",
    "agent_handoff_pickup",
    "agent_heartbeat",
    "agent_key_issue",
    "agent_key_label",
    "agent_key_revoke",
    "agent_key_used",
    "agent_leave",
    "agent_quota_pause",
    "agent_ready",
    "agent_register",
    "agent_set_availability",
    "agent_set_enabled",
    "agent_set_security_reviewer",
    "idempotent_request_abandon",
    "idempotent_request_begin",
    "idempotent_request_finish",
    "idempotent_requests_purge",
    "progress_stale",
    "redact_output",
    "run_finish",
    "run_output_append",
    "run_start",
    "runs_output_trim",
    "usage_record",
]
