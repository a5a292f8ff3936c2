"""Shared by the admin tests of both apps: a board with a row of every model, URL helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db import models
from django.urls import reverse

from agents.models import Agent, AgentKey, IdempotentRequest
from agents.services import agent_handoff, agent_key_issue, run_finish, run_start, usage_record
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import Alert, CircuitBreakerCheck
from boards.coordination.models.tasks import ChangeSummary, Task
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.budgets import budget_set
from boards.coordination.services.goals import goal_create
from boards.coordination.services.records import (
    anomaly_create,
    discovery_create,
    human_note_create,
    spec_change_record,
)
from boards.coordination.services.sprints import sprint_create
from boards.watch.models import Notification, WebhookAttempt, WebhookDelivery
from boards.watch.services.notifications import notifications_set
from tests.lifecycle import World


@dataclass
class Board:
    world: World
    goal: Goal
    sprint: Sprint
    claimed: Task
    blocked: Task
    merged: Task
    draft: Task
    key: AgentKey
    plain_key: str


def build_board(world: World) -> Board:
    """One project with at least one row of every model of boards and agents.

    Everything with a service is made through it; Alert, CircuitBreakerCheck and the webhook's
    deliveries have none callable here (the watcher writes them), so they are created directly.
    """
    project = world.project
    goal = goal_create(
        project=project, actor=world.planner, description="Ship the board", now=world.tick()
    )
    world.drive_to("MERGED", "task-3")  # coder-1, reviewed by code-reviewer-1
    world.drive_to("BLOCKED", "task-2", coder="coder-2")
    world.drive_to("CLAIMED", "task-1")  # coder-1
    world.drive_to("DRAFT", "task-4")
    world.drive_to("CLAIMED", "task-5", coder="coder-3")
    agent_handoff(
        agent=world.agent("coder-3"),
        task=world.task("task-5"),
        now=world.tick(),
        summary="Context nearly full",
        next_action="Finish the serializer",
    )
    sprint = sprint_create(
        project=project,
        actor=world.planner,
        goal=goal,
        now=world.tick(),
        planned=["task-1", "task-2", "task-3"],
        deadline=world.now + timedelta(days=3650),
    )
    discovery_create(
        project=project,
        actor=world.agent("coder-1"),
        description="The API has no pagination",
        severity="high",
        during="task-1",
        now=world.tick(),
    )
    anomaly_create(
        project=project,
        actor=world.agent("coder-1"),
        anomaly_type="assumption_violated",
        details={"assumption": "ids are ints", "reality": "ids are strings"},
        task="task-1",
        now=world.tick(),
    )
    human_note_create(
        project=project,
        actor=world.admin,
        message="Errors return 400",
        task="task-2",
        now=world.tick(),
    )
    spec_change_record(
        project=project,
        actor=world.planner,
        spec="specs/api.md",
        change="Errors return 400",
        now=world.tick(),
    )
    CircuitBreakerCheck.objects.create(project=project, timestamp=world.tick(), result="OK")
    Alert.objects.create(
        project=project,
        type=Alert.Type.BLOCKED,
        task=world.task("task-2"),
        message="task-2 is BLOCKED",
        created=world.tick(),
    )
    # The watcher's webhook sender writes these (boards.watch.services.webhooks), over HTTP.
    delivery = WebhookDelivery.objects.create(
        project=project,
        alert=Alert.objects.filter(project=project).first(),
        kind="alert.raised",
        body='{"event": "alert.raised"}',
        status=WebhookDelivery.Status.PENDING,
        created=world.tick(),
        next_attempt_at=world.now,
        attempts=1,
    )
    WebhookAttempt.objects.create(
        delivery=delivery,
        at=world.now,
        url="https://hooks.example.test/liza",
        status_code=500,
        error="HTTP 500",
        duration_ms=12,
    )
    # A person's notification preferences (their own service) and what the sweep noted for
    # them (boards.watch.services.notifications).
    notifications_set(
        project=project, actor=world.admin, now=world.tick(), events=["blocked"], email=True
    )
    Notification.objects.create(
        project=project,
        user=world.admin,
        event="blocked",
        alert=Alert.objects.filter(project=project).first(),
        text="BLOCKED: task-2 — Spec is silent",
        created=world.now,
    )
    # The coder's client uploads these with a submit (boards.coordination.services.tasks.work).
    ChangeSummary.objects.create(
        project=project,
        task=Task.objects.filter(project=project).first(),
        review_commit="c0ffee01",
        iteration=1,
        files=[{"path": "app.py", "added": 3, "deleted": 1}],
        diff="--- a/app.py\n+++ b/app.py\n@@ -1 +1,3 @@\n-a\n+b\n+c\n+d\n",
        created=world.tick(),
    )
    key, plain = agent_key_issue(
        actor=SYSTEM, agent=world.agent("coder-1"), now=world.tick(), label="ci"
    )
    # A stored first answer of a keyed write (what the API keeps for a retry, 24 h).
    IdempotentRequest.objects.create(
        agent=world.agent("coder-1"),
        key="retry-1",
        fingerprint="0" * 64,
        method="POST",
        path=f"/api/v1/projects/{world.project.slug}/discoveries",
        status_code=201,
        body={"id": "disc-1"},
        created_at=world.now,
    )
    # A supervisor's run of coder-1's agent command that crashed (issue 12).
    run = run_start(
        project=world.project, agent=world.agent("coder-1"), now=world.tick(), task="task-1"
    )
    # What it cost (issue 24), against a budget of the project.
    usage_record(
        project=world.project, agent=world.agent("coder-1"), now=world.tick(), run=run.pk,
        usage=[{"model": "opus", "input_tokens": 10, "cost_usd": Decimal("0.5")}],
    )  # fmt: skip
    budget_set(
        project=world.project, actor=world.admin, now=world.tick(), scope="project",
        limit_usd=Decimal(100),
    )  # fmt: skip
    run_finish(run=run, agent=world.agent("coder-1"), now=world.tick(), exit_code=1, output="boom")
    return Board(
        world=world,
        goal=goal,
        sprint=sprint,
        claimed=world.task("task-1"),
        blocked=world.task("task-2"),
        merged=world.task("task-3"),
        draft=world.task("task-4"),
        key=key,
        plain_key=plain,
    )


def changelist_url(model: type[models.Model]) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")


def admin_url(obj: models.Model, view: str = "change") -> str:
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=[obj.pk])


def add_url(model: type[models.Model]) -> str:
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_add")


def run_action(client, model, action: str, objects, **form):
    """POST an admin action on `objects` as the changelist (or its confirmation page) does."""
    data = {"action": action, "_selected_action": [o.pk for o in objects], **form}
    return client.post(changelist_url(model), data, follow=True)


def page_messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def result_pks(response) -> set[int]:
    return {obj.pk for obj in response.context["cl"].result_list}


KEY_RE = re.compile(r"liza_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


def coder(world: World, agent_id: str = "coder-1") -> Agent:
    return world.agent(agent_id)
