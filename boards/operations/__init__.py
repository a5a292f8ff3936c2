"""Every operation of the protocol and of human oversight, declared once (STYLE.md).

An `Operation` binds a service (boards.services, agents.services) to the row it acts on, the
input it accepts (one serializer of `boards.operations.inputs`, whoever sends it) and the words
that report its success. The adapters only translate in and out:

- the REST API (boards.api.operations) turns each into an endpoint: JSON body → input →
  service → the row's representation, errors through the one envelope;
- the board's HTML actions (boards.board.web.actions) turn a form POST into the same input, and a
  success into a flash message, a refusal into the page again with the error;
- the Django admin's actions (boards.admin) run the same operation on each selected row.

None of them checks a role or a state itself: the service does, once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rest_framework import serializers

from agents import services as agent_services
from agents.selectors import agent_get, key_get, run_get
from boards.coordination.models.projects import Membership
from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Discovery
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.breaker import breaker_status
from boards.coordination.selectors.sprints import goal_current, goal_get, sprint_current, sprint_get
from boards.coordination.selectors.tasks import task_get
from boards.coordination.services import (
    budgets,
    goals,
    projects,
    records,
    reviews,
    sprints,
    stops,
    tasks,
)
from boards.errors import NotFound, validation_error
from boards.operations import inputs as i
from boards.watch.services import breaker, notifications, watch

# Planning (issue 25) is offered to members too: the service lets admins and members with the
# planner right plan (boards.coordination.selectors.access.may_plan); a viewer is refused at the
# page.
PLANS = Membership.Role.MEMBER

# What an operation acts on; the adapters resolve it (404 for missing or foreign rows).
# SITE: an operation on no project (site staff opening a new one).
TASK, SPRINT, GOAL, PROJECT, DISCOVERY, AGENT, KEY, ALERT, BREAKER, RUN, SITE = (
    "task",
    "sprint",
    "goal",
    "project",
    "discovery",
    "agent",
    "key",
    "alert",
    "breaker",
    "run",
    "site",
)


@dataclass(frozen=True)
class Operation:
    name: str
    service: Callable[..., Any]
    target: str
    input: type[serializers.Serializer] | None = None
    # The service's keyword for the acting principal: agents-only operations take `agent`.
    principal: str = "actor"
    # The human role the board offers it to (the service decides: this only picks the forms).
    role: str = Membership.Role.ADMIN
    # Validated input → the service's keyword arguments (default: as they are).
    arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # The service's result → one line for a person (flash message, admin message).
    done: Callable[[Any], str] = field(default=lambda result: "Done.")
    # Board form field names that differ from the input's.
    form_aliases: Mapping[str, str] = field(default_factory=dict)

    def validate(self, data: Any, *, partial: bool = False) -> dict[str, Any]:
        """The operation's input, validated; a refusal is a 400 naming the field."""
        if self.input is None:
            return {}
        serializer = self.input(data=data, partial=partial)
        if not serializer.is_valid():
            raise validation_error(serializer.errors)
        return _plain(serializer.validated_data)

    def run(self, *, target: Any, actor: Any, now: datetime, data: dict[str, Any]) -> Any:
        kwargs = self.arguments(dict(data)) if self.arguments else dict(data)
        on = {} if self.target == SITE else {self.target: target}
        return self.service(**on, **{self.principal: actor, "now": now}, **kwargs)


