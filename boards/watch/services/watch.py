"""The watcher's sweep of one project (SPEC §9, the original's liza-watch.sh): what time alone
makes due — dead leases, stale review claims, a passed sprint deadline, a finished sprint — done
through the ordinary services, as the system actor.

Several watchers may run at once: a sweep holds a per-project PostgreSQL advisory lock for its
transaction and a watcher that cannot take it skips the project (another one is sweeping it);
each action re-reads its rows under the services' row locks, so what a previous sweep already
did is no longer due.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination import outbox
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.tasks import retry_exhausts
from boards.coordination.services.actors import SYSTEM, Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.locking import agent_row
from boards.coordination.services.sprints import sprint_checkpoint, sprint_complete_if_done
from boards.coordination.services.tasks.holders import (
    lock_task_and_its_agents,
    release_holder,
    release_reviewers,
)
from boards.coordination.services.tasks.limits import crash_limit_block
from boards.coordination.services.tasks.overrides import task_override_block
from boards.errors import Conflict, ProtocolError
from boards.interop.invariants import Violation
from boards.protocol import Action, SprintStatus, TaskStatus
from boards.watch.selectors.conditions import (
    alert_conditions,
    escalation_step,
    invariant_conditions,
)
from boards.watch.selectors.watch import (
    StateTimeout,
    coders_with_dead_leases,
    open_alerts,
    retry_exhausted_claims,
    sprint_past_deadline,
    stale_review_claims,
    state_timeouts,
    watcher_silent,
    watcher_silent_after,
)
from boards.watch.services.breaker import breaker_evaluate
from boards.watch.services.notifications import notifications_flush, notify_alert
from boards.watch.services.webhooks import webhook_enqueue

# First key of the two-int advisory lock: this application's namespace for watcher sweeps.
_LOCK_NAMESPACE = zlib.crc32(b"liza_watch") & 0x7FFFFFFF


@dataclass
class Sweep:
    """What one sweep did: `skipped` when another watcher held the project's lock."""

    project: str
    skipped: bool = False
    actions: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)  # alerts raised, escalated or resolved
    errors: list[str] = field(default_factory=list)


