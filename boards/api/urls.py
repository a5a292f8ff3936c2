"""The REST API of one project (SPEC §6, §7): every path, generated from the contract.

`agents.client.contract.CONTRACT` declares each operation once (method, path, parameters, what
it answers); here each name is bound to what runs it: a declared operation (boards.operations)
made an endpoint by `operation_view`, or, for the reads and the few composite writes, its view
in boards/api/views.py. A new endpoint for a declared operation is a line in the contract.
Paths have no trailing slash; their order is the contract's (a literal path before a
parameter at the same place).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpResponse
from django.urls import URLPattern, path

from agents.client.contract import CONTRACT, Endpoint
from boards.api import hot, views
from boards.api.base import ProjectView, operation_view

# The reads and composite writes, by contract name; every other name is a declared operation.
VIEWS: dict[str, type[ProjectView] | Callable[..., HttpResponse]] = {
    "tasks_list": views.TaskListView,
    "tasks_retrieve": views.TaskDetailView,
    "events_list": views.EventListView,
    "goal_retrieve": views.GoalView,
    "sprint_retrieve": views.SprintView,
    "config_retrieve": views.ConfigView,
    "notifications_retrieve": views.NotificationsView,
    "work_for_role": views.WorkView,
    "inbox_retrieve": views.InboxView,
    "alerts_list": views.AlertView,
    "circuit_breaker_retrieve": views.CircuitBreakerView,
    "discoveries_list": views.DiscoveryView,
    "anomalies_list": views.AnomalyView,
    "runs_list": views.RunView,
    "budgets_list": views.BudgetView,
    "agents_list": views.AgentListView,
    "agents_create": views.AgentListView,
    "agents_register": views.RegisterView,
    "agents_heartbeat": views.HeartbeatView,
    "agents_retrieve": views.AgentDetailView,
    "agent_keys_list": views.AgentKeysView,
}


def endpoint_view(endpoint: Endpoint) -> type[ProjectView] | Callable[..., HttpResponse]:
    view = VIEWS.get(endpoint.name)
    return view if view is not None else operation_view(endpoint)


def django_path(endpoint: Endpoint) -> str:
    """`tasks/{key}` → `tasks/<str:key>` (an integer parameter is `<int:…>`)."""
    types = {p.name: p.type for p in endpoint.where("path")}

    def converter(match: re.Match[str]) -> str:
        name = match[1]
        return f"<{'int' if types[name] == 'integer' else 'str'}:{name}>"

    return re.sub(r"\{(\w+)\}", converter, endpoint.path)


def routes(contract: tuple[Endpoint, ...]) -> list[URLPattern]:
    """One URL pattern a path: the view of each of its methods, joined in one class."""
    by_path: dict[str, list[Endpoint]] = {}
    for endpoint in contract:
        by_path.setdefault(endpoint.path, []).append(endpoint)
    patterns = []
    for endpoints in by_path.values():
        (route,) = {e.route for e in endpoints}
        bases = tuple(dict.fromkeys(endpoint_view(e) for e in endpoints))
        view = bases[0] if len(bases) == 1 else type(f"{route}_view", bases, {})
        # A view may also be a plain function (a path of one method served outside DRF).
        callback = view.as_view() if isinstance(view, type) else view
        patterns.append(path(django_path(endpoints[0]), callback, name=route))
    return patterns


# Issue 26: the agents' two most frequent requests skip DRF's dispatch (boards/api/hot.py).
urlpatterns = hot.fast_paths(routes(CONTRACT), names=("api-heartbeat", "api-claim-next"))