def _plain(value: Any) -> Any:
    """Serializer output as plain dicts and lists (nested serializers give OrderedDicts)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _key(task) -> str:
    return task.key


def _rename(**names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def arguments(data: dict[str, Any]) -> dict[str, Any]:
        return {names.get(k, k): v for k, v in data.items()}

    return arguments


def _create_task_arguments(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("depends_on", ())
    return data


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        # -- the planner (and project admins) ---------------------------------------------------
        Operation(
            "task_create",
            tasks.task_create,
            PROJECT,
            i.CreateTaskInput,
            arguments=_create_task_arguments,
            done=lambda t: f"{t.key} created (DRAFT).",
            role=PLANS,
        ),
        Operation(
            "task_finalize",
            tasks.task_finalize,
            TASK,
            done=lambda t: f"{t.key} finalized.",
            role=PLANS,
        ),
        Operation(
            "task_edit",
            tasks.task_edit,
            TASK,
            i.TaskEditInput,
            done=lambda t: f"{t.key} saved.",
            role=PLANS,
        ),
        Operation(
            "task_set_dependencies",
            tasks.task_set_dependencies,
            TASK,
            i.DependenciesInput,
            done=lambda t: f"{t.key}: dependencies set.",
            role=PLANS,
        ),
        Operation(
            "task_rescope",
            tasks.task_rescope,
            TASK,
            i.RescopeInput,
            done=lambda created: (
                f"{created[0].supersedes} rescoped into {', '.join(t.key for t in created)}."
            ),
        ),
        Operation(
            "task_abandon",
            tasks.task_abandon,
            TASK,
            i.ReasonInput,
            done=lambda t: f"{t.key} abandoned.",
        ),
        Operation(
            "task_release",
            tasks.task_release,
            TASK,
            i.ReasonInput,
            done=lambda t: f"{t.key} answered and back in the queue (UNCLAIMED).",
            form_aliases={"answer": "reason"},
        ),
        Operation(
            "goal_create",
            goals.goal_create,
            PROJECT,
            i.GoalInput,
            done=lambda g: f"{g.goal_id} created.",
            role=PLANS,
        ),
        Operation(
            "goal_edit",
            goals.goal_edit,
            GOAL,
            i.GoalEditInput,
            done=lambda g: f"{g.goal_id} saved.",
            role=PLANS,
        ),
        Operation(
            "goal_complete",
            goals.goal_complete,
            GOAL,
            i.ReasonInput,
            done=lambda g: f"{g.goal_id} completed.",
        ),
        Operation(
            "sprint_create",
            sprints.sprint_create,
            PROJECT,
            i.SprintInput,
            done=lambda s: f"{s.sprint_id} started.",
            role=PLANS,
        ),
        Operation(
            "sprint_complete",
            sprints.sprint_complete,
            SPRINT,
            done=lambda s: f"{s.sprint_id} closed (COMPLETED).",
            role=PLANS,
        ),
        # -- the coder ------------------------------------------------------------------------
        Operation(
            "task_claim_next",
            tasks.task_claim_next,
            PROJECT,
            i.ClaimInput,
            principal="agent",
        ),
        Operation("task_claim", tasks.task_claim, TASK, i.ClaimInput, principal="agent"),
        Operation(
            "task_submit_for_review",
            tasks.task_submit_for_review,
            TASK,
            i.SubmitInput,
            principal="agent",
        ),
        Operation("task_block", tasks.task_block, TASK, i.BlockInput, principal="agent"),
        Operation(
            "agent_handoff", agent_services.agent_handoff, TASK, i.HandoffInput, principal="agent"
        ),
        Operation(
            "agent_handoff_pickup", agent_services.agent_handoff_pickup, TASK, principal="agent"
        ),
        # -- the supervisor (`liza supervise`): each spawn of an agent command ----------------
        Operation(
            "run_start",
            agent_services.run_start,
            PROJECT,
            i.RunStartInput,
            principal="agent",
        ),
        Operation(
            "run_finish", agent_services.run_finish, RUN, i.RunFinishInput, principal="agent"
        ),
        Operation(
            "agent_quota_pause",
            agent_services.agent_quota_pause,
            PROJECT,
            i.QuotaPauseInput,
            principal="agent",
        ),
        Operation(
            "usage_record",
            agent_services.usage_record,
            PROJECT,
            i.UsageInput,
            principal="agent",
        ),
        Operation(
            "run_output_append",
            agent_services.run_output_append,
            RUN,
            i.RunOutputInput,
            principal="agent",
        ),
        # -- the code reviewer ---------------------------------------------------------------
        Operation("review_claim", reviews.review_claim, TASK, principal="agent"),
        Operation("review_claim_next", reviews.review_claim_next, PROJECT, principal="agent"),
        Operation("review_extend", reviews.review_extend, TASK, principal="agent"),
        Operation(
            "review_verdict", reviews.review_verdict, TASK, i.VerdictInput, principal="agent"
        ),
        Operation(
            "task_report_merge", tasks.task_report_merge, TASK, i.MergeInput, principal="agent"
        ),
        Operation(
            "task_report_integration_failure",
            tasks.task_report_integration_failure,
            TASK,
            i.ReasonInput,
            principal="agent",
        ),
        # -- records (agents, and members for what humans may record) ---------------------------
        Operation(
            "discovery_create",
            records.discovery_create,
            PROJECT,
            i.DiscoveryInput,
            role=Membership.Role.MEMBER,
        ),
        Operation(
            "anomaly_create",
            records.anomaly_create,
            PROJECT,
            i.AnomalyInput,
            arguments=_rename(type="anomaly_type"),
            role=Membership.Role.MEMBER,
        ),
        Operation("activity_log", records.activity_log, PROJECT, i.LogInput),
        Operation(
            "human_note_create",
            records.human_note_create,
            PROJECT,
            i.NoteInput,
            role=Membership.Role.MEMBER,
            done=lambda n: f"Note added to {n.task.key}." if n.task else "Note added.",
        ),
        Operation(
            "discovery_triage",
            records.discovery_triage,
            DISCOVERY,
            i.TriageInput,
            role=Membership.Role.MEMBER,
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
            i.ReasonInput,
            done=lambda b: "Circuit breaker resolved; continue the sprint when ready.",
        ),
        # -- human oversight of tasks (project admins) ---------------------------------------
        Operation(
            "task_override_block",
            tasks.task_override_block,
            TASK,
            i.OverrideBlockInput,
            done=lambda t: f"{t.key} blocked by override.",
        ),
        Operation(
            "task_release_claim",
            tasks.task_release_claim,
            TASK,
            i.ReasonInput,
            done=lambda t: f"Claim on {t.key} released ({t.status}).",
        ),
        Operation(
            "task_cancel",
            tasks.task_cancel,
            TASK,
            i.ReasonInput,
            done=lambda t: f"{t.key} cancelled ({t.status}).",
        ),
        Operation(
            "task_suspend",
            tasks.task_suspend,
            TASK,
            i.ReasonInput,
            done=lambda t: f"{t.key} suspended.",
        ),
        Operation("task_resume", tasks.task_resume, TASK, done=lambda t: f"{t.key} resumed."),
        Operation(
            "task_human_approve",
            reviews.task_human_approve,
            TASK,
            i.ApprovalInput,
            done=lambda t: f"{t.key} approved for merge by a human.",
        ),
        Operation(
            "task_human_reject",
            reviews.task_human_reject,
            TASK,
            i.ReasonInput,
            done=lambda t: f"{t.key} rejected by a human ({t.status}).",
        ),
        Operation(
            "task_set_limits",
            tasks.task_set_limits,
            TASK,
            i.LimitsInput,
            done=lambda t: f"{t.key}: limits updated.",
        ),
        # -- sprints, goals, the project ------------------------------------------------------
        Operation(
            "sprint_checkpoint",
            sprints.sprint_checkpoint,
            SPRINT,
            i.ReasonInput,
            done=lambda s: f"{s.sprint_id} is at CHECKPOINT: agents stop until you decide.",
        ),
        Operation(
            "sprint_resume",
            sprints.sprint_resume,
            SPRINT,
            i.DecisionInput,
            done=lambda s: f"{s.sprint_id} continues.",
        ),
        Operation(
            "sprint_abort",
            stops.sprint_abort,
            SPRINT,
            i.ReasonInput,
            done=lambda s: f"{s.sprint_id} aborted.",
        ),
        Operation(
            "sprint_set_deadline",
            sprints.sprint_set_deadline,
            SPRINT,
            i.DeadlineInput,
            done=lambda s: (
                f"{s.sprint_id}: deadline set to {s.deadline:%Y-%m-%d %H:%M} UTC."
                if s.deadline
                else f"{s.sprint_id}: deadline cleared."
            ),
        ),
        Operation(
            "goal_abort",
            goals.goal_abort,
            GOAL,
            i.ReasonInput,
            done=lambda g: f"{g.goal_id} aborted.",
        ),
        Operation(
            "project_pause",
            projects.project_pause,
            PROJECT,
            i.ReasonInput,
            done=lambda p: "Project paused: agents stop and claims are refused.",
        ),
        Operation(
            "project_resume", projects.project_resume, PROJECT, done=lambda p: "Project resumed."
        ),
        Operation(
            "project_open",
            projects.project_open,
            SITE,
            i.ProjectInput,
            done=lambda p: f"Project {p.slug} created: write its goal.",
        ),
        Operation(
            "membership_invite",
            projects.membership_invite,
            PROJECT,
            i.InviteInput,
            done=lambda m: (
                f"{m.user.get_username()} is {m.role}"
                + (" with the planner right" if m.can_plan else "")
                + " here."
            ),
        ),
        Operation(
            "config_update",
            projects.config_update,
            PROJECT,
            i.ConfigInput,
            done=lambda c: "Settings saved.",
        ),
        Operation(
            "notifications_set",
            notifications.notifications_set,
            PROJECT,
            i.NotificationsInput,
            role=Membership.Role.VIEWER,
            done=lambda pref: "Notification preferences saved.",
        ),
        Operation(
            "budget_set",
            budgets.budget_set,
            PROJECT,
            i.BudgetInput,
            done=lambda b: (
                f"Budget of {b.label} set: {budgets.limit_text(b.limit_usd, b.limit_tokens)}."
                if b is not None
                else "Budget removed."
            ),
        ),
        # -- agents and keys (project admins) --------------------------------------------------
        Operation(
            "agent_disable",
            agent_services.agent_set_enabled,
            AGENT,
            arguments=lambda data: {"enabled": False},
            done=lambda a: f"{a.agent_id} disabled.",
        ),
        Operation(
            "agent_enable",
            agent_services.agent_set_enabled,
            AGENT,
            arguments=lambda data: {"enabled": True},
            done=lambda a: f"{a.agent_id} enabled.",
        ),
        Operation(
            "agent_set_availability",
            agent_services.agent_set_availability,
            AGENT,
            i.AvailabilityInput,
            done=lambda a: f"{a.agent_id} is {'overloaded' if a.overloaded else 'available'}.",
        ),
        Operation(
            "agent_key_issue",
            agent_services.agent_key_issue,
            AGENT,
            i.KeyInput,
            done=lambda issued: f"New key {issued[0].prefix}… issued.",
        ),
        Operation(
            "agent_key_revoke",
            agent_services.agent_key_revoke,
            KEY,
            done=lambda k: f"Key {k.prefix}… of {k.agent.agent_id} revoked.",
        ),
    ]
}


def operation(name: str) -> Operation:
    return OPERATIONS[name]


def resolve_target(project, target: str, names: dict[str, str]) -> Any:
    """The row an operation acts on, from the names in its URL (404 for missing or foreign).

    A sprint or goal named by its id is that one; unnamed (the API's `sprint/abort`), it is the
    project's current one — the open sprint or goal, else the latest (SPEC §13: a wrong state
    is then a 409 `invalid_transition`, and 404 only when the project never had one).
    """
    if target == PROJECT:
        return project
    if target == TASK:
        return task_get(project=project, key=names["key"])
    if target == SPRINT:
        if "sprint_id" in names:
            return sprint_get(project=project, sprint_id=names["sprint_id"])
        row = sprint_current(project=project)
    elif target == GOAL:
        if "goal_id" in names:
            return goal_get(project=project, goal_id=names["goal_id"])
        row = goal_current(project=project)
    elif target == DISCOVERY:
        return in_project(Discovery.objects.all(), project, disc_id=names["disc_id"])
    elif target == ALERT:
        return in_project(Alert.objects.all(), project, pk=names["alert_id"])
    elif target == BREAKER:
        return breaker_status(project=project)
    elif target == AGENT:
        return agent_get(project=project, agent_id=names["agent_id"])
    elif target == KEY:
        return key_get(project=project, prefix=names["prefix"])
    elif target == RUN:
        return run_get(project=project, run_id=names["run_id"])
    else:
        raise ValueError(target)
    if row is None:
        raise NotFound()
    return row
