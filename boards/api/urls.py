"""The REST API of one project (SPEC §6, §7): every path, what it runs.

Paths have no trailing slash. A write is a declared operation (boards.operations) made an
endpoint by `operation_view`; reads and the few composite writes are in boards/api/views.py.
"""

from django.urls import path

from boards.api import hot, views
from boards.api.base import operation_view as op

task = "tasks/<str:key>"
NO_BODY = (401, 403, 404, 409)

urlpatterns = [
    # -- tasks
    path("tasks", views.TaskCreateView.as_view(), name="api-tasks"),
    path(
        "tasks/claim-next",
        op(
            "task_claim_next",
            present="fresh_task",
            operation_id="tasks_claim_next",
            description="Claim the best claimable task (own REJECTED, INTEGRATION_FAILED, "
            "UNCLAIMED with every dependency MERGED by priority then age, CLAIMED with a lease "
            "expired more than lease_grace ago) under FOR UPDATE SKIP LOCKED; a coder that "
            "holds a live claim gets it back. `task` is null when there is none.",
        ).as_view(),
        name="api-claim-next",
    ),
    path(
        "reviews/claim-next",
        op(
            "review_claim_next",
            present="next_review",
            operation_id="reviews_claim_next",
            error_codes=(401, 403, 404, 409),
            description="Claim the best review open to this reviewer (READY_FOR_REVIEW by "
            "priority then age, the very slot rule of review/claim); a reviewer holding a live "
            "review gets it back. `review` and `task` are null when there is none.",
        ).as_view(),
        name="api-review-claim-next",
    ),
    path(task, views.TaskDetailView.as_view(), name="api-task"),
    path(
        task + "/claim",
        op("task_claim", present="fresh_task", operation_id="tasks_claim").as_view(),
        name="api-claim",
    ),
    path(
        task + "/request-review",
        op("task_submit_for_review", present="task", operation_id="tasks_request_review").as_view(),
        name="api-request-review",
    ),
    path(
        task + "/block",
        op("task_block", present="task", operation_id="tasks_block").as_view(),
        name="api-block",
    ),
    path(
        task + "/review/claim",
        op(
            "review_claim",
            present="review",
            status=201,
            operation_id="reviews_claim",
            error_codes=NO_BODY,
        ).as_view(),
        name="api-review-claim",
    ),
    path(
        task + "/review/extend",
        op(
            "review_extend", present="review", operation_id="reviews_extend", error_codes=NO_BODY
        ).as_view(),
        name="api-review-extend",
    ),
    path(
        task + "/verdict",
        op("review_verdict", present="task", operation_id="reviews_verdict").as_view(),
        name="api-verdict",
    ),
    path(
        task + "/merge",
        op("task_report_merge", present="task", operation_id="tasks_report_merge").as_view(),
        name="api-merge",
    ),
    path(
        task + "/integration-failure",
        op(
            "task_report_integration_failure",
            present="task",
            operation_id="tasks_report_integration_failure",
        ).as_view(),
        name="api-integration-failure",
    ),
    path(
        task + "/finalize",
        op("task_finalize", present="task", operation_id="tasks_finalize").as_view(),
        name="api-finalize",
    ),
    path(
        task + "/dependencies",
        op(
            "task_set_dependencies",
            present="task",
            method="put",
            operation_id="tasks_set_dependencies",
        ).as_view(),
        name="api-dependencies",
    ),
    path(
        task + "/rescope",
        op("task_rescope", present="tasks", status=201, operation_id="tasks_rescope").as_view(),
        name="api-rescope",
    ),
    path(
        task + "/abandon",
        op("task_abandon", present="task", operation_id="tasks_abandon").as_view(),
        name="api-abandon",
    ),
    path(
        task + "/release",
        op(
            "task_release",
            present="task",
            operation_id="tasks_release",
            description="BLOCKED → UNCLAIMED with the answer (failed_by kept).",
        ).as_view(),
        name="api-release",
    ),
    path(
        task + "/override-block",
        op(
            "task_override_block",
            present="task",
            operation_id="tasks_override_block",
            description="Human admins only: block any non-terminal task (SPEC §5.1).",
        ).as_view(),
        name="api-override-block",
    ),
    path(
        task + "/handoff",
        op("agent_handoff", present="handoff", status=201, operation_id="tasks_handoff").as_view(),
        name="api-handoff",
    ),
    path(
        task + "/handoff/pickup",
        op(
            "agent_handoff_pickup",
            present="handoff",
            operation_id="tasks_handoff_pickup",
            error_codes=NO_BODY,
        ).as_view(),
        name="api-handoff-pickup",
    ),
    # -- human oversight of a task (SPEC §7)
    path(
        task + "/release-claim",
        op(
            "task_release_claim",
            present="task",
            operation_id="tasks_release_claim",
            description="Admins: release a stuck claim. CLAIMED returns to UNCLAIMED (override "
            "block + release; the coder gets lease_lost); READY_FOR_REVIEW loses its pending "
            "review claims. Otherwise 409 conflict.",
        ).as_view(),
        name="api-release-claim",
    ),
    path(
        task + "/cancel",
        op(
            "task_cancel",
            present="task",
            operation_id="tasks_cancel",
            description="Admins: seed 004 cancel = override block + abandon (two events).",
        ).as_view(),
        name="api-cancel",
    ),
    path(
        task + "/suspend",
        op("task_suspend", present="task", operation_id="tasks_suspend").as_view(),
        name="api-suspend",
    ),
    path(
        task + "/resume",
        op(
            "task_resume", present="task", operation_id="tasks_resume", error_codes=NO_BODY
        ).as_view(),
        name="api-resume",
    ),
    path(
        task + "/approve",
        op("task_human_approve", present="task", operation_id="tasks_human_approve").as_view(),
        name="api-approve",
    ),
    path(
        task + "/reject",
        op("task_human_reject", present="task", operation_id="tasks_human_reject").as_view(),
        name="api-reject",
    ),
    path(
        task + "/limits",
        op(
            "task_set_limits",
            present="task",
            method="patch",
            operation_id="tasks_set_limits",
            description="Admins: per-task overrides (null = the project's setting).",
        ).as_view(),
        name="api-limits",
    ),
    # -- the log
    path("events", views.EventListView.as_view(), name="api-events"),
    path(
        "log",
        op(
            "activity_log",
            present="event",
            status=201,
            operation_id="log_append",
            error_codes=(400, 401, 403, 404),
        ).as_view(),
        name="api-log",
    ),
    # -- goal, sprint, project
    path("goal", views.GoalView.as_view(), name="api-goal"),
    path(
        "goal/complete",
        op("goal_complete", present="goal", operation_id="goal_complete").as_view(),
        name="api-goal-complete",
    ),
    path(
        "goal/abort",
        op(
            "goal_abort",
            present="goal",
            operation_id="goal_abort",
            description="Admins: the goal IN_PROGRESS → ABORTED (its open sprint aborted too).",
        ).as_view(),
        name="api-goal-abort",
    ),
    path("sprint", views.SprintView.as_view(), name="api-sprint"),
    path(
        "sprint/checkpoint",
        op(
            "sprint_checkpoint",
            present="sprint",
            operation_id="sprint_checkpoint",
            description="Admins: IN_PROGRESS → CHECKPOINT; agents stop (exit 42) until a decision.",
        ).as_view(),
        name="api-sprint-checkpoint",
    ),
    path(
        "sprint/continue",
        op(
            "sprint_resume",
            present="sprint",
            operation_id="sprint_continue",
            description="Admins: CHECKPOINT → IN_PROGRESS; the decision goes into the "
            "retrospective.",
        ).as_view(),
        name="api-sprint-continue",
    ),
    path(
        "sprint/abort",
        op("sprint_abort", present="sprint", operation_id="sprint_abort").as_view(),
        name="api-sprint-abort",
    ),
    path(
        "sprint/deadline",
        op(
            "sprint_set_deadline",
            present="sprint",
            method="put",
            operation_id="sprint_set_deadline",
        ).as_view(),
        name="api-sprint-deadline",
    ),
    path(
        "project/pause",
        op(
            "project_pause",
            present="project",
            operation_id="project_pause",
            description="Admins: claims are refused (`paused`), heartbeats answer stop / exit 42.",
        ).as_view(),
        name="api-project-pause",
    ),
    path(
        "project/resume",
        op(
            "project_resume",
            present="project",
            operation_id="project_resume",
            error_codes=NO_BODY,
        ).as_view(),
        name="api-project-resume",
    ),
    path("config", views.ConfigView.as_view(), name="api-config"),
    path("notifications", views.NotificationsView.as_view(), name="api-notifications"),
    path("work", views.WorkView.as_view(), name="api-work"),
    path("inbox", views.InboxView.as_view(), name="api-inbox"),
    # -- the watcher's alerts
    path("alerts", views.AlertView.as_view(), name="api-alerts"),
    path(
        "alerts/<int:alert_id>/acknowledge",
        op(
            "alert_acknowledge",
            present="alert",
            operation_id="alerts_acknowledge",
            description="Admins acknowledge an alert; it stays open until its condition clears.",
        ).as_view(),
        name="api-alert-acknowledge",
    ),
    # -- the circuit breaker
    path("circuit-breaker", views.CircuitBreakerView.as_view(), name="api-circuit-breaker"),
    path(
        "circuit-breaker/resolve",
        op(
            "circuit_breaker_resolve",
            present="breaker",
            operation_id="circuit_breaker_resolve",
            description="Admins resolve a trip with a written reason (kept in the history); "
            "continuing the sprint stays sprint/resume.",
        ).as_view(),
        name="api-circuit-breaker-resolve",
    ),
    # -- records
    path("discoveries", views.DiscoveryView.as_view(), name="api-discoveries"),
    path(
        "discoveries/<str:disc_id>/triage",
        op(
            "discovery_triage",
            present="discovery",
            operation_id="discoveries_triage",
            description="Members defer or reject a discovery; admins convert it into a DRAFT task.",
        ).as_view(),
        name="api-discovery-triage",
    ),
    path("anomalies", views.AnomalyView.as_view(), name="api-anomalies"),
    path(
        "notes",
        op(
            "human_note_create",
            present="note",
            status=201,
            operation_id="notes_create",
            error_codes=(400, 401, 403, 404),
        ).as_view(),
        name="api-notes",
    ),
    # -- the supervisors' runs (issue 12 §2)
    path("runs", views.RunView.as_view(), name="api-runs"),
    path(
        "runs/<int:run_id>/finish",
        op(
            "run_finish",
            present="run",
            operation_id="runs_finish",
            description="The spawn ended: exit code, whether the supervisor stopped it, the "
            "last ~200 lines of its output (agent keys redacted). Only the run's own agent.",
        ).as_view(),
        name="api-run-finish",
    ),
    path(
        "runs/<int:run_id>/output",
        op(
            "run_output_append",
            present="run",
            operation_id="runs_output",
            description="A running run's next output lines, streamed by its supervisor (at "
            "most 16,000 characters a request; agent keys redacted; the run keeps its last ~200 "
            "lines). Only the run's own agent, only while it runs (409 once it ended).",
        ).as_view(),
        name="api-run-output",
    ),
    # -- usage and budgets (issue 24)
    path(
        "usage",
        op(
            "usage_record",
            present="usage",
            operation_id="usage_record",
            description="A run's tokens and cost so far, per model (running totals: a repeated "
            "report counts once); by its supervisor (parsed from the CLI's output) or the agent "
            "itself. `run` defaults to the agent's running run (409 when it has none).",
        ).as_view(),
        name="api-usage",
    ),
    path("budgets", views.BudgetView.as_view(), name="api-budgets"),
    # -- agents and keys
    path("agents", views.AgentListView.as_view(), name="api-agents"),
    path("agents/register", views.RegisterView.as_view(), name="api-register"),
    path("agents/heartbeat", views.HeartbeatView.as_view(), name="api-heartbeat"),
    path(
        "agents/quota",
        op(
            "agent_quota_pause",
            present="agent",
            operation_id="agents_quota_pause",
            description="`liza supervise` met its provider's quota or rate-limit wall: it spawns "
            "nothing before `until`; the board shows when it resumes, the watcher alerts.",
        ).as_view(),
        name="api-agent-quota",
    ),
    path("agents/<str:agent_id>", views.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<str:agent_id>/keys", views.AgentKeysView.as_view(), name="api-agent-keys"),
    path(
        "agents/<str:agent_id>/disable",
        op(
            "agent_disable",
            present="agent",
            operation_id="agents_disable",
            error_codes=NO_BODY,
            description="Admins: the agent's requests get 403 and what it held is taken back.",
        ).as_view(),
        name="api-agent-disable",
    ),
    path(
        "agents/<str:agent_id>/enable",
        op(
            "agent_enable",
            present="agent",
            operation_id="agents_enable",
            error_codes=NO_BODY,
            description="Admins: a disabled agent may register and work again.",
        ).as_view(),
        name="api-agent-enable",
    ),
    path(
        "agents/<str:agent_id>/availability",
        op(
            "agent_set_availability",
            present="agent",
            operation_id="agents_availability",
            description="Admins: overloaded (takes no new work) or available (also clears an"
            " error state).",
        ).as_view(),
        name="api-agent-availability",
    ),
    path(
        "keys/<str:prefix>/revoke",
        op(
            "agent_key_revoke",
            present="key",
            operation_id="agent_keys_revoke",
            error_codes=(401, 403, 404),
        ).as_view(),
        name="api-key-revoke",
    ),
]

# Issue 26: the agents' two most frequent requests skip DRF's dispatch (boards/api/hot.py).
urlpatterns = hot.fast_paths(urlpatterns, names=("api-heartbeat", "api-claim-next"))
