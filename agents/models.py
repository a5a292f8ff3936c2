"""Agent identities and their API keys (SPEC §3, §4; seed 000 "Agent State Machine")."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django_fsm import FSMField, FSMModelMixin, transition

from boards import protocol as p
from boards.coordination.models.machines import seed_transition
from boards.coordination.models.projects import (
    Goal,
    Project,
    ProjectScopedModel,
    Sprint,
    unique_in_project,
)
from boards.coordination.models.tasks import Task


def _role_is(role: str) -> Callable[[Agent], bool]:
    def condition(agent: Agent) -> bool:
        return agent.role == role

    return condition


def _seed_edge(method: Callable[..., None]) -> Callable[..., None]:
    """The agent's transition of every seed 000 edge named after `method` (protocol.AGENT_EDGES),
    each open only to the role the table gives it (every role where it gives none)."""
    edges_by_role: dict[str | None, dict[tuple[str, str], str]] = {}
    for pair, (name, role) in p.AGENT_EDGES.items():
        if name == method.__name__:
            edges_by_role.setdefault(role, {})[pair] = name
    if not edges_by_role:
        raise ImproperlyConfigured(f"no seed 000 agent edge is named {method.__name__!r}")
    for role, edges in edges_by_role.items():
        method = seed_transition(edges, conditions=[_role_is(role)] if role else [])(method)
    return method


class Agent(FSMModelMixin, ProjectScopedModel):
    class Role(models.TextChoices):
        PLANNER = "planner"
        CODER = "coder"
        CODE_REVIEWER = "code_reviewer"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.CharField(max_length=64, help_text="planner-N, coder-N or code-reviewer-N")
    role = models.CharField(max_length=20, choices=Role.choices)
    status = FSMField(
        default=p.AgentStatus.STARTING, choices=[(s, s) for s in p.AGENT_STATES], protected=True
    )
    current_task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The agent's own lease: liveness of the process (seed 002 "Lease Model").
    lease_expires = models.DateTimeField(null=True, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    terminal = models.CharField(max_length=200, blank=True)
    iterations_total = models.PositiveIntegerField(default=0)
    context_percent = models.PositiveSmallIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # Seed 001: a security-sensitive task needs at least one security-flagged approver.
    security_reviewer = models.BooleanField(default=False)
    registered_at = models.DateTimeField(null=True, blank=True)
    # When its session ended (`agent_leave`); cleared by its next registration. The original
    # Liza deletes a departed agent's registry entry: until the id registers again, it is "not
    # registered" and its heartbeat is refused (`not_registered`), not a way back to a live
    # lease. Not `registered_at IS NULL`: an agent an admin created heartbeats before it ever
    # registers, and that heartbeat is legitimate (STARTING → IDLE).
    left_at = models.DateTimeField(null=True, blank=True)
    # Which session of this id is the live one: every registration (`agent_register`) adds one,
    # so two processes of the same id are told apart. A process carries the generation its
    # registration answered (the `Liza-Generation` header); one older than this was superseded
    # and is refused `not_registered` (`availability.superseded_refusal`). 0: never registered.
    generation = models.BigIntegerField(default=0)
    # Set when the server takes a task out of the agent's hands (takeover, override block,
    # limit, a human releasing the claim): its next heartbeat answers lease_lost / exit 42
    # (seed 002 "If original agent returns after expiry → must self-abort immediately").
    # Cleared when it claims again or registers afresh.
    lost_task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    lost_reason = models.CharField(max_length=200, blank=True)
    # Seed 003 availability (boards.coordination.selectors.availability): OVERLOADED is set by a
    # project admin (the agent keeps what it holds, takes nothing new); ERROR is computed from
    # recent lease expiries, counting only those after `error_cleared_at` (an admin's "clear").
    overloaded = models.BooleanField(default=False)
    error_cleared_at = models.DateTimeField(null=True, blank=True)
    # Issue 24: the last progress of its supervised run (output, a commit), as its supervisor
    # reported it with the latest heartbeat; None when not supervised.
    progress_at = models.DateTimeField(null=True, blank=True)
    # Issue 24: its supervisor met its provider's quota wall and spawns nothing before this
    # time (the board shows "quota: resumes at HH:MM" while it is ahead).
    quota_until = models.DateTimeField(null=True, blank=True)
    quota_provider = models.CharField(max_length=64, blank=True)
    quota_message = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["role", "agent_id"]
        constraints = [
            unique_in_project("agent_id", name="agent_unique_id"),
            # "No two agents assigned to same task" (seed 000/002 Validation Rules).
            models.UniqueConstraint(
                fields=["current_task"],
                condition=Q(current_task__isnull=False),
                name="agent_one_per_task",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project}/{self.agent_id}"

    def has_live_lease(self, now: datetime) -> bool:
        return self.lease_expires is not None and self.lease_expires > now

    @_seed_edge
    def ready(self) -> None:
        """Registration complete."""

    @_seed_edge
    def start_work(self) -> None:
        """A coder was assigned a task."""

    @_seed_edge
    def start_review(self) -> None:
        """A code reviewer was assigned a review."""

    @_seed_edge
    def wait_for_review(self) -> None:
        """Submitted for review."""

    @_seed_edge
    def resume_work(self) -> None:
        """Continue after feedback."""

    @_seed_edge
    def stop_work(self) -> None:
        """Task done, blocked, or lost."""

    @_seed_edge
    def finish_review(self) -> None:
        """Verdict given, or the review was lost."""

    @_seed_edge
    def hand_off(self) -> None:
        """Context exhaustion: handoff notes written, the process terminates."""

    @transition(field=status, source=list(p.AGENT_RESTART_SOURCES), target=p.AgentStatus.STARTING)
    def restart(self) -> None:
        """The supervisor restarts the id fresh (after HANDOFF, or once its lease is dead)."""


class AgentKey(ProjectScopedModel):
    """An API key: generated server-side, shown once, stored hashed, found by its prefix."""

    PREFIX_LEN = 12

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="keys")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agent_keys")
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=128)
    label = models.CharField(max_length=100, blank=True)
    created = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.agent.agent_id})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @staticmethod
    def hash(plain: str) -> str:
        # Keys are 256-bit random tokens, so a fast hash is enough: nothing to brute-force.
        return hashlib.sha256(plain.encode()).hexdigest()


class IdempotentRequest(models.Model):
    """The first answer to an agent's write sent with an `Idempotency-Key` (docs/decisions.md).

    Inserted when the write starts, in the transaction that applies it, and completed with the
    answer before that transaction commits: a retry with the same key either waits on the
    unique (agent, key) index until the first attempt commits and then replays its answer, or
    — if the first attempt rolled back — applies the write itself. Kept 24 hours.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="idempotent_requests")
    key = models.CharField(max_length=255)
    # sha256 of method, path and the parsed body: the same key for another request is refused.
    fingerprint = models.CharField(max_length=64)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True)
    body = models.JSONField(null=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="idempotent_request_agent_key")
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotent_request_created")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"


