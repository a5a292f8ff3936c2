"""A run's usage and an agent's quota pause."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from agents.models import (
    Agent,
    Run,
    RunUsage,
)
from agents.services.runs import redact_output
from boards.coordination import outbox
from boards.coordination.models.projects import Project
from boards.coordination.selectors.budgets import usage_attribution
from boards.coordination.services.actors import ANY_AGENT
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import agents_only, require_role
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.locking import lock_agent
from boards.errors import (
    Conflict,
    Forbidden,
    ProtocolValidationError,
)
from boards.protocol import (
    Action,
    format_timestamp,
)

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@agents_only
@records_refusals
def usage_record(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    usage: list[dict[str, Any]],
    run: int | None = None,
) -> list[RunUsage]:
    """A run's usage so far, per model (issue 24): posted by its supervisor (parsed from the
    CLI's output) or by the agent itself (`liza usage`). `run`: the run's id, else the agent's
    running run. Each entry is a running total for the run: a row keeps, field by field, the
    larger of what it had and what came, so a retried or repeated report counts once and a
    supervisor and its agent reporting the same session do not add up. Input is validated by
    `inputs.UsageInput` (bounds in `protocol`); the entries' models are unique."""
    attempt = Attempt(project, agent, "usage_record", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    models = [entry.get("model", "") for entry in usage]
    if len(set(models)) != len(models):
        raise ProtocolValidationError("usage", "one entry per model")
    with transaction.atomic():
        rows_of = Run.objects.select_for_update(of=("self",)).select_related("task")
        if run is not None:
            found = rows_of.filter(project=project, pk=run).first()
            if found is None:
                raise ProtocolValidationError("run", f"no run {run} in this project")
            if found.agent_id != agent.pk:
                raise attempt.refuse(Forbidden(f"run {run} is not {agent.agent_id}'s"))
        else:
            found = (
                rows_of.filter(project=project, agent=agent, ended__isnull=True)
                .order_by("-started", "-id")
                .first()
            )
            if found is None:
                raise Conflict(
                    f"{agent.agent_id} has no running run: usage is recorded per run "
                    "(`liza supervise` starts them)",
                    {"agent": agent.agent_id},
                )
        attributed = None
        recorded = []
        for entry in usage:
            row = RunUsage.objects.filter(run=found, model=entry.get("model", "")).first()
            if row is None:
                attributed = attributed or usage_attribution(project=project, task=found.task)
                row = RunUsage(
                    project=project,
                    run=found,
                    agent=agent,
                    model=entry.get("model", ""),
                    recorded_at=now,
                    **attributed,
                )
            for name in USAGE_FIELDS:
                setattr(row, name, max(getattr(row, name), int(entry.get(name) or 0)))
            row.cost_usd = max(row.cost_usd, Decimal(str(entry.get("cost_usd") or 0)))
            row.save()
            recorded.append(row)
        if found.task_id is not None:  # its card and drawer show the cost
            outbox.changed(project.pk, outbox.TASK, found.task_id)
    return recorded


QUOTA_PAUSE_MAX = timedelta(days=7)


@agents_only
@records_refusals
def agent_quota_pause(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    until: datetime,
    provider: str,
    message: str = "",
) -> Agent:
    """Its supervisor met the provider's quota or rate-limit wall (issue 24): it spawns nothing
    before `until`. Recorded on the agent (the board says "quota: resumes at HH:MM", the watcher
    raises a QUOTA alert while it stands) and in the log."""
    attempt = Attempt(project, agent, "agent_quota_pause", now)
    require_role(attempt, agent_roles=ANY_AGENT)
    provider = clean_text(provider, "provider", max_length=64)
    message = redact_output(clean_text(message, "message", required=False, max_length=300))
    if until <= now or until > now + QUOTA_PAUSE_MAX:
        raise ProtocolValidationError("until", "a time in the future, at most 7 days ahead")
    with transaction.atomic():
        agent = lock_agent(agent)
        agent.quota_until, agent.quota_provider, agent.quota_message = until, provider, message
        agent.save(update_fields=["quota_until", "quota_provider", "quota_message"])
        attempt.record(
            action=Action.QUOTA_PAUSED,
            detail=f"{agent.agent_id}: {provider}'s quota wall; no spawn before "
            f"{format_timestamp(until)}" + (f" ({message})" if message else ""),
            data={"until": format_timestamp(until), "provider": provider},
        )
    return agent
