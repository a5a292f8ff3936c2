"""A small world of agents and one human admin that walks tasks through the real services.

Tests reach every state of seed 000's task machine the way production does (no status is ever
written by hand), with a clock they control.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agents.models import Agent
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import ChangeSummary, Task
from boards.coordination.services import goals, reviews, sprints, tasks
from tests.factories import T0, ProjectFactory, member, register


class World:
    def __init__(self, project: Project | None = None, *, now: datetime = T0) -> None:
        self.project = project or ProjectFactory()
        self.now = now
        self.admin = member(self.project, "admin")
        self.planner = register(self.project, "planner-1", now=now)
        self.coders = [register(self.project, f"coder-{i}", now=now) for i in (1, 2, 3)]
        self.reviewers = [register(self.project, f"code-reviewer-{i}", now=now) for i in (1, 2)]
        self.security_reviewer = register(
            self.project, "code-reviewer-3", now=now, security_reviewer=True
        )

    # -- the goal, its sprint, what a round changed ----------------------------------------------

    def sprint_started(self, description: str = "G") -> Sprint:
        """The planner's goal and its sprint, started (tasks join it with sprint_scope=…)."""
        goal = goals.goal_create(
            project=self.project, actor=self.planner, description=description, now=self.now
        )
        return sprints.sprint_create(
            project=self.project, actor=self.planner, goal=goal, now=self.tick()
        )

    def change_summary(self, key: str, commit: str = "c0ffee01") -> ChangeSummary:
        """A one-file change stored with `key`'s first round, as a submission leaves it."""
        return ChangeSummary.objects.create(
            project=self.project,
            task=self.task(key),
            review_commit=commit,
            iteration=1,
            files=[{"path": "app.py", "added": 1, "deleted": 1}],
            diff="diff --git a/app.py b/app.py\n@@ -1 +1 @@\n-old\n+new\n",
            created=self.now,
        )

    # -- clock and re-reads --------------------------------------------------------------------

    def tick(self, seconds: float = 1) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def task(self, key: str) -> Task:
        return Task.objects.get(project=self.project, key=key)

    def agent(self, agent_id: str) -> Agent:
        return Agent.objects.get(project=self.project, agent_id=agent_id)

    @property
    def coder(self) -> Agent:
        return self.agent("coder-1")

    @property
    def reviewer(self) -> Agent:
        return self.agent("code-reviewer-1")

    # -- walking a task ------------------------------------------------------------------------

    def draft(self, key: str, **fields) -> Task:
        fields.setdefault("spec_ref", f"specs/{key}.md")
        fields.setdefault("done_when", f"{key} works")
        return tasks.task_create(
            project=self.project,
            actor=self.planner,
            key=key,
            description=fields.pop("description", f"Implement {key}"),
            now=self.tick(),
            **fields,
        )

    def unclaimed(self, key: str, **fields) -> Task:
        self.draft(key, **fields)
        return tasks.task_finalize(task=self.task(key), actor=self.planner, now=self.tick())

    def claim(self, key: str, coder: str = "coder-1") -> Task:
        return tasks.task_claim(
            task=self.task(key),
            agent=self.agent(coder),
            now=self.tick(),
            base_commit="base0001",
        )

    def claimed(self, key: str, coder: str = "coder-1", **fields) -> Task:
        self.unclaimed(key, **fields)
        return self.claim(key, coder)

    def submit(self, key: str, commit: str = "c0ffee01") -> Task:
        task = self.task(key)
        return tasks.task_submit_for_review(
            task=task, agent=self.agent(task.assigned_to), review_commit=commit, now=self.tick()
        )

    def ready_for_review(self, key: str, coder: str = "coder-1", **fields) -> Task:
        self.claimed(key, coder, **fields)
        return self.submit(key)

    def claim_review(self, key: str, reviewer: str = "code-reviewer-1"):
        return reviews.review_claim(
            task=self.task(key), agent=self.agent(reviewer), now=self.tick()
        )

    def verdict(
        self, key: str, verdict: str, reviewer: str = "code-reviewer-1", reason: str = ""
    ) -> Task:
        task = self.task(key)
        return reviews.review_verdict(
            task=task,
            agent=self.agent(reviewer),
            verdict=verdict,
            review_commit=task.review_commit,
            now=self.tick(),
            reason=reason or ("Needs work" if verdict == "REJECTED" else "Looks right"),
        )

    def under_review(self, key: str, **fields) -> Task:
        self.ready_for_review(key, **fields)
        self.claim_review(key)
        return self.task(key)

    def approved(self, key: str, **fields) -> Task:
        self.under_review(key, **fields)
        return self.verdict(key, "APPROVED")

    def rejected(self, key: str, **fields) -> Task:
        self.under_review(key, **fields)
        return self.verdict(key, "REJECTED")

    def merged(self, key: str, **fields) -> Task:
        self.approved(key, **fields)
        return tasks.task_report_merge(
            task=self.task(key), agent=self.reviewer, merge_commit="merge001", now=self.tick()
        )

    def integration_failed(self, key: str, **fields) -> Task:
        self.approved(key, **fields)
        return tasks.task_report_integration_failure(
            task=self.task(key), agent=self.reviewer, reason="conflict in api.py", now=self.tick()
        )

    def block(self, key: str, reason: str = "Spec is silent on errors") -> Task:
        task = self.task(key)
        return tasks.task_block(
            task=task,
            agent=self.agent(task.assigned_to),
            reason=reason,
            questions=["What should happen on error?"],
            attempted=["Read the spec"],
            now=self.tick(),
        )

    def blocked(self, key: str, coder: str = "coder-1", **fields) -> Task:
        self.claimed(key, coder, **fields)
        return self.block(key)

    def superseded(self, key: str, **fields) -> Task:
        self.blocked(key, **fields)
        tasks.task_rescope(
            task=self.task(key),
            actor=self.planner,
            reason="Too broad",
            new_tasks=[
                {"key": f"{key}a", "description": f"First half of {key}", "done_when": "half done"}
            ],
            now=self.tick(),
        )
        return self.task(key)

    def abandoned(self, key: str, **fields) -> Task:
        self.blocked(key, **fields)
        return tasks.task_abandon(
            task=self.task(key), actor=self.planner, reason="No longer needed", now=self.tick()
        )

    def drive_to(self, status: str, key: str, **fields) -> Task:
        """A task `key` in `status`, reached through the services."""
        step = {
            "DRAFT": self.draft,
            "UNCLAIMED": self.unclaimed,
            "CLAIMED": self.claimed,
            "READY_FOR_REVIEW": self.ready_for_review,
            "REJECTED": self.rejected,
            "APPROVED": self.approved,
            "MERGED": self.merged,
            "BLOCKED": self.blocked,
            "SUPERSEDED": self.superseded,
            "ABANDONED": self.abandoned,
            "INTEGRATION_FAILED": self.integration_failed,
        }[status]
        step(key, **fields)
        task = self.task(key)
        assert task.status == status, (key, task.status, status)
        return task
