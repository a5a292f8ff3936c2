"""The coder's operations on its claim: request review (seed 002 Clean Sync) and block."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.tasks import ChangeSummary, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.tasks import hypothesis_exhausted
from boards.coordination.services.actors import CODER
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import agents_only, require_role
from boards.coordination.services.cleaning import clean_string_list, clean_text
from boards.coordination.services.edges import move_task
from boards.coordination.services.locking import lock_own_claim
from boards.coordination.services.tasks.holders import append_failed_by, release_holder
from boards.coordination.services.tasks.limits import limit_anomaly
from boards.errors import (
    ProtocolValidationError,
)
from boards.protocol import AgentStatus, TaskStatus


@agents_only
@records_refusals
def task_submit_for_review(
    *,
    task: Task,
    agent: Agent,
    review_commit: str,
    now: datetime,
    tree_clean: bool = True,
    change_summary: dict | None = None,
    pr_url: str = "",
) -> Task:
    """CLAIMED → READY_FOR_REVIEW with the commit under review (seed 002 Clean Sync), and what
    it changed when the coder's side computed it (issue 25: the drawer's "what changed"), and
    the pull request it reported (kept across rounds until another is reported)."""
    project = task.project
    require_role(
        Attempt(project, agent, "task_submit_for_review", now),
        agent_roles=CODER,
        task=task,
    )
    review_commit = clean_text(review_commit, "review_commit", max_length=64)
    if tree_clean is not True:
        raise ProtocolValidationError(
            "tree_clean", "the worktree must be clean before review (seed 002 Clean Sync)"
        )
    pr_url = (pr_url or "").strip()
    if problem := p.pr_url_problem(pr_url):
        raise ProtocolValidationError("pr_url", problem)
    config = config_of(project)
    with transaction.atomic():
        submit = Attempt(project, agent, "submit_for_review", now)
        agent, task = lock_own_claim(
            submit, agent, task, to=TaskStatus.READY_FOR_REVIEW, config=config
        )
        task.review_commit = review_commit
        if pr_url:
            task.pr_url = pr_url
        # "When task transitions to READY_FOR_REVIEW, the coder's lease becomes inactive."
        task.lease_expires = None
        move_task(
            task,
            "submit_for_review",
            submit,
            detail=f"Iteration {task.iteration or 1}, commit {review_commit}",
            data={"commit": review_commit, "iteration": task.iteration}
            | ({"pr_url": pr_url} if pr_url else {}),
        )
        if change_summary is not None:
            ChangeSummary.objects.create(
                project=project,
                task=task,
                review_commit=review_commit,
                iteration=task.iteration,
                files=list(change_summary.get("files") or []),
                diff=change_summary.get("diff") or "",
                truncated=bool(change_summary.get("truncated")),
                created=now,
            )
        if agent.status == AgentStatus.WORKING:
            agent.wait_for_review()
            agent.save()
    return task


@agents_only
@records_refusals
def task_block(
    *,
    task: Task,
    agent: Agent,
    reason: str,
    questions: Sequence[str],
    now: datetime,
    attempted: Sequence[str] = (),
) -> Task:
    """The coder cannot proceed: CLAIMED → BLOCKED with a diagnosis (seed 002 Mark blocked)."""
    project = task.project
    require_role(Attempt(project, agent, "task_block", now), agent_roles=CODER, task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    questions = clean_string_list(
        list(questions or []), "questions", min_items=1, max_items=p.MAX_BLOCKED_QUESTIONS
    )
    attempted = clean_string_list(list(attempted or []), "attempted")
    config = config_of(project)
    with transaction.atomic():
        block = Attempt(project, agent, "block", now)
        agent, task = lock_own_claim(block, agent, task, to=TaskStatus.BLOCKED, config=config)
        task.blocked_reason = reason
        task.blocked_questions = questions
        task.attempted = [*task.attempted, *attempted]
        task.lease_expires = None
        append_failed_by(task, agent.agent_id)
        exhausted = hypothesis_exhausted(task)
        if exhausted:
            task.blocked_reason = (
                f"Hypothesis exhaustion: {len(set(task.failed_by))} coders failed "
                f"({', '.join(task.failed_by)}). Last: {reason}"
            )
        move_task(task, "block", block, detail=reason, data={"questions": questions})
        release_holder(agent, task)
        if exhausted:
            limit_anomaly(task, now=now, limit="hypothesis_exhaustion")
    return task