class RunState(models.TextChoices):
    RUNNING = "running"
    FINISHED = "finished"  # it exited by itself (0, 42, a crash, a provider's quota wall)
    STALLED = "stalled"  # no progress for stall_timeout: its supervisor terminated it
    KILLED = "killed"  # its supervisor stopped it (lease lost, pause, budget, a signal)


# Why the supervisor stopped a run (`stopped_by`) → its state and reason in words.
RUN_STOPS = {
    "stalled": (RunState.STALLED, "stalled"),
    "quota": (RunState.FINISHED, "quota"),
    "budget": (RunState.KILLED, "budget"),
    "budget_exhausted": (RunState.KILLED, "budget"),  # the heartbeat's `stop`, as it says it
    "not_registered": (RunState.KILLED, "the agent left"),  # its heartbeat refused: no session
}


def run_outcome(exit_code: int, stopped_by: str, progress: bool = False) -> tuple[str, str]:
    """THE rule for how a run ended: (state, reason in words). Exit 42 is the protocol's
    "session ended, work left", not a failure; 0 the role complete. Another code is a crash
    only without protocol progress in the session (issue 23, `Run.crashed`)."""
    if stopped_by:
        return RUN_STOPS.get(stopped_by, (RunState.KILLED, f"stopped: {stopped_by}"))
    if exit_code == 0:
        return RunState.FINISHED, "role complete"
    if exit_code == 42:
        return RunState.FINISHED, "session ended, work left"
    if progress:
        return RunState.FINISHED, f"session ended after progress (exit {exit_code})"
    return RunState.FINISHED, f"crashed (exit {exit_code})"


