"""The oversight pages (SPEC §7): the inbox, project settings, agents and keys — and the few
forms whose shape differs from their API input (rescope rows, a discovery's new task, a task
note, enabling an agent, a key shown once).

Every form runs a declared operation (boards.operations) through `boards.board.web.actions`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from agents.models import Agent
from agents.selectors import agent_list
from agents.services import agent_create_with_key
from boards import protocol as p
from boards.board.selectors.inbox import inbox as inbox_items
from boards.board.web.board import board_page
from boards.board.web.frame import oversight_page, page_view
from boards.board.web.planning import plan_response
from boards.coordination.models.projects import Membership, Project
from boards.coordination.selectors.access import config_of, project_members
from boards.coordination.selectors.availability import agents_availability
from boards.coordination.selectors.breaker import breaker_state
from boards.coordination.selectors.budgets import budget_states
from boards.coordination.web.access import project_for_role
from boards.errors import ProtocolError, as_protocol_error
from boards.operations import inputs as i
from boards.operations import operation
from boards.protocol import NOTIFY_DIGEST_MAX_MINUTES, NotifyEvent
from boards.watch.selectors.notifications import members_notifications, notification_preferences
from boards.watch.selectors.webhooks import delivery_log

ADMIN = Membership.Role.ADMIN
MEMBER = Membership.Role.MEMBER


def render_page(
    request: HttpRequest,
    page: str,
    project: Project,
    role: str,
    *,
    status: int,
    task_key: str | None = None,
) -> HttpResponse:
    """The page a form came from, rendered in answer to the POST (after a refusal)."""
    if page == "inbox" and role == ADMIN:
        response = _inbox_page(request, project, role)
    elif page == "inbox-all" and request.user.is_staff:
        response = _inbox_page(request, None, ADMIN)
    elif page == "settings" and role == ADMIN:
        response = _settings_page(request, project, config_of(project))
    elif page == "agents" and role == ADMIN:
        response = _agents_page(request, project, role)
    elif page == "breaker":
        response = _breaker_page(request, project, role)
    elif page == "plan":
        response = plan_response(request, project, role)
    elif page == "notifications":
        response = _notifications_page(request, project, role)
    elif page == "members" and role == ADMIN:
        response = _members_page(request, project, role)
    else:
        response = board_page(request, project, role, open_task=task_key or "")
    response.status_code = status
    return response


# -- the inbox ---------------------------------------------------------------------------------


# The inbox's sections in the page's order, each by the key `inbox()` answers its items under
# (with dashes, the section's id), with its heading; templates/boards/oversight/inbox/<key>.html
# draws one item.
INBOX_SECTIONS = {
    "alerts": "Open alerts",
    "paused": "Paused projects",
    "checkpoints": "Sprints at checkpoint",
    "blocked": "Blocked tasks",
    "awaiting_approval": "Awaiting human approval",
    "integration_failed": "Integration failed",
    "discoveries": "Immediate discoveries",
    "suspended": "Suspended tasks",
}


def _inbox_page(request: HttpRequest, project: Project | None, role: str) -> HttpResponse:
    """What waits for a human in one project (SPEC §7), with the forms that resolve it; or
    (project None, site staff) in every project."""
    now = timezone.now()
    items = inbox_items(project=project, now=now)
    sections = [
        {
            "id": key.replace("_", "-"),
            "title": title,
            "items": items[key],
            "template": f"boards/oversight/inbox/{key}.html",
        }
        for key, title in INBOX_SECTIONS.items()
        if items[key]
    ]
    return oversight_page(
        request,
        "inbox" if project is not None else "inbox-all",
        project,
        role,
        template="boards/oversight/inbox.html",
        inbox=items,
        sections=sections,
        now=now,
    )


inbox = page_view(_inbox_page, role=ADMIN)


@login_required
def inbox_all(request: HttpRequest) -> HttpResponse:
    """Site staff: every project's inbox on one page, each item linking to its board."""
    if not request.user.is_staff:
        raise PermissionDenied("the cross-project inbox is for site staff")
    return _inbox_page(request, None, ADMIN)


# -- the circuit breaker ------------------------------------------------------------------------


