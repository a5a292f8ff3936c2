"""Runs: each spawn of `liza supervise` (issue 12 §2), their output and its trimming."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.db import transaction

from agents.models import (
    Agent,
    Run,
    RunState,
    run_outcome,
)
from agents.selectors import run_made_progress
from boards.coordination import outbox
from boards.coordination.models.projects import Project
from boards.coordination.services.actors import ANY_AGENT
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import agents_only, require_role
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.cleaning import clean_text, resolve_key
from boards.coordination.services.tasks.stalls import task_stalled
from boards.errors import (
    Conflict,
    Forbidden,
    ProtocolValidationError,
)
from boards.protocol import (
    Action,
)

# -- runs: each spawn of `liza supervise` (issue 12 §2) -------------------------------------------

RUN_OUTPUT_LINES = 200
RUN_OUTPUT_CHARS = 64_000
# A streamed chunk (`run_output_append`): what one request may add (the supervisor sends at
# most one a second per run, and cuts what it prints beyond that rate).
RUN_CHUNK_CHARS = 16_000
# An agent key as boards issue them (liza_<12 hex>_<secret>): never stored, whoever printed it.
_KEY_SHAPE = re.compile(r"liza_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


def redact_output(text: str) -> str:
    """The last RUN_OUTPUT_LINES lines of an agent's output, agent keys hidden (the supervisor
    hides the key and LIZA_* secrets it knows; this catches any key-shaped string)."""
    text = text.replace("\x00", "")
    lines = _KEY_SHAPE.sub("[redacted]", text).splitlines()[-RUN_OUTPUT_LINES:]
    return "\n".join(lines)[-RUN_OUTPUT_CHARS:]


@agents_only
@records_refusals
def run_start(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    task: str | None = None,
    restart_reason: str = "",
    command: str = "",
) -> Run:
    """A supervisor spawned its agent command (on `task`, a key of this project, or none)."""
    require_role(Attempt(project, agent, "run_start", now), agent_roles=ANY_AGENT)
    restart_reason = clean_text(restart_reason, "restart_reason", required=False, max_length=100)
    command = redact_output(clean_text(command, "command", required=False, max_length=500))
    row = resolve_key(project, task, "task")
    # Issue 24: a spent budget refuses the spawn before it spends anything.
    refuse_if_over_budget(project, agent=agent, action="run_start", now=now, task=row)
    with transaction.atomic():
        run = Run.objects.create(
            project=project,
            agent=agent,
            task=row,
            started=now,
            restart_reason=restart_reason,
            command=command,
        )
        if row is not None:  # its card says "agent running" (issue 24)
            outbox.changed(project.pk, outbox.TASK, row.pk)
        return run


def _require_own_run(attempt: Attempt, run: Run) -> None:
    """Only the run's own agent reports on it; another's refusal is logged as its attempt."""
    require_role(attempt, agent_roles=ANY_AGENT)
    agent = attempt.actor
    if run.agent_id != agent.pk:
        raise attempt.refuse(
            Forbidden(f"run {run.pk} is {run.agent.agent_id}'s, not {agent.agent_id}'s")
        )


def _lock_running(run: Run) -> Run:
    """The run's row, locked, while it still runs: an ended run takes no more reports (409)."""
    run = Run.objects.select_for_update().get(pk=run.pk)
    if run.ended is not None:
        raise Conflict(f"run {run.pk} already ended", {"run": run.pk})
    return run


@agents_only
@records_refusals
def run_finish(
    *,
    run: Run,
    agent: Agent,
    now: datetime,
    exit_code: int,
    stopped_by: str = "",
    output: str = "",
) -> Run:
    """The spawn ended: its exit code, whether the supervisor stopped it, its last lines. A
    crash (neither 0 nor 42, not stopped) is logged for the board and the watcher."""
    project = run.project
    _require_own_run(Attempt(project, agent, "run_finish", now), run)
    stopped_by = clean_text(stopped_by, "stopped_by", required=False, max_length=100)
    with transaction.atomic():
        run = _lock_running(run)
        run.ended = now
        run.exit_code = exit_code
        run.stopped_by = stopped_by
        run.progress = run_made_progress(run=run, now=now)
        run.state, run.reason = run_outcome(exit_code, stopped_by, run.progress)
        if output or not run.output:  # a streamed run's output is already here
            run.output = redact_output(output)
        run.save(
            update_fields=[
                "ended",
                "exit_code",
                "stopped_by",
                "output",
                "progress",
                "state",
                "reason",
            ]
        )
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        if run.task_id is not None:
            outbox.changed(project.pk, outbox.TASK, run.task_id)
        if run.state == RunState.STALLED and run.task is not None:
            task_stalled(task=run.task, agent=agent, run_id=run.pk, now=now)
        if run.crashed:
            record_event(
                project=project,
                actor=agent,
                action=Action.AGENT_CRASHED,
                task=run.task,
                now=now,
                detail=f"{agent.agent_id}'s agent exited {exit_code}"
                + (f" on {run.task.key}" if run.task else ""),
                data={"run": run.pk, "exit_code": exit_code},
            )
    return run


@agents_only
@records_refusals
def run_output_append(*, run: Run, agent: Agent, now: datetime, text: str) -> Run:
    """A running run's next lines, streamed by its supervisor (issue 24): appended, key-shaped
    strings redacted, the whole kept to its last RUN_OUTPUT_LINES lines; open drawers of the
    project see it live (the run's task changes). Only the run's own agent, only while it runs."""
    project = run.project
    _require_own_run(Attempt(project, agent, "run_output_append", now), run)
    if not isinstance(text, str) or len(text) > RUN_CHUNK_CHARS:
        raise ProtocolValidationError("text", f"text of at most {RUN_CHUNK_CHARS} characters")
    with transaction.atomic():
        run = _lock_running(run)
        run.output = redact_output(run.output + ("\n" if run.output else "") + text)
        run.last_output_at = now
        run.save(update_fields=["output", "last_output_at"])
        outbox.run_output(project.pk, run.pk)
    return run


RUN_OUTPUT_DAYS = 30  # LIZA_RUN_OUTPUT_DAYS: how long an ended run keeps its output


def runs_output_trim(*, now: datetime, days: int) -> int:
    """Old output trimmed by age (issue 24; by size it is at every write, `redact_output`): the
    output of runs that ended more than `days` ago is emptied, the run itself (state, reason,
    duration) kept. Returns how many runs lost their output."""
    return (
        Run.objects.filter(ended__lt=now - timedelta(days=days))
        .exclude(output="")
        .update(output="")
    )