class Run(ProjectScopedModel):
    """One spawn of an agent command by `liza supervise` (issue 12 §2 "Runs"): who ran, on
    which task, when, how it ended and the last lines it printed (secrets redacted), so a human
    sees why a coder keeps failing and the watcher can read crash loops (`recent_crashes`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="runs"
    )
    started = models.DateTimeField()
    ended = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    # Why this spawn happened: start, exit_42, crash: exit N, lease_lost, paused, draft_wait,
    # role_not_complete (its agent exited 0 while /work said work may still come) ...
    restart_reason = models.CharField(max_length=100, blank=True)
    # Set when the supervisor stopped the agent itself (lease_lost, paused, checkpoint, its own
    # signal ...).
    stopped_by = models.CharField(max_length=100, blank=True)
    # The session moved the protocol: an applied event of its agent between start and end
    # (`agents.selectors.run_made_progress`, read when the run ends). A CLI cannot choose its
    # exit code: a non-zero exit after real work is a session's end, not a crash.
    progress = models.BooleanField(default=False)
    command = models.CharField(max_length=500, blank=True)
    output = models.TextField(blank=True)
    # Issue 24: what the run is (running until it ends), why it ended in words, and when its
    # output last moved (streamed while it runs: `run_output_append`).
    state = models.CharField(max_length=10, choices=RunState.choices, default=RunState.RUNNING)
    reason = models.CharField(max_length=100, blank=True)
    last_output_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["agent", "ended"], name="run_agent_ended"),
            models.Index(fields=["task", "started"], name="run_task_started"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.agent_id}"

    def duration(self, now: datetime | None = None) -> timedelta:
        """How long it ran (so far, at `now`, while it runs)."""
        end = self.ended or now or self.started
        return max(end - self.started, timedelta(0))

    @property
    def duration_text(self) -> str:
        """The duration in words as the board shows it ("1 h 02 min", "3 min 05 s", "12 s");
        a running run's from the database's clock of the render."""
        seconds = int(self.duration(timezone.now()).total_seconds())
        return p.two_units(seconds, ((3600, " h"), (60, " min"), (1, " s")))

    @property
    def crashed(self) -> bool:
        """Exited by itself with neither 0 (role complete) nor 42 (graceful abort), having made
        no protocol progress in the session (issue 23: no wrappers)."""
        return (
            self.exit_code is not None
            and self.exit_code not in (0, 42)
            and not self.stopped_by
            and not self.progress
        )


class RunUsage(ProjectScopedModel):
    """What one run cost for one model (issue 24): tokens and USD, as the CLI printed them
    (parsed by its supervisor, `agents.client.usage`) or as the agent posted them (`liza
    usage`). A report carries the run's totals so far, so a row only grows (each field keeps
    the larger of what it had and what came): a repeated or late report counts once.

    Attributed when recorded to what the spend is budgeted against
    (`boards.coordination.selectors.budgets`):
    the run's task, its agent, the open sprint and the task's goal (else the goal in progress).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="usage")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="usage")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="usage")
    task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage"
    )
    sprint = models.ForeignKey(
        Sprint, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage"
    )
    goal = models.ForeignKey(
        Goal, on_delete=models.SET_NULL, null=True, blank=True, related_name="usage"
    )
    model = models.CharField(max_length=100, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    recorded_at = models.DateTimeField()  # its first report: the day its cost counts on

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "model"], name="run_usage_one_per_model")
        ]
        indexes = [models.Index(fields=["project", "recorded_at"], name="run_usage_day")]

    def __str__(self) -> str:
        return f"usage of run {self.run_id} ({self.model or 'unknown model'})"

    @property
    def tokens(self) -> int:
        """Every token the provider counted: what a token budget counts."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class Budget(ProjectScopedModel):
    """A spending limit (issue 24) on a project, a goal, a sprint, an agent or a task, in USD
    and/or tokens. Its spend and state (ok, warning at 80 %, exhausted at 100 %) are computed
    from the usage rows attributed to its subject (`boards.coordination.selectors.budgets`); set by
    project admins only (`boards.coordination.services.budgets.budget_set`, audited)."""

    class Scope(models.TextChoices):
        PROJECT = "project"
        GOAL = "goal"
        SPRINT = "sprint"
        AGENT = "agent"
        TASK = "task"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="budgets")
    scope = models.CharField(max_length=10, choices=Scope.choices)
    # The subject's id as people write it (goal-1, sprint-2, coder-1, task-4a; "" for the project).
    subject = models.CharField(max_length=64, blank=True)
    goal = models.ForeignKey(
        Goal, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    sprint = models.ForeignKey(
        Sprint, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    limit_usd = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    limit_tokens = models.BigIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField()
    updated_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["scope", "subject"]
        constraints = [
            unique_in_project("scope", "subject", name="budget_one_per_subject"),
            models.CheckConstraint(
                condition=Q(limit_usd__isnull=False) | Q(limit_tokens__isnull=False),
                name="budget_has_a_limit",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project} budget of {self.scope} {self.subject}".rstrip()

    @property
    def label(self) -> str:
        return "project" if self.scope == self.Scope.PROJECT else f"{self.scope} {self.subject}"
