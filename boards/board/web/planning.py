"""The planning page (issue 25 "plan from the board"): a goal, tasks with their dependencies,
finalizing, and a sprint of chosen tasks, each form a declared operation (boards.board.web.actions),
so a person planning is checked and audited exactly as the API's planner is, as themselves."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from boards.board.web.frame import oversight_page, page_view
from boards.coordination.models.projects import Project
from boards.coordination.selectors.access import may_plan
from boards.coordination.selectors.planning import plan_state


def plan_response(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    context = plan_state(project=project)
    # The services decide; the page only offers the forms to those they will accept.
    context["can_plan"] = may_plan(request.user, project)
    return oversight_page(request, "plan", project, role, template="boards/plan.html", **context)


plan_page = page_view(plan_response)
