"""The board's web pages (SPEC §7); the REST API is in boards/api/urls.py."""

from django.urls import path

from boards.board.web import actions, board, pages, planning
from boards.board.web.actions import ACTIONS as A
from boards.insights.web import activity, graph, insights, metrics

project = "p/<slug:slug>"
task = "p/<slug:slug>/tasks/<str:key>"
sprint = "p/<slug:slug>/sprints/<str:sprint_id>"
goal = "p/<slug:slug>/goals/<str:goal_id>"
alert = "p/<slug:slug>/alerts/<int:alert_id>"
discovery = "p/<slug:slug>/discoveries/<str:disc_id>"
agent = "p/<slug:slug>/agents/<str:agent_id>"


def actions_on(row: str, kind: str, verbs: str) -> list:
    """POST-only actions on one row, one a verb (`verbs` split on spaces): `<row>/<verb>` runs the
    declared operation `<kind>_<verb>` (dashes as underscores) and is named `<kind>-<verb>`."""
    return [
        path(f"{row}/{verb}", A[f"{kind}_{verb.replace('-', '_')}"], name=f"{kind}-{verb}")
        for verb in verbs.split()
    ]


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
    *actions_on(task, "task", "release rescope abandon override-block release-claim"),
    *actions_on(task, "task", "cancel suspend resume approve reject limits"),
    path(task + "/notes", actions.task_note, name="task-note"),
    path("p/<slug:slug>/notes", A["project_note"], name="project-note"),
    *actions_on(alert, "alert", "acknowledge"),
    path("p/<slug:slug>/breaker", pages.breaker_page, name="breaker"),
    path("p/<slug:slug>/breaker/resolve", A["circuit_breaker_resolve"], name="breaker-resolve"),
    *actions_on(sprint, "sprint", "checkpoint resume abort deadline"),
    *actions_on(goal, "goal", "complete abort"),
    path("p/<slug:slug>/budgets", A["budget_set"], name="budget-set"),
    path("p/<slug:slug>/pause", A["project_pause"], name="project-pause"),
    path("p/<slug:slug>/resume", A["project_resume"], name="project-resume"),
    *actions_on(discovery, "discovery", "triage"),
    path("p/<slug:slug>/agents/new", pages.agent_create, name="agent-create"),
    path(agent + "/keys", actions.agent_key_issue, name="agent-key-issue"),
    path(agent + "/enabled", actions.agent_enable, name="agent-enable"),
    path(agent + "/availability", actions.agent_availability, name="agent-availability"),
    path(
        "p/<slug:slug>/keys/<str:prefix>/revoke", actions.agent_key_revoke, name="agent-key-revoke"
    ),
]