def _breaker_page(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    """The circuit breaker's report and history (any member reads it; admins resolve)."""
    return oversight_page(request, "breaker", project, role, breaker=breaker_state(project=project))


breaker_page = page_view(_breaker_page)


# -- settings ----------------------------------------------------------------------------------

SETTINGS_FIELDS: tuple[str, ...] = (
    "max_coder_iterations",
    "max_review_cycles",
    "heartbeat_interval",
    "lease_duration",
    "lease_grace",
    "coder_poll_interval",
    "coder_max_wait",
    "integration_branch",
    "repo_url",
    "escalation_webhook",
    "webhook_secret",
    "archive_after_days",
    "watch_interval",
    "review_churn_threshold",
    "wip_limits",
    "max_concurrent",
    "stall_timeout",
    "max_stalls",
)
# What each number counts, shown beside its box (issue 24: limits "with units").
SETTING_UNITS = {
    "max_coder_iterations": "iterations",
    "max_review_cycles": "rejections",
    "heartbeat_interval": "seconds",
    "lease_duration": "seconds",
    "lease_grace": "seconds",
    "coder_poll_interval": "seconds",
    "coder_max_wait": "seconds",
    "archive_after_days": "days",
    "watch_interval": "seconds",
    "review_churn_threshold": "review cycles",
    "wip_limits": "tasks per column",
    "max_concurrent": "agents at work at once",
    "stall_timeout": "seconds",
    "max_stalls": "stalls",
}
SECRET_FIELDS = ("webhook_secret",)  # write-only: never put back into the page


def _setting_text(config: Any, name: str) -> str:
    """A setting as its form field shows it (and compares it, to save only what changed)."""
    value = getattr(config, name)
    if name == "wip_limits":
        return p.wip_limits_text(value or {})
    if name == "max_concurrent":
        return p.max_concurrent_text(value or {})
    return str(value) if value is not None else ""


def _input_type(field: Any) -> str:
    from rest_framework import serializers

    if isinstance(field, serializers.IntegerField):
        return "number"
    if isinstance(field, serializers.URLField):
        return "url"
    return "text"


def _settings_page(
    request: HttpRequest,
    project: Project,
    values: Any,
    errors: dict[str, list[str]] | None = None,
) -> HttpResponse:
    """`values`: the config, or the submitted form's values when it was refused."""
    config = config_of(project)
    fields = [
        {
            "name": name,
            "value": (
                values.get(name, "") if isinstance(values, dict) else _setting_text(values, name)
            )
            or "",
            "errors": (errors or {}).get(name, []),
            "help": i.ConfigInput().fields[name].help_text or "",
            "type": _input_type(i.ConfigInput().fields[name]),
            "unit": SETTING_UNITS.get(name, ""),
        }
        for name in SETTINGS_FIELDS
    ]
    for field in fields:
        if field["name"] in SECRET_FIELDS:
            field["value"] = ""
            field["type"] = "password"
            field["secret_set"] = bool(getattr(config, field["name"]))
    return oversight_page(
        request,
        "settings",
        project,
        ADMIN,
        fields=fields,
        budgets=budget_states(project=project),
        budget_scopes=p.BUDGET_SCOPES,
    )


@login_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    """Seed 002 `config`: shown, and saved through the `config_update` operation."""
    project, _ = project_for_role(request, slug, ADMIN)
    config = config_of(project)
    if request.method != "POST":
        return _settings_page(request, project, config)
    op = operation("config_update")
    submitted = {name: request.POST.get(name, "").strip() for name in SETTINGS_FIELDS}
    # Only what the person changed: an untouched field is not re-validated or re-saved.
    changes = {
        name: value
        for name, value in submitted.items()
        if name not in SECRET_FIELDS and value != _setting_text(config, name)
    }
    if "escalation_webhook" in changes and not changes["escalation_webhook"]:
        changes["escalation_webhook"] = None
    # A secret is never shown, so an empty box keeps it; a checkbox removes it.
    for name in SECRET_FIELDS:
        if request.POST.get(f"{name}_clear"):
            changes[name] = None
        elif submitted[name]:
            changes[name] = request.POST[name]
    if not changes:
        messages.info(request, "Nothing changed.")
        return redirect("settings", project.slug)
    try:
        op.run(target=project, actor=request.user, now=timezone.now(), data=op.validate(changes))
    except Exception as exc:
        error = as_protocol_error(exc)
        if error is None or error.status_code in (403, 404):
            raise
        messages.error(request, "The settings were not saved: correct the fields marked below.")
        response = _settings_page(
            request, project, submitted, (error.details or {}).get("fields", {})
        )
        response.status_code = error.status_code
        return response
    messages.success(request, "Settings saved: " + ", ".join(sorted(changes)) + ".")
    return redirect("settings", project.slug)


@login_required
def webhook_log(request: HttpRequest, slug: str) -> HttpResponse:
    """The escalation webhook's deliveries and each attempt (status code or error, duration):
    project admins only, like the webhook's settings."""
    project, _ = project_for_role(request, slug, ADMIN)
    config = config_of(project)
    return oversight_page(
        request,
        "webhook-log",
        project,
        ADMIN,
        template="boards/oversight/webhook.html",
        webhook_url=config.escalation_webhook,
        secret_set=bool(config.webhook_secret),
        deliveries=delivery_log(project=project),
    )


# -- notifications -----------------------------------------------------------------------------


def _notifications_page(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    """Any member: what they hear of the project, and where (issue 24); for an admin, every
    member's chat webhook too."""
    return oversight_page(
        request,
        "notifications",
        project,
        role,
        mine=notification_preferences(project=project, user=request.user),
        events=list(NotifyEvent),
        members=members_notifications(project=project) if role == ADMIN else [],
        digest_max=NOTIFY_DIGEST_MAX_MINUTES,
    )


notifications_page = page_view(_notifications_page)


# -- agents and keys ---------------------------------------------------------------------------


def _agents_page(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    """The project's agents, their keys and availability (project admins)."""
    agents = list(agent_list(project=project).prefetch_related("keys").order_by("role", "agent_id"))
    now = timezone.now()
    available = agents_availability(project_id=project.pk, agents=agents, now=now)
    for agent in agents:
        agent.availability = available[agent.pk]
    return oversight_page(
        request, "agents", project, role, agents=agents, roles=Agent.Role.choices, now=now
    )


agent_list_page = page_view(_agents_page, role=ADMIN)


def _members_page(request: HttpRequest, project: Project, role: str) -> HttpResponse:
    """Who may see and steer the project (issue 25): project admins invite and change roles."""
    return oversight_page(
        request,
        "members",
        project,
        role,
        members=project_members(project=project),
        roles=Membership.Role.values,
    )


members_page = page_view(_members_page, role=ADMIN)


@login_required
def project_new(request: HttpRequest) -> HttpResponse:
    """Site staff open a project from the board (issue 25), by the `project_open` operation;
    then they land on its planning page."""
    if not request.user.is_staff:
        raise PermissionDenied("only site staff create projects")
    status = 200
    if request.method == "POST":
        op = operation("project_open")
        try:
            project = op.run(
                target=None,
                actor=request.user,
                now=timezone.now(),
                data=op.validate({k: request.POST.get(k, "").strip() for k in ("slug", "name")}),
            )
        except Exception as exc:
            error = as_protocol_error(exc)
            if error is None:
                raise
            messages.error(request, error.message)
            status = error.status_code
        else:
            messages.success(request, op.done(project))
            return redirect("plan", project.slug)
    response = render(request, "boards/project_new.html", {"form": request.POST, "project": None})
    response.status_code = status
    return response


def key_shown(request: HttpRequest, project: Project, agent, key, plain: str, *, created):
    # Reloading must not post again (a second agent, a second key): as the agents page, the
    # address bar shows the agents page's address.
    response = oversight_page(
        request,
        "agents",
        project,
        ADMIN,
        template="boards/oversight/key_shown.html",
        status=201,
        agent=agent,
        key=key,
        plain=plain,
        created=created,
    )
    # The only copy of the key: no cache, no history entry worth keeping.
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def agent_create(request: HttpRequest, slug: str) -> HttpResponse:
    """A new agent and its first key, shown once on this response."""
    project, role = project_for_role(request, slug, ADMIN)
    post = request.POST
    data: dict[str, Any] = {
        "role": post.get("role", ""),
        "security_reviewer": post.get("security_reviewer", "") not in ("", "0", "false", "off"),
    }
    if post.get("label", "").strip():
        data["label"] = post["label"].strip()
    serializer = i.AgentCreateInput(data=data)
    try:
        if not serializer.is_valid():
            from boards.errors import validation_error

            raise validation_error(serializer.errors)
        agent, (key, plain) = agent_create_with_key(
            project=project, actor=request.user, now=timezone.now(), **serializer.validated_data
        )
    except ProtocolError as exc:
        if exc.status_code in (403, 404):
            raise
        messages.error(request, exc.message)
        return render_page(request, "agents", project, role, status=exc.status_code)
    return key_shown(request, project, agent, key, plain, created=True)


def tour(request: HttpRequest) -> HttpResponse:
    """The short tour (issue 25 "first-run guidance"): what to do first, in order. Public: it
    holds nothing of any project."""
    return render(request, "boards/tour.html")
