"""The dependency graph page (issue #13): `/p/<slug>/graph/?goal=…|sprint=…[&focus=KEY]`.

Server-rendered SVG (boards.insights.selectors.graph lays it out): no script, nothing for the CSP to
allow; every node is a link to the board with that task's drawer open.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.sprints import goal_current, sprint_open
from boards.coordination.web.access import project_for_member
from boards.insights.selectors.graph import NODE_H, NODE_W, Graph, dependency_graph

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
    board_url = reverse("board", args=[project.slug])
    context.update(
        graph=graph,
        goal=goal,
        sprint=sprint,
        board_url=board_url,
        svg=graph_svg(graph, board_url=board_url, focus=focus),
        table=graph_table(graph, board_url=board_url),
    )
    return render(request, "boards/graph.html", context)


# The SVG and its table are written here rather than in a template: the template engine costs
# ~1 ms a node, a 2,000-task project's graph two seconds; these f-strings escape every value
# (escape()) and cost a few µs a node.


def graph_svg(graph: Graph, *, board_url: str, focus: str) -> SafeString:
    edges = []
    for e in graph.edges:
        kind = " critical" if e.critical else ""
        kind += " cycle" if e.in_cycle else ""
        marker = "arrow-critical" if e.critical else "arrow"
        edges.append(
            f'<path class="edge{kind}" d="{e.path}" data-from="{escape(e.source.key)}" '
            f'data-to="{escape(e.target.key)}" marker-end="url(#{marker})"/>'
        )
    nodes = []
    for n in graph.nodes:
        key, status = escape(n.key), escape(n.status)
        classes = f"node status-{status}"
        classes += " critical" if n.critical else ""
        classes += " outside" if n.task.outside else ""
        classes += " cycle" if n.in_cycle else ""
        classes += " focus" if n.key == focus else ""
        who = f", {escape(n.task.assigned_to)}" if n.task.assigned_to else ""
        critical = ", on the critical path" if n.critical else ""
        about = escape(Truncator(n.task.description).chars(200))
        star = "★ " if n.critical else ""
        scope = " · other scope" if n.task.outside else ""
        nodes.append(
            # Named by its <title> (key, state, who, the path), which holds the words the box
            # shows: an aria-label would hide them from speech input (axe: label-content-name).
            f'<a href="{board_url}?task={escape(_q(n.key))}" class="{classes}" data-key="{key}" '
            f'data-status="{status}">'
            f"<title>{star}{key} {status}{scope}{who}{critical}: {about}</title>"
            f'<rect x="{n.x}" y="{n.y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{n.x + 10}" y="{n.y + 18}" class="node-key">'
            f"{star}{escape(Truncator(n.key).chars(20))}</text>"
            f'<text x="{n.x + 10}" y="{n.y + 36}" class="node-status">{status}{scope}</text></a>'
        )
    return mark_safe(  # every value above went through escape()
        f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(nodes)}</g>'
    )


def graph_table(graph: Graph, *, board_url: str) -> SafeString:
    rows = [
        f'<tr data-key="{escape(n.key)}"><th scope="row"><a href="{board_url}?task='
        f'{escape(_q(n.key))}">{escape(n.key)}</a></th><td>{escape(n.status)}</td>'
        f"<td>{escape(', '.join(n.depends_on)) or '–'}</td>"
        f"<td>{'yes' if n.critical else '–'}</td></tr>"
        for n in graph.nodes
    ]
    return mark_safe("".join(rows))  # escaped above


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")
