"""The planning page (issue 25 "plan from the board"): a goal, tasks with their dependencies,
finalizing, and a sprint of chosen tasks, each form a declared operation (boards.board.web.actions),
so a person planning is checked and audited exactly as the API's planner is, as themselves."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from boards.coordination.models.projects import Project
from boards.coordination.selectors.access import may_plan
from boards.coordination.selectors.planning import plan_state
from boards.coordination.web.access import project_for_member


def plan_response(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    context = {
        **plan_state(project=project),
        "project": project,
        "role": role,
        # The services decide; the page only offers the forms to those they will accept.
        "can_plan": may_plan(request.user, project),
        "next_page": "plan",
        "canonical_url": reverse("plan", args=[project.slug]),
    }
    return render(request, "boards/plan.html", context)


@login_required
def plan_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = project_for_member(request, slug)
    return plan_response(request, project, role)
