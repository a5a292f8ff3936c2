"""The board's web pages (SPEC §7); the REST API is in boards/api/urls.py."""

from django.urls import path

from boards.board.web import actions, board, pages, planning
from boards.board.web.actions import ACTIONS as A
from boards.insights.web import activity, graph, insights, metrics

project = "p/<slug:slug>"
task = "p/<slug:slug>/tasks/<str:key>"
sprint = "p/<slug:slug>/sprints/<str:sprint_id>"
goal = "p/<slug:slug>/goals/<str:goal_id>"

urlpatterns = [
    path("", board.project_list, name="project-list"),
    path("metrics", metrics.metrics, name="metrics"),
    path("tour/", pages.tour, name="tour"),
    path("projects/new", pages.project_new, name="project-new"),
    path("p/<slug:slug>/", board.board, name="board"),
    path("p/<slug:slug>/fragment", board.board_fragment, name="board-fragment"),
    path("p/<slug:slug>/tasks/<str:key>/", board.task_drawer, name="task-drawer"),
    path("p/<slug:slug>/controls", board.board_controls, name="board-controls"),
    path("p/<slug:slug>/graph/", graph.graph, name="graph"),
    path("p/<slug:slug>/activity/", activity.activity_page, name="activity"),
    path("p/<slug:slug>/activity/rows", activity.activity_rows, name="activity-rows"),
    # Insights and agent pages (issue #13): any member reads them.
    path("p/<slug:slug>/insights/", insights.insights_page, name="insights"),
    path("p/<slug:slug>/agents/<str:agent_id>/", insights.agent_page, name="agent-page"),
    # Human oversight (SPEC §7): pages, then POST-only actions, each a declared operation.
    path("inbox", pages.inbox_all, name="inbox-all"),
    path("p/<slug:slug>/inbox", pages.inbox, name="inbox"),
    path("p/<slug:slug>/settings", pages.project_settings, name="settings"),
    path("p/<slug:slug>/notifications", pages.notifications_page, name="notifications"),
    path("p/<slug:slug>/notifications/set", A["notifications_set"], name="notifications-set"),
    path("p/<slug:slug>/plan/", planning.plan_page, name="plan"),
    path("p/<slug:slug>/plan/goal", A["goal_create"], name="plan-goal"),
    path("p/<slug:slug>/plan/tasks", A["task_create"], name="plan-task"),
    path(task + "/finalize", A["task_finalize"], name="plan-finalize"),
    path(task + "/edit", A["task_edit"], name="plan-task-edit"),
    path(goal + "/edit", A["goal_edit"], name="plan-goal-edit"),
    path(sprint + "/complete", A["sprint_complete"], name="sprint-complete"),
    path("p/<slug:slug>/plan/sprint", A["sprint_create"], name="plan-sprint"),
    path("p/<slug:slug>/webhook", pages.webhook_log, name="webhook-log"),
    path("p/<slug:slug>/agents", pages.agent_list_page, name="agents"),
    path("p/<slug:slug>/members", pages.members_page, name="members"),
    path("p/<slug:slug>/members/invite", A["membership_invite"], name="member-invite"),
    path(task + "/release", A["task_release"], name="task-release"),
    path(task + "/rescope", A["task_rescope"], name="task-rescope"),
    path(task + "/abandon", A["task_abandon"], name="task-abandon"),
    path(task + "/override-block", A["task_override_block"], name="task-override-block"),
    path(task + "/release-claim", A["task_release_claim"], name="task-release-claim"),
    path(task + "/cancel", A["task_cancel"], name="task-cancel"),
    path(task + "/suspend", A["task_suspend"], name="task-suspend"),
    path(task + "/resume", A["task_resume"], name="task-resume"),
    path(task + "/approve", A["task_approve"], name="task-approve"),
    path(task + "/reject", A["task_reject"], name="task-reject"),
    path(task + "/limits", A["task_limits"], name="task-limits"),
    path(task + "/notes", actions.task_note, name="task-note"),
    path("p/<slug:slug>/notes", A["project_note"], name="project-note"),
    path(
        "p/<slug:slug>/alerts/<int:alert_id>/acknowledge",
        A["alert_acknowledge"],
        name="alert-acknowledge",
    ),
    path("p/<slug:slug>/breaker", pages.breaker_page, name="breaker"),
    path("p/<slug:slug>/breaker/resolve", A["circuit_breaker_resolve"], name="breaker-resolve"),
    path(sprint + "/checkpoint", A["sprint_checkpoint"], name="sprint-checkpoint"),
    path(sprint + "/resume", A["sprint_resume"], name="sprint-resume"),
    path(sprint + "/abort", A["sprint_abort"], name="sprint-abort"),
    path(sprint + "/deadline", A["sprint_deadline"], name="sprint-deadline"),
    path(goal + "/complete", A["goal_complete"], name="goal-complete"),
    path(goal + "/abort", A["goal_abort"], name="goal-abort"),
    path("p/<slug:slug>/budgets", A["budget_set"], name="budget-set"),
    path("p/<slug:slug>/pause", A["project_pause"], name="project-pause"),
    path("p/<slug:slug>/resume", A["project_resume"], name="project-resume"),
    path(
        "p/<slug:slug>/discoveries/<str:disc_id>/triage",
        A["discovery_triage"],
        name="discovery-triage",
    ),
    path("p/<slug:slug>/agents/new", pages.agent_create, name="agent-create"),
    path(
        "p/<slug:slug>/agents/<str:agent_id>/keys", actions.agent_key_issue, name="agent-key-issue"
    ),
    path("p/<slug:slug>/agents/<str:agent_id>/enabled", actions.agent_enable, name="agent-enable"),
    path(
        "p/<slug:slug>/agents/<str:agent_id>/availability",
        actions.agent_availability,
        name="agent-availability",
    ),
    path(
        "p/<slug:slug>/keys/<str:prefix>/revoke", actions.agent_key_revoke, name="agent-key-revoke"
    ),
]