def _take_sweep_lock(project: Project) -> bool:
    """The project's sweep lock until the transaction ends; False if another watcher has it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, project.pk])
        return bool(cursor.fetchone()[0])


def watch_sweep(
    *, project: Project, now: datetime, violations: Sequence[Violation] | None = None
) -> Sweep:
    """One sweep of `project` at `now`, in one transaction holding the project's sweep lock.

    `violations`: the invariants the project breaks (`liza_files.project_violations`, which
    the watcher runs every minute, not every sweep), raised as INVALID STATE alerts; None when
    they were not checked this time, which leaves those alerts as they are."""
    sweep = Sweep(project=project.slug)
    with transaction.atomic():
        if not _take_sweep_lock(project):
            sweep.skipped = True
            return sweep
        config = config_of(project)
        steps = [
            *(
                (f"lease of {a.agent_id}", lambda a=a: _expire_coder_lease(project, a, now))
                for a in coders_with_dead_leases(project=project, now=now, config=config)
            ),
            # After the expiries above, so the crash that exhausts the retries is recorded first.
            *(
                (f"retries of {t.key}", lambda t=t: _block_retry_exhausted(project, t, now))
                for t in retry_exhausted_claims(project=project, now=now, config=config)
            ),
            *(
                (f"review claim of {r.reviewer}", lambda r=r: _release_stale_review(r, now))
                for r in stale_review_claims(project=project, now=now, config=config)
            ),
            *(
                (f"state timeout of {t.task.key}", lambda t=t: _block_timed_out(project, t, now))
                for t in state_timeouts(project=project, now=now, config=config)
                if t.over and t.action == "block"
            ),
            ("sprint completion", lambda: _complete_sprint(project, now)),
            ("sprint deadline", lambda: _deadline_checkpoint(project, now)),
            # Last: evaluated on what the sweep's actions left (issue #11 "after each sweep").
            ("circuit breaker", lambda: breaker_evaluate(project=project, now=now)),
        ]
        for what, step in steps:
            try:
                with transaction.atomic():  # a savepoint: one refused action spoils no other
                    line = step()
            except ProtocolError as exc:
                sweep.errors.append(f"{what}: {exc.message}")
                continue
            if line:
                sweep.actions.append(line)
        sweep.alerts = _sync_alerts(project, now, violations)
        # People's messages (issue 24): what is due of what the alerts above noted for them.
        if messages := notifications_flush(project=project, now=now):
            sweep.actions.append(f"notifications: {len(messages)} messages queued")
        _mark_swept(project, config, now)
    return sweep


def _mark_swept(project: Project, config: ProjectConfig, now: datetime) -> None:
    """Record the sweep for the board's "watcher last seen". A watcher back after a silence
    also makes open boards redraw their header, so their "watcher silent" warning goes away."""
    before = Project.objects.filter(pk=project.pk).values_list("last_swept", flat=True).first()
    Project.objects.filter(pk=project.pk).update(last_swept=now)
    project.last_swept = now
    if watcher_silent(last_swept=before, config=config, now=now):
        outbox.changed(project.pk, outbox.SPRINT, project.pk)
    outbox.watcher_swept(project.pk, silent_after=watcher_silent_after(config))


_LEVEL_RANK = {Alert.Level.INFO: 0, Alert.Level.WARNING: 1, Alert.Level.CRITICAL: 2}


def _sync_alerts(
    project: Project, now: datetime, violations: Sequence[Violation] | None = None
) -> list[str]:
    """One open alert per condition that holds (type, subject): raised when first seen, counted
    while it lasts, escalated when its level rises, resolved when the condition clears.

    Runs under the sweep lock, so no other watcher syncs the same project's alerts meanwhile.
    """
    lines = []
    touched: list[Alert] = []  # raised, resolved or changed level: boards redraw them
    escalate: list[tuple[Alert, str]] = []  # for the escalation webhook
    config = config_of(project)
    conditions = alert_conditions(project=project, now=now, config=config)
    if violations is not None:
        conditions += invariant_conditions(project=project, violations=violations)
    current = {(c.type, c.subject): c for c in conditions}
    already = open_alerts(project=project)
    for key, alert in already.items():
        if violations is None and alert.type == Alert.Type.INVALID_STATE:
            continue  # not checked this sweep: neither seen nor cleared
        if alert.type == Alert.Type.WEBHOOK_FAILING:
            continue  # the webhook's sender raises and resolves it (services.webhooks)
        if key not in current:
            alert.resolved_at = now
            alert.save(update_fields=["resolved_at"])
            touched.append(alert)
            lines.append(f"alert resolved: {alert.type} {alert.subject}")
    for key, condition in current.items():
        alert = already.get(key)
        if alert is None:
            alert = Alert.objects.create(
                project=project, created=now, last_seen=now, **condition.columns()
            )
            touched.append(alert)
            lines.append(f"alert {condition.level}: {condition.logged(now)}")
            if alert.level == Alert.Level.CRITICAL or alert.type == Alert.Type.STALE_CHECKPOINT:
                escalate.append((alert, "alert.raised"))
            notify_alert(project=project, alert=alert, now=now)  # who asked to hear of it
            continue
        alert.count += 1
        step = escalation_step(alert.type, alert.message)
        alert.last_seen = now
        alert.message = condition.message
        alert.since = condition.since
        if _LEVEL_RANK[condition.level] > _LEVEL_RANK[alert.level]:
            alert.level = condition.level
            alert.escalated_at = now
            touched.append(alert)
            lines.append(f"alert escalated to {condition.level}: {condition.logged(now)}")
            if alert.level == Alert.Level.CRITICAL or alert.type == Alert.Type.STALE_CHECKPOINT:
                escalate.append((alert, "alert.escalated"))
            if alert.level == Alert.Level.CRITICAL:
                notify_alert(project=project, alert=alert, now=now)
        elif escalation_step(alert.type, alert.message) > step:
            # A step at the same level (a stale checkpoint: 2 h STUCK → 8 h ABANDONED?).
            alert.escalated_at = now
            lines.append(f"alert escalated: {condition.logged(now)}")
            escalate.append((alert, "alert.escalated"))
        alert.save(
            update_fields=["count", "last_seen", "message", "since", "level", "escalated_at"]
        )
    for alert, kind in escalate:  # an outbox row each, sent by a watcher after this commits
        webhook_enqueue(project=project, config=config, alert=alert, kind=kind, now=now)
    if touched:  # the header's counts, and the cards whose badge changed
        outbox.changed(project.pk, outbox.SPRINT, project.pk)
        for alert in touched:
            if alert.task_id is not None:
                outbox.changed(project.pk, outbox.TASK, alert.task_id)
    return lines


def _expire_coder_lease(project: Project, agent: Agent, now: datetime) -> str:
    """The coder's task lease died: it no longer holds the task (its next request answers
    lease_lost, exit 42). The task keeps its status: a claim takes it over (seed 002)."""
    # The coder itself with the task's agents, before the task (the lock order), even if the
    # task names another holder by now.
    task = lock_task_and_its_agents(agent.current_task, agent)
    holder = agent_row(project, agent.agent_id)  # already locked: re-read
    config = config_of(project)
    if (
        holder is None
        or holder.current_task_id != task.pk
        or task.status != TaskStatus.CLAIMED
        or task.assigned_to != holder.agent_id
        or lease_alive(task.lease_expires, now, config)
    ):
        return ""  # it heartbeated, finished or moved on since the unlocked read
    expired = p.format_timestamp(task.lease_expires)
    _system_event(
        task,
        Action.LEASE_EXPIRED,
        now,
        f"{holder.agent_id}'s lease on {task.key} expired at {expired}; "
        "the task waits for a takeover",
        {"agent": holder.agent_id, "lease_expires": expired},
    )
    release_holder(holder, task, lost=f"lease expired at {expired}")
    return f"lease expired: {holder.agent_id} on {task.key}"


def _block_retry_exhausted(project: Project, task, now: datetime) -> str:
    """Seed 003: its coder's lease died once more than the retry schedule allows; the task is
    blocked by the system (`retry_exhausted`, or hypothesis exhaustion when that coder is the
    second in failed_by), as a claim would have done."""
    task = lock_task_and_its_agents(task)
    config = config_of(project)
    if (
        task.status != TaskStatus.CLAIMED
        or task.handoff_pending
        or not retry_exhausts(task, config)
        or lease_alive(task.lease_expires, now, config)
    ):
        return ""  # retried, taken over or blocked since the unlocked read
    holder = agent_row(project, task.assigned_to)
    limit = crash_limit_block(task, now=now, config=config)
    release_holder(holder, task, lost=f"blocked: {limit}")
    return f"blocked: {task.key} ({limit}, {task.crashes} lease expiries)"


def _block_timed_out(project: Project, timeout: StateTimeout, now: datetime) -> str:
    """Seed 003 per-state timeout with action `block`: the system override-blocks the task,
    once — a BLOCKED task is no longer in the state whose budget it overran."""
    task = lock_task_and_its_agents(timeout.task)
    if task.status != timeout.state:
        return ""  # it moved on since the unlocked read
    reason = (
        f"State timeout: {timeout.state} for {timeout.elapsed} s (budget {timeout.budget} s)"
        + (f": {timeout.reason}" if timeout.reason else "")
    )
    question = f"Why has {task.key} stayed {timeout.state} so long; what should happen?"
    task_override_block(task=task, actor=SYSTEM, reason=reason, now=now, questions=[question])
    return f"blocked: {task.key} ({reason})"


def _release_stale_review(review: Review, now: datetime) -> str:
    """A review claim whose lease died is closed, so another reviewer can claim the task."""
    task = lock_task_and_its_agents(review.task)
    review = Review.objects.select_for_update().get(pk=review.pk)
    if (
        review.closed_at is not None
        or review.verdict
        or lease_alive(review.lease_expires, now, config_of(task.project))
    ):
        return ""
    expired = p.format_timestamp(review.lease_expires)
    released = release_reviewers(
        task, now=now, lost=f"review lease expired at {expired}", reviewer=review.reviewer
    )
    if not released:
        return ""
    _system_event(
        task,
        Action.REVIEW_CLAIM_RELEASED,
        now,
        f"{review.reviewer}'s review lease on {task.key} expired at {expired}; "
        "the review can be claimed again",
        {"reviewer": review.reviewer, "lease_expires": expired},
    )
    return f"review lease expired: {review.reviewer} on {task.key}"


def _system_event(task: Task, action: str, now: datetime, detail: str, data: dict) -> None:
    """The event of what the sweep did to `task`, as the system actor."""
    done = Attempt.on(task, actor=SYSTEM, action=action, now=now)
    done.record(task=task, detail=detail, data=data)


def _complete_sprint(project: Project, now: datetime) -> str:
    sprint = sprint_complete_if_done(project=project, now=now)
    return f"sprint completed: {sprint.sprint_id}" if sprint is not None else ""


def _deadline_checkpoint(project: Project, now: datetime) -> str:
    """Seed 000: the sprint deadline passed → CHECKPOINT, once per deadline value (continuing
    needs a new future deadline or none: `sprint_resume`)."""
    sprint = sprint_past_deadline(project=project, now=now)
    if sprint is None:
        return ""
    locked = Sprint.objects.select_for_update().get(pk=sprint.pk)
    if (
        locked.status != SprintStatus.IN_PROGRESS
        or locked.deadline is None
        or locked.deadline > now
    ):
        return ""
    deadline = p.format_timestamp(locked.deadline)
    sprint_checkpoint(
        sprint=locked, actor=SYSTEM, reason=f"sprint deadline {deadline} passed", now=now
    )
    return f"sprint checkpoint: {locked.sprint_id} deadline {deadline} passed"


@people(ADMIN)
@records_refusals
def alert_acknowledge(*, alert: Alert, actor: Actor, now: datetime) -> Alert:
    """A project admin says they have seen the alert; it stays open until its condition
    clears (the watcher resolves it), but it no longer asks for attention."""
    project = alert.project
    require_role(Attempt(project, actor, "alert_acknowledge", now), agent_roles=())
    acknowledged = Attempt(project, actor, Action.ALERT_ACKNOWLEDGED, now)  # refused or recorded
    with transaction.atomic():
        alert = Alert.objects.select_for_update().get(pk=alert.pk)
        if alert.acknowledged_at is not None:
            raise acknowledged.refuse(
                Conflict(
                    f"alert {alert.pk} was already acknowledged",
                    {
                        "alert": alert.pk,
                        "acknowledged_at": p.format_timestamp(alert.acknowledged_at),
                    },
                )
            )
        alert.acknowledged_by = actor
        alert.acknowledged_at = now
        alert.save(update_fields=["acknowledged_by", "acknowledged_at"])
        acknowledged.record(
            task=alert.task,
            detail=f"alert {alert.pk} acknowledged: {alert.message}",
            data={"alert": alert.pk, "type": alert.type, "subject": alert.subject},
        )
    return alert
