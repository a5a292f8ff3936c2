"""The dependency graph page (issue #13): `/p/<slug>/graph/?goal=…|sprint=…[&focus=KEY]`.

Server-rendered SVG (boards.selectors.graph lays it out): no script, nothing for the CSP to
allow; every node is a link to the board with that task's drawer open.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from boards.models import Goal, Sprint
from boards.selectors.access import in_project
from boards.selectors.graph import NODE_H, NODE_W, dependency_graph
from boards.selectors.sprints import goal_current, sprint_open
from boards.web.access import project_for_member

MAX_ID = 64  # goal_id, sprint_id and key are CharField(64)


@login_required
def graph(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    goal_id = request.GET.get("goal", "").strip()
    sprint_id = request.GET.get("sprint", "").strip()
    focus = request.GET.get("focus", "").strip()
    context = {"project": project, "role": role, "next_page": "graph"}
    context["goals"] = project.goals.order_by("goal_id")
    context["sprints"] = project.sprints.order_by("sprint_id")
    error = ""
    if goal_id and sprint_id:
        error = "Choose a goal or a sprint, not both."
    elif max(len(goal_id), len(sprint_id), len(focus)) > MAX_ID:
        error = f"Goal, sprint and task names are at most {MAX_ID} characters."
    if error:
        return render(request, "boards/graph.html", {**context, "error": error}, status=400)
    goal = sprint = None
    if sprint_id:
        sprint = in_project(Sprint.objects.all(), project, what="sprint", sprint_id=sprint_id)
    elif goal_id:
        goal = in_project(Goal.objects.all(), project, what="goal", goal_id=goal_id)
    elif "all" not in request.GET:
        # Nothing chosen: the open sprint, else the current goal, else every task.
        sprint = sprint_open(project=project)
        goal = None if sprint else goal_current(project=project)
    graph = dependency_graph(project=project, goal=goal, sprint=sprint)
    context.update(
        graph=graph,
        goal=goal,
        sprint=sprint,
        focus=focus,
        node_w=NODE_W,
        node_h=NODE_H,
        text_x=10,
    )
    return render(request, "boards/graph.html", context)
