"""Reads (STYLE.md selectors): every query takes the project, so none can cross tenants."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet, Sum
from django.http import Http404

from boards import protocol as p
from boards.models import Event, Project, Sprint, Task

IN_PROGRESS_STATES = ("CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED", "INTEGRATION_FAILED")


def project_get(*, slug: str) -> Project:
    project = Project.objects.select_related("config").filter(slug=slug).first()
    if project is None:
        raise Http404("No such project.")
    return project


def task_get(*, project: Project, key: str) -> Task:
    """The task `key` of `project`; another project's task is as missing as a non-existent one."""
    task = Task.objects.filter(project=project, key=key).select_related("project").first()
    if task is None:
        raise Http404("No such task.")
    return task


def task_list(*, project: Project) -> QuerySet[Task]:
    return Task.objects.filter(project=project)


def task_history(*, task: Task) -> QuerySet[Event]:
    return Event.objects.filter(project_id=task.project_id, task=task).order_by("timestamp", "id")


def sprint_open(*, project: Project) -> Sprint | None:
    return Sprint.objects.filter(project=project, status__in=["IN_PROGRESS", "CHECKPOINT"]).first()


def sprint_metrics(sprint: Sprint) -> dict[str, object]:
    """Seed 002 `sprint.metrics`, computed over the sprint's planned tasks.

    Seed 002's example fixes the reading: with task-1 MERGED and task-4 SUPERSEDED it counts
    tasks_done 2 (terminal), task-2 REJECTED is "in progress", and the stretch task-6 is not
    among tasks_blocked.
    """
    planned = Task.objects.filter(planned_in=sprint)
    counts = planned.aggregate(
        tasks_done=Count("id", filter=Q(status__in=p.TERMINAL_TASK_STATES)),
        tasks_in_progress=Count("id", filter=Q(status__in=IN_PROGRESS_STATES)),
        tasks_blocked=Count("id", filter=Q(status="BLOCKED")),
        iterations_total=Sum("iteration", default=0),
        review_cycles_total=Sum("review_cycles_total", default=0),
    )
    events = Event.objects.filter(
        project_id=sprint.project_id, task__in=planned, outcome=Event.Outcome.APPLIED
    )
    if sprint.started:
        events = events.filter(timestamp__gte=sprint.started)
    verdicts = events.aggregate(
        approvals=Count("id", filter=Q(action="approved")),
        rejections=Count("id", filter=Q(action="rejected")),
        submitted=Count("id", filter=Q(action="ready_for_review")),
    )
    approvals, rejections = verdicts["approvals"], verdicts["rejections"]
    verdict_count = approvals + rejections
    approval_rate = round(100 * approvals / verdict_count) if verdict_count else None
    submitted = verdicts["submitted"]
    return {
        **counts,
        "review_verdict_approvals": approvals,
        "review_verdict_rejections": rejections,
        "review_verdict_count": verdict_count,
        "review_verdict_approval_rate_percent": approval_rate,
        "task_submitted_for_review_count": submitted,
        "task_outcome_approval_rate_percent": (
            round(100 * approvals / submitted) if submitted else None
        ),
        # SPEC §9: rubber-stamping warning above 95 % approvals over at least 5 verdicts.
        "rubber_stamp_warning": bool(
            approval_rate is not None and verdict_count >= 5 and approval_rate > 95
        ),
    }


def work_for_role(*, project: Project, role: str, agent_id: str | None, now) -> dict[str, object]:
    """Seed 000 "Exit Code 0 Semantics" and "DRAFT Task Waiting" for one role.

    `exit` is 0 when the role is complete, 42 when the agent must stop (paused project or
    sprint at CHECKPOINT), None while work may still come; `retry_after` says when to ask again.
    """
    from boards.services.common import config_of, open_sprint

    config = config_of(project)
    tasks = Task.objects.filter(project=project)
    drafts = tasks.filter(status="DRAFT").count()
    result = {
        "role": role,
        "work": False,
        "exit": None,
        "waiting_for_drafts": drafts,
        "retry_after": None,
        "reason": "",
    }
    sprint = open_sprint(project)
    if project.is_paused or (sprint is not None and sprint.status == "CHECKPOINT"):
        stop = "paused" if project.is_paused else "checkpoint"
        return {**result, "exit": 42, "reason": f"project {stop}: stop and restart later"}
    if role == "coder":
        from boards.services.tasks import claim_candidates

        own = tasks.filter(assigned_to=agent_id or "", status__in=("CLAIMED",)).exists()
        candidates = claim_candidates(project, agent_id or "", now, config)
        work = own or any(qs.exists() for qs in candidates)
        complete = (
            not work and not tasks.filter(status="REJECTED", assigned_to=agent_id or "").exists()
        )
    elif role == "code_reviewer":
        ready = tasks.filter(status="READY_FOR_REVIEW")
        work = any(_review_slot_free(t, agent_id, now) for t in ready.prefetch_related("reviews"))
        complete = not ready.exists()
    elif role == "planner":
        from boards.models import Discovery, Goal

        work = (
            drafts > 0
            or tasks.filter(status="BLOCKED").exists()
            or Discovery.objects.filter(
                project=project, urgency="immediate", converted_to_task=""
            ).exists()
        )
        goal_open = Goal.objects.filter(project=project, status="IN_PROGRESS").exists()
        complete = (
            not work
            and not goal_open
            and not tasks.exclude(status__in=p.TERMINAL_TASK_STATES).exists()
        )
    else:
        raise ValueError(role)
    if work:
        return {**result, "work": True, "reason": "work is available"}
    if complete and not (drafts and role != "planner"):
        return {**result, "exit": 0, "reason": "role complete"}
    reason = (
        f"{drafts} DRAFT task(s) may be finalized soon"
        if drafts
        else "work is in progress elsewhere"
    )
    return {**result, "retry_after": config.coder_poll_interval, "reason": reason}


def _review_slot_free(task: Task, agent_id: str | None, now) -> bool:
    reviews = [r for r in task.reviews.all() if r.closed_at is None]
    if agent_id and (agent_id == task.assigned_to or any(r.reviewer == agent_id for r in reviews)):
        return False
    taken = [r for r in reviews if r.verdict == "APPROVED" or r.is_active(now)]
    return len(taken) < task.required_approvals
