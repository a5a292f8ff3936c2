"""`liza_demo`'s second project: two weeks of flow, walked through the services.

The imported demo (`demo.py`) shows a live board, but seed 002's example has no state history,
so its insights page is empty. This project is a history instead: a planner, three coders and
two reviewers working one goal over the 14 days before `now`, every step a real service call at
an explicit past moment (the services take `now`), so the protocol's rules hold as they would
for live agents and every insights chart has something to show. It is generated rather than
shipped as a fixture so its dates always end today, and seeded so two builds at the same `now`
give the same figures (docs/decisions.md "The flow demo").

The walk is a small discrete-event simulation: idle coders claim the best open task every half
hour (their own rejected work first), work for a drawn number of hours and submit; idle
reviewers claim the oldest review, give a verdict (a drawn number of rejections per task) and
merge what they approved; the watcher sweeps at noon every other day. Three tasks are scripted:
one blocked then released, one blocked until the end, and one whose coder crashes (its lease
expires and another coder takes it over).
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from agents.models import Agent
from agents.services import agent_register
from boards.coordination.models.projects import Membership, Project
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.sprints import sprint_open
from boards.coordination.services import reviews, tasks
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.goals import goal_create
from boards.coordination.services.projects import membership_set, project_create
from boards.coordination.services.sprints import sprint_create
from boards.protocol import TaskStatus
from boards.watch.services.watch import watch_sweep

FLOW_SLUG = "demo-flow"
FLOW_NAME = "Demo: two weeks of flow"
FLOW_GOAL = "Ship the bookshop's checkout: cart, payment, receipts and order history"
SEED = 13  # issue 13, which asked for the insights page
DAYS = 14
STEP = timedelta(minutes=30)  # how often idle agents look for work
LEASE = 86_400  # per-task lease override: a day covers any drawn stint of work or review
CRASH_LEASE = 3_600  # the crashing task's lease: it expires within the hour

PLANNER = "planner-1"
CODERS = ("coder-1", "coder-2", "coder-3")
REVIEWERS = ("code-reviewer-1", "code-reviewer-2")

# (day of the walk, tasks): the planner writes a batch at 09:00 and finalizes it half an hour
# later, except the last task of the last batch, left a DRAFT.
BATCHES = ((0, 7), (2, 5), (4, 5), (7, 5), (9, 4), (11, 6))
TITLES = (
    "Cart model and migrations",
    "Add to cart endpoint",
    "Remove from cart endpoint",
    "Cart page template",
    "Price calculation with VAT",
    "Discount codes",
    "Stock reservation on checkout",
    "Payment provider client",
    "Payment webhook handler",
    "Checkout page",
    "Order model",
    "Order confirmation email",
    "Receipt PDF",
    "Order history page",
    "Guest checkout",
    "Address book",
    "Shipping cost table",
    "Shipping method picker",
    "Refund flow",
    "Invoice numbering",
    "Currency formatting",
    "Cart expiry job",
    "Abandoned cart email",
    "Payment retry on failure",
    "Fraud score check",
    "Order search for staff",
    "Checkout analytics events",
    "Accessibility pass on checkout",
    "Load test of checkout",
    "Order status webhooks",
    "Checkout error pages",
    "Checkout runbook",
)
BLOCKED_THEN_RELEASED = 6  # stock reservation: the spec is silent, the planner answers
BLOCKED_AT_END = 24  # fraud score: still waiting on a decision
CRASHED = 11  # order confirmation email: its first coder's session dies


# The walk's own bookkeeping beside the task states: a claim whose lease died (still CLAIMED),
# and a review under way (still READY_FOR_REVIEW).
_LAPSED = "lapsed"
_IN_REVIEW = "in review"


def _key(index: int) -> str:
    return f"CO-{index + 1:02d}"


@dataclass
class _Plan:
    """What the draw decided for one task, and where the walk has it."""

    index: int
    work_hours: float
    rework_hours: float
    review_hours: float
    rejections: int  # verdicts REJECTED before the approving one
    status: str = TaskStatus.DRAFT
    coder: str = ""
    submitted: datetime | None = None
    failed_by: list[str] = field(default_factory=list)
    row: Task | None = None  # as the last service returned it (each re-reads it under a lock)

    @property
    def key(self) -> str:
        return _key(self.index)


@dataclass(frozen=True)
class FlowResult:
    project: Project
    built: bool  # False when the project already existed and was kept as it is
    tasks: int


def flow_demo_build(*, slug: str = FLOW_SLUG, now: datetime, admin: AbstractBaseUser) -> FlowResult:
    """The flow project, `admin` an admin of it. An existing project is kept as it is."""
    project = Project.objects.filter(slug=slug).first()
    built = project is None
    if project is None:
        # One transaction: a walk that fails half-way leaves no half-built project behind (a
        # second run would keep it), and one commit instead of ~500 is most of its speed.
        with transaction.atomic():
            project = _Walk(slug=slug, now=now).run()
    membership_set(project=project, user=admin, role=Membership.Role.ADMIN, actor=SYSTEM, now=now)
    return FlowResult(
        project=project, built=built, tasks=Task.objects.filter(project=project).count()
    )


def walk_start(now: datetime) -> datetime:
    """08:00 UTC thirteen days before `now`'s day: the walk fits insights' default 14 days."""
    day = now.astimezone(UTC).date() - timedelta(days=DAYS - 1)
    return datetime.combine(day, time(8), UTC)


class _Walk:
    def __init__(self, *, slug: str, now: datetime) -> None:
        self.end = now
        self.start = walk_start(now)
        self.clock = self.start
        self.rng = random.Random(SEED)
        self.project = project_create(slug=slug, name=FLOW_NAME, now=self.start)
        self.agents: dict[str, Agent] = {}
        self.plans = [self._draw(i) for i in range(len(TITLES))]
        self.busy: set[str] = set()  # agents in the middle of something scheduled
        self.queue: list[tuple[datetime, int, Callable[[], None]]] = []
        self.order = itertools.count()

    # -- the clock -----------------------------------------------------------------------------

    def at(self, when: datetime) -> datetime:
        """`when`, or a second after the previous operation: moments never go backwards."""
        self.clock = max(when, self.clock + timedelta(seconds=1))
        return self.clock

    def later(self, when: datetime, action: Callable[[], None]) -> None:
        when = when.replace(second=0, microsecond=0)  # whole minutes read better on the board
        heapq.heappush(self.queue, (when, next(self.order), action))

    def _draw(self, index: int) -> _Plan:
        rng = self.rng
        plan = _Plan(
            index=index,
            work_hours=rng.uniform(3, 14),
            rework_hours=rng.uniform(1.5, 5),
            review_hours=rng.uniform(0.5, 2.5),
            rejections=rng.choices((0, 1, 2), weights=(16, 3, 1))[0],
        )
        if index == CRASHED:
            # Its lease is an hour: the coder who takes it over, and its reviewer, finish
            # within it.
            plan.work_hours, plan.review_hours, plan.rejections = 0.8, 0.6, 0
        return plan

    # -- the walk ------------------------------------------------------------------------------

    def run(self) -> Project:
        self.agents[PLANNER] = agent_register(
            project=self.project, agent_id=PLANNER, role="planner", now=self.at(self.start)
        )
        for agent_id in CODERS:
            self.agents[agent_id] = agent_register(
                project=self.project, agent_id=agent_id, role="coder", now=self.at(self.start)
            )
        for agent_id in REVIEWERS:
            self.agents[agent_id] = agent_register(
                project=self.project,
                agent_id=agent_id,
                role="code_reviewer",
                now=self.at(self.start),
            )
        planner = self.agents[PLANNER]
        goal_create(
            project=self.project,
            actor=planner,
            description=FLOW_GOAL,
            spec_ref="specs/checkout.md",
            now=self.at(self.start),
        )
        first = 0
        for number, (day, size) in enumerate(BATCHES, start=1):
            batch = self.plans[first : first + size]
            when = self.start + timedelta(days=day, hours=1)
            if number == len(BATCHES):
                # The last batch comes late enough, whatever the hour of `now`, that some of
                # it is still being coded or reviewed at the end.
                when = max(
                    when,
                    (self.end - timedelta(hours=10)).replace(minute=0, second=0, microsecond=0),
                )
            self.later(when, lambda batch=batch: self.plan_batch(batch))
            first += size
        # The watcher sweeps every few seconds; one sweep every other day at noon raises the alerts
        # a watcher would (a stalled board, a blocked task) at a fraction of the cost.
        for day in range(0, DAYS, 2):
            self.later(self.start + timedelta(days=day, hours=4), self.sweep)

        moment = self.start
        # A minute short of the end: each operation may add a second, none lands after `now`.
        while moment < self.end - timedelta(minutes=1):
            while self.queue and self.queue[0][0] <= moment:
                due, _, action = heapq.heappop(self.queue)
                self.clock = max(self.clock, due)
                action()
            self.poll(moment)
            moment += STEP
        return self.project

    def task(self, plan: _Plan) -> Task:
        # Each service locks and re-reads the task: the row it last returned is enough to name
        # it, and spares a query per step (the walk is most of `liza_demo`'s time).
        assert plan.row is not None
        plan.row.project = self.project
        return plan.row

    def plan_batch(self, batch: list[_Plan]) -> None:
        planner = self.agents[PLANNER]
        if sprint_open(project=self.project) is None:
            # The previous sprint completed when its last planned task merged: the next one
            # opens with this batch.
            sprint_create(project=self.project, actor=planner, now=self.at(self.clock))
        for plan in batch:
            plan.row = tasks.task_create(
                project=self.project,
                actor=planner,
                key=plan.key,
                description=TITLES[plan.index],
                spec_ref=f"specs/checkout.md#{plan.key.lower()}",
                done_when=f"{TITLES[plan.index]} works and is tested",
                priority=1 if plan.index == CRASHED else 2 + plan.index % 3,
                lease_duration_override=CRASH_LEASE if plan.index == CRASHED else LEASE,
                sprint_scope="planned",
                now=self.at(self.clock),
            )
        self.later(self.clock + timedelta(minutes=30), lambda: self.finalize(batch))

    def finalize(self, batch: list[_Plan]) -> None:
        for plan in batch:
            if plan.index == len(TITLES) - 1:
                continue  # still being written at the end of the walk
            plan.row = tasks.task_finalize(
                task=self.task(plan), actor=self.agents[PLANNER], now=self.at(self.clock)
            )
            plan.status = TaskStatus.UNCLAIMED

    def sweep(self) -> None:
        watch_sweep(project=self.project, now=self.at(self.clock))

    # -- idle agents look for work -------------------------------------------------------------

    def poll(self, moment: datetime) -> None:
        hour = moment.hour
        if 6 <= hour < 23:  # the coders' sessions run from morning to late evening
            for coder in CODERS:
                if coder not in self.busy:
                    self.coder_next(coder, moment)
        if 7 <= hour < 21:
            # Whoever looked first last time looks second now: the two share the reviews.
            turn = int((moment - self.start) / STEP) % len(REVIEWERS)
            for reviewer in REVIEWERS[turn:] + REVIEWERS[:turn]:
                if reviewer not in self.busy:
                    self.reviewer_next(reviewer, moment)

    def coder_next(self, coder: str, moment: datetime) -> None:
        own = [p for p in self.plans if p.coder == coder and p.status == TaskStatus.REJECTED]
        if own:
            plan, hours = own[0], own[0].rework_hours
        else:
            open_ = [
                p
                for p in self.plans
                if p.status == TaskStatus.UNCLAIMED or (p.status == _LAPSED and p.coder != coder)
            ]
            if not open_:
                return
            plan = min(open_, key=lambda p: (p.status != _LAPSED, p.index != CRASHED, p.index))
            hours = plan.work_hours
        plan.row = tasks.task_claim(
            task=self.task(plan),
            agent=self.agents[coder],
            base_commit=f"{plan.index:02d}a1b2c3",
            now=self.at(moment),
        )
        crashing = plan.index == CRASHED and plan.status == TaskStatus.UNCLAIMED
        if plan.status == _LAPSED:
            plan.failed_by.append(plan.coder)  # the takeover appends it (SPEC §5.1)
            self.busy.discard(plan.coder)
        plan.status, plan.coder = TaskStatus.CLAIMED, coder
        self.busy.add(coder)
        done = self.clock + timedelta(hours=hours)
        if crashing:
            # Its session dies without a word: the first sweep after the lease ends expires it.
            self.later(self.clock + timedelta(seconds=CRASH_LEASE + 300), lambda: self.expire(plan))
        elif plan.index in (BLOCKED_THEN_RELEASED, BLOCKED_AT_END) and not plan.failed_by:
            self.later(self.clock + timedelta(hours=2), lambda: self.block(plan))
        else:
            self.later(done, lambda: self.submit(plan))

    def expire(self, plan: _Plan) -> None:
        self.sweep()
        # CLAIMED under a dead lease: another coder takes it over. Its first coder still
        # "holds" it until then (one task at a time), so it waits for the takeover.
        plan.status = _LAPSED

    def block(self, plan: _Plan) -> None:
        plan.row = tasks.task_block(
            task=self.task(plan),
            agent=self.agents[plan.coder],
            reason=f"The spec does not say how {TITLES[plan.index].lower()} should fail",
            questions=["What should the customer see when it fails?"],
            attempted=["Read specs/checkout.md", "Looked for a similar flow in the shop"],
            now=self.at(self.clock),
        )
        plan.status = TaskStatus.BLOCKED
        plan.failed_by.append(plan.coder)
        self.busy.discard(plan.coder)
        if plan.index == BLOCKED_THEN_RELEASED:
            self.later(self.clock + timedelta(hours=20), lambda: self.release(plan))

    def release(self, plan: _Plan) -> None:
        plan.row = tasks.task_release(
            task=self.task(plan),
            actor=self.agents[PLANNER],
            reason="Answered in specs/checkout.md: release the stock after 15 minutes",
            now=self.at(self.clock),
        )
        plan.status = TaskStatus.UNCLAIMED

    def submit(self, plan: _Plan) -> None:
        plan.row = tasks.task_submit_for_review(
            task=self.task(plan),
            agent=self.agents[plan.coder],
            review_commit=f"{plan.index:02d}{plan.rejections}f00d",
            now=self.at(self.clock),
        )
        plan.status, plan.submitted = TaskStatus.READY_FOR_REVIEW, self.clock

    def reviewer_next(self, reviewer: str, moment: datetime) -> None:
        waiting = [
            p
            for p in self.plans
            if p.status == TaskStatus.READY_FOR_REVIEW
            and p.coder != reviewer
            and reviewer not in p.failed_by
        ]
        if not waiting:
            return
        plan = min(waiting, key=lambda p: p.submitted)
        reviews.review_claim(task=self.task(plan), agent=self.agents[reviewer], now=self.at(moment))
        plan.status = _IN_REVIEW
        self.busy.add(reviewer)
        self.later(
            self.clock + timedelta(hours=plan.review_hours), lambda: self.verdict(plan, reviewer)
        )

    def verdict(self, plan: _Plan, reviewer: str) -> None:
        task = self.task(plan)
        rejected = plan.rejections > 0
        plan.row = reviews.review_verdict(
            task=task,
            agent=self.agents[reviewer],
            verdict=Review.Verdict.REJECTED if rejected else Review.Verdict.APPROVED,
            review_commit=task.review_commit,
            reason="Missing tests for the error path" if rejected else "Clear and well tested",
            now=self.at(self.clock),
        )
        if rejected:
            plan.rejections -= 1
            plan.status = TaskStatus.REJECTED
            self.busy.discard(plan.coder)  # free to take its own rework at the next poll
            self.busy.discard(reviewer)
            return
        plan.status = TaskStatus.APPROVED
        self.busy.discard(plan.coder)

        def merge() -> None:
            plan.row = tasks.task_report_merge(
                task=self.task(plan),
                agent=self.agents[reviewer],
                merge_commit=f"{plan.index:02d}e4d5c6",
                now=self.at(self.clock),
            )
            plan.status = TaskStatus.MERGED
            self.busy.discard(reviewer)

        self.later(self.clock + timedelta(minutes=20), merge)
