from django.urls import path

from agents.api import views as agent_views
from boards.api import oversight, views

task = "tasks/<str:key>"

urlpatterns = [
    path("tasks", views.TaskCreateView.as_view(), name="api-tasks"),
    path("tasks/claim-next", views.ClaimNextView.as_view(), name="api-claim-next"),
    path(task, views.TaskDetailView.as_view(), name="api-task"),
    path(task + "/claim", views.ClaimView.as_view(), name="api-claim"),
    path(task + "/request-review", views.SubmitView.as_view(), name="api-request-review"),
    path(task + "/block", views.BlockView.as_view(), name="api-block"),
    path(task + "/review/claim", views.ReviewClaimView.as_view(), name="api-review-claim"),
    path(task + "/review/extend", views.ReviewExtendView.as_view(), name="api-review-extend"),
    path(task + "/verdict", views.VerdictView.as_view(), name="api-verdict"),
    path(task + "/merge", views.MergeView.as_view(), name="api-merge"),
    path(
        task + "/integration-failure",
        views.IntegrationFailureView.as_view(),
        name="api-integration-failure",
    ),
    path(task + "/finalize", views.FinalizeView.as_view(), name="api-finalize"),
    path(task + "/dependencies", views.DependenciesView.as_view(), name="api-dependencies"),
    path(task + "/rescope", views.RescopeView.as_view(), name="api-rescope"),
    path(task + "/abandon", views.AbandonView.as_view(), name="api-abandon"),
    path(task + "/release", views.ReleaseView.as_view(), name="api-release"),
    path(task + "/override-block", views.OverrideBlockView.as_view(), name="api-override-block"),
    path(task + "/handoff", agent_views.HandoffView.as_view(), name="api-handoff"),
    path(
        task + "/handoff/pickup", agent_views.HandoffPickupView.as_view(), name="api-handoff-pickup"
    ),
    path("events", views.EventListView.as_view(), name="api-events"),
    path("goal", views.GoalView.as_view(), name="api-goal"),
    path("goal/complete", views.GoalCompleteView.as_view(), name="api-goal-complete"),
    path("sprint", views.SprintView.as_view(), name="api-sprint"),
    path("work", views.WorkView.as_view(), name="api-work"),
    path("discoveries", views.DiscoveryView.as_view(), name="api-discoveries"),
    path("anomalies", views.AnomalyView.as_view(), name="api-anomalies"),
    path("log", views.LogView.as_view(), name="api-log"),
    path("agents", agent_views.AgentListView.as_view(), name="api-agents"),
    path("agents/register", agent_views.RegisterView.as_view(), name="api-register"),
    path("agents/heartbeat", agent_views.HeartbeatView.as_view(), name="api-heartbeat"),
    path("agents/<str:agent_id>", agent_views.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<str:agent_id>/keys", agent_views.AgentKeysView.as_view(), name="api-agent-keys"),
    path(
        "keys/<str:prefix>/revoke", agent_views.AgentKeyRevokeView.as_view(), name="api-key-revoke"
    ),
    # -- human oversight (SPEC §7)
    path("inbox", oversight.InboxView.as_view(), name="api-inbox"),
    path(task + "/release-claim", oversight.ReleaseClaimView.as_view(), name="api-release-claim"),
    path(task + "/cancel", oversight.CancelView.as_view(), name="api-cancel"),
    path(task + "/suspend", oversight.SuspendView.as_view(), name="api-suspend"),
    path(task + "/resume", oversight.ResumeView.as_view(), name="api-resume"),
    path(task + "/approve", oversight.HumanApproveView.as_view(), name="api-approve"),
    path(task + "/reject", oversight.HumanRejectView.as_view(), name="api-reject"),
    path(task + "/limits", oversight.LimitsView.as_view(), name="api-limits"),
    path(
        "sprint/checkpoint",
        oversight.SprintCheckpointView.as_view(),
        name="api-sprint-checkpoint",
    ),
    path("sprint/continue", oversight.SprintContinueView.as_view(), name="api-sprint-continue"),
    path("sprint/abort", oversight.SprintAbortView.as_view(), name="api-sprint-abort"),
    path("sprint/deadline", oversight.SprintDeadlineView.as_view(), name="api-sprint-deadline"),
    path("project/pause", oversight.ProjectPauseView.as_view(), name="api-project-pause"),
    path("project/resume", oversight.ProjectResumeView.as_view(), name="api-project-resume"),
    path("goal/abort", oversight.GoalAbortView.as_view(), name="api-goal-abort"),
    path("config", oversight.ConfigView.as_view(), name="api-config"),
    path("notes", oversight.NoteView.as_view(), name="api-notes"),
    path(
        "discoveries/<str:disc_id>/triage",
        oversight.DiscoveryTriageView.as_view(),
        name="api-discovery-triage",
    ),
    path(
        "agents/<str:agent_id>/disable",
        oversight.AgentDisableView.as_view(),
        name="api-agent-disable",
    ),
    path(
        "agents/<str:agent_id>/enable", oversight.AgentEnableView.as_view(), name="api-agent-enable"
    ),
]
