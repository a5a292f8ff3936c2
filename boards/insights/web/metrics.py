"""`GET /metrics`: the operator's Prometheus scrape (issue #11 "Operator metrics").

Protected: a bearer token from the environment (`LIZA_METRICS_TOKEN`, for Prometheus) or a
staff member's session (for a look in the browser); anything else is a 401 in the JSON error
envelope. The process counters are `liza_site.metrics`'s; the per-project gauges are read at
scrape time (`boards.insights.selectors.metrics`), and `liza_redis_up` is a live ping.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from boards.insights.selectors.metrics import operator_figures
from liza_site.exceptions import envelope
from liza_site.metrics import exposition
from liza_site.outages import redis_answers


def _allowed(request: HttpRequest) -> bool:
    token = settings.LIZA_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode()):
        return True
    return request.user.is_authenticated and request.user.is_staff


def _projects() -> Iterator[Metric]:
    now = timezone.now()
    figures = operator_figures(now=now)
    tasks = GaugeMetricFamily("liza_tasks", "Tasks per state", labels=["project", "state"])
    alerts = GaugeMetricFamily(
        "liza_open_alerts", "Open (unresolved) alerts by level", labels=["project", "level"]
    )
    soon = GaugeMetricFamily(
        "liza_leases_expiring_soon",
        "CLAIMED tasks whose lease runs out within the next minute",
        labels=["project"],
    )
    swept = GaugeMetricFamily(
        "liza_watcher_last_sweep_age_seconds",
        "Seconds since a watcher last swept the project (absent: never)",
        labels=["project"],
    )
    # Issue 24: spend only grows (a usage row keeps its largest report): counters.
    cost = CounterMetricFamily(
        "liza_cost_usd", "USD its runs cost, as the CLIs reported it", labels=["project"]
    )
    tokens = CounterMetricFamily(
        "liza_tokens", "Tokens its runs used, by kind", labels=["project", "kind"]
    )
    budgets = GaugeMetricFamily(
        "liza_budget_spent_ratio",
        "Share of each budget spent (1 = exhausted: claims refused, agents stopped)",
        labels=["project", "scope", "subject"],
    )
    for project in figures:
        cost.add_metric([project.slug], project.cost_usd)
        for kind, n in project.tokens.items():
            tokens.add_metric([project.slug, kind], n)
        for scope, subject, share in project.budgets:
            budgets.add_metric([project.slug, scope, subject], share)
        for state, n in project.tasks.items():
            tasks.add_metric([project.slug, str(state)], n)
        for level, n in project.open_alerts.items():
            alerts.add_metric([project.slug, str(level)], n)
        soon.add_metric([project.slug], project.leases_expiring_soon)
        if project.last_swept is not None:
            swept.add_metric([project.slug], (now - project.last_swept).total_seconds())
    yield from (tasks, alerts, soon, swept, cost, tokens, budgets)


def _redis(answers: bool | None) -> Iterator[Metric]:
    if answers is not None:  # None: no Redis configured (the embedded default)
        up = GaugeMetricFamily("liza_redis_up", "Whether Redis answered this scrape's ping")
        up.add_metric([], 1 if answers else 0)
        yield up


def metrics(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return JsonResponse(
            envelope("method_not_allowed", f"{request.method} is not allowed here; use GET"),
            status=405,
            headers={"Allow": "GET, HEAD"},
        )
    if not _allowed(request):
        return JsonResponse(
            envelope(
                "not_authenticated",
                "metrics need the bearer token of LIZA_METRICS_TOKEN or a staff sign-in",
            ),
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    answers = redis_answers()  # first: a failed ping is counted in this very scrape
    body = exposition(_projects, lambda: _redis(answers))
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
