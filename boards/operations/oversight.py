"""Records (agents', and members' for what humans may record) and human oversight of tasks."""

from __future__ import annotations

from boards.coordination.services import (
    records,
    reviews,
    tasks,
)
from boards.operations import inputs as i
from boards.operations.base import (
    ALERT,
    BREAKER,
    DISCOVERY,
    PROJECT,
    TASK,
    Operation,
    rename,
)
from boards.watch.services import breaker, watch

OVERSIGHT: list[Operation] = [
    # -- records (agents, and members for what humans may record) ---------------------------
    Operation(
        "discovery_create",
        records.discovery_create,
        PROJECT,
    ),
    Operation(
        "anomaly_create",
        records.anomaly_create,
        PROJECT,
        i.AnomalyInput,
        arguments=rename(type="anomaly_type"),
    ),
    Operation("activity_log", records.activity_log, PROJECT, i.LogInput),
    Operation(
        "human_note_create",
        records.human_note_create,
        PROJECT,
        done=lambda n: f"Note added to {n.task.key}." if n.task else "Note added.",
    ),
    Operation(
        "discovery_triage",
        records.discovery_triage,
        DISCOVERY,
        i.TriageInput,
        done=lambda d: (
            f"{d.disc_id} converted into the DRAFT task {d.converted_to_task}."
            if d.converted_to_task
            else f"{d.disc_id} {d.triage}."
        ),
    ),
    Operation(
        "alert_acknowledge",
        watch.alert_acknowledge,
        ALERT,
        done=lambda a: f"Alert {a.pk} acknowledged.",
    ),
    Operation(
        "circuit_breaker_resolve",
        breaker.circuit_breaker_resolve,
        BREAKER,
        done=lambda b: "Circuit breaker resolved; continue the sprint when ready.",
    ),
    # -- human oversight of tasks (project admins) ---------------------------------------
    Operation(
        "task_override_block",
        tasks.task_override_block,
        TASK,
        done=lambda t: f"{t.key} blocked by override.",
    ),
    Operation(
        "task_release_claim",
        tasks.task_release_claim,
        TASK,
        done=lambda t: f"Claim on {t.key} released ({t.status}).",
    ),
    Operation(
        "task_cancel",
        tasks.task_cancel,
        TASK,
        done=lambda t: f"{t.key} cancelled ({t.status}).",
    ),
    Operation(
        "task_suspend",
        tasks.task_suspend,
        TASK,
        done=lambda t: f"{t.key} suspended.",
    ),
    Operation("task_resume", tasks.task_resume, TASK, done=lambda t: f"{t.key} resumed."),
    Operation(
        "task_human_approve",
        reviews.task_human_approve,
        TASK,
        done=lambda t: f"{t.key} approved for merge by a human.",
    ),
    Operation(
        "task_human_reject",
        reviews.task_human_reject,
        TASK,
        done=lambda t: f"{t.key} rejected by a human ({t.status}).",
    ),
    Operation(
        "task_set_limits",
        tasks.task_set_limits,
        TASK,
        done=lambda t: f"{t.key}: limits updated.",
    ),
]
