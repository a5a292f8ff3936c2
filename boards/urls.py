from django.urls import path

from boards import oversight_views as o
from boards import views

task = "p/<slug:slug>/tasks/<str:key>"
sprint = "p/<slug:slug>/sprints/<str:sprint_id>"
goal = "p/<slug:slug>/goals/<str:goal_id>"

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("p/<slug:slug>/", views.board, name="board"),
    path("p/<slug:slug>/fragment", views.board_fragment, name="board-fragment"),
    path("p/<slug:slug>/tasks/<str:key>/", views.task_drawer, name="task-drawer"),
    # Human oversight (SPEC §7): pages, then POST-only actions through the services.
    path("inbox", o.inbox_all, name="inbox-all"),
    path("p/<slug:slug>/inbox", o.inbox, name="inbox"),
    path("p/<slug:slug>/settings", o.project_settings, name="settings"),
    path("p/<slug:slug>/agents", o.agent_list, name="agents"),
    path("p/<slug:slug>/controls", o.board_controls, name="board-controls"),
    path(task + "/release", o.task_release, name="task-release"),
    path(task + "/rescope", o.task_rescope, name="task-rescope"),
    path(task + "/abandon", o.task_abandon, name="task-abandon"),
    path(task + "/override-block", o.task_override_block, name="task-override-block"),
    path(task + "/release-claim", o.task_release_claim, name="task-release-claim"),
    path(task + "/cancel", o.task_cancel, name="task-cancel"),
    path(task + "/suspend", o.task_suspend, name="task-suspend"),
    path(task + "/resume", o.task_resume, name="task-resume"),
    path(task + "/approve", o.task_approve, name="task-approve"),
    path(task + "/reject", o.task_reject, name="task-reject"),
    path(task + "/limits", o.task_limits, name="task-limits"),
    path(task + "/notes", o.task_note, name="task-note"),
    path("p/<slug:slug>/notes", o.project_note, name="project-note"),
    path(sprint + "/checkpoint", o.sprint_checkpoint, name="sprint-checkpoint"),
    path(sprint + "/resume", o.sprint_resume, name="sprint-resume"),
    path(sprint + "/abort", o.sprint_abort, name="sprint-abort"),
    path(sprint + "/deadline", o.sprint_deadline, name="sprint-deadline"),
    path(goal + "/complete", o.goal_complete, name="goal-complete"),
    path(goal + "/abort", o.goal_abort, name="goal-abort"),
    path("p/<slug:slug>/pause", o.project_pause, name="project-pause"),
    path("p/<slug:slug>/resume", o.project_resume, name="project-resume"),
    path(
        "p/<slug:slug>/discoveries/<str:disc_id>/triage",
        o.discovery_triage,
        name="discovery-triage",
    ),
    path("p/<slug:slug>/agents/new", o.agent_create, name="agent-create"),
    path("p/<slug:slug>/agents/<str:agent_id>/keys", o.agent_key_issue, name="agent-key-issue"),
    path("p/<slug:slug>/agents/<str:agent_id>/enabled", o.agent_enable, name="agent-enable"),
    path("p/<slug:slug>/keys/<str:prefix>/revoke", o.agent_key_revoke, name="agent-key-revoke"),
]
