"""The board's POST forms (SPEC §7 "Human actions"): each one a declared operation.

`action` turns an operation of boards.operations into a view: the form's fields become the
operation's input (validated by the same serializer as the API: a NUL byte, `²` for a number or
a 30-digit limit is a 400 naming the field, never a database error), the row comes from the URL,
the service checks the role and the state. A view never writes a domain row itself.

How outcomes reach the person:
- success → a flash message and a redirect (POST-redirect-GET) to the page the form came from;
- a refusal by the protocol → that page again, rendered with the error and the refusal's status
  (409, 400, …), never a 500;
- a missing or foreign object → 404; a role that may not → 403.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from rest_framework import serializers

from boards.board.web.pages import key_shown, render_page
from boards.coordination.models.projects import Membership, Project
from boards.coordination.selectors.tasks import task_get
from boards.coordination.web.access import project_for_role
from boards.errors import Forbidden, NotFound, ProtocolError, as_protocol_error
from boards.operations import Operation, operation, resolve_target

# A form names the page it came from (`next`); a name, never a URL, so nothing can redirect
# elsewhere.
RETURN_PAGES = (
    "board",
    "inbox",
    "inbox-all",
    "settings",
    "agents",
    "breaker",
    "plan",
    "notifications",
    "members",
)


def return_page(request: HttpRequest, default: str) -> str:
    page = request.POST.get("next", "")
    if page == "inbox-all" and not request.user.is_staff:
        page = "inbox"
    return page if page in RETURN_PAGES else default


def return_url(page: str, project: Project, task_key: str | None, *, decisive: bool = False) -> str:
    if page == "board":
        url = reverse("board", args=[project.slug])
        if task_key and decisive:
            # The decision is made: the drawer stays closed and the board shows the next card
            # that waits for a person (issue 25; board.js focuses it).
            return f"{url}?done={task_key}"
        # Back to the board with the task's drawer open again.
        return f"{url}?task={task_key}" if task_key else url
    if page == "inbox-all":
        return reverse("inbox-all")
    return reverse(page, args=[project.slug])


def form_data(op: Operation, post: QueryDict, *, checkboxes: tuple[str, ...] = ()) -> dict:
    """An HTML form as the operation's input: lists from repeated fields, an empty optional
    field left out (or null where null means "the project's setting"), `checkboxes` true when
    present and false when absent."""
    if op.input is None:
        return {}
    aliases = {name: alias for alias, name in op.form_aliases.items()}
    data: dict[str, Any] = {}
    for name, field in op.input().fields.items():
        key = aliases.get(name, name)
        if name in checkboxes:
            data[name] = post.get(key, "") not in ("", "0", "false", "off")
        elif isinstance(field, serializers.ListField):
            values = [v.strip() for v in post.getlist(key) if v.strip()]
            if values or field.required:
                data[name] = values
        elif isinstance(field, serializers.Serializer):
            continue  # nested input: the action's own form adapter builds it
        elif key in post:
            value = post.get(key, "").strip()
            if value:
                data[name] = value
            elif getattr(field, "allow_null", False):
                data[name] = None
            elif field.required or getattr(field, "allow_blank", False):
                data[name] = ""
    return data


# refused(request, project, role, page, status, task_key) -> the page again, with the error
Refused = Callable[..., HttpResponse]


def _render_refusal(request, page, project, role, *, status, task_key=None) -> HttpResponse:
    return render_page(request, page, project, role, status=status, task_key=task_key)


def run(
    request: HttpRequest,
    project: Project,
    role: str,
    op: Operation,
    *,
    target: Any,
    data: Any,
    page: str,
    task_key: str | None,
) -> HttpResponse | Any:
    """Validate and run `op`; a refusal is the page again with the error (never a 500)."""
    try:
        result = op.run(
            target=target, actor=request.user, now=timezone.now(), data=op.validate(data)
        )
    except (Forbidden, NotFound):
        raise  # Django's own 403 and 404 pages
    except Exception as exc:
        error = as_protocol_error(exc)
        if error is None:
            raise
        messages.error(request, error.message)
        return _render_refusal(
            request, page, project, role, status=error.status_code, task_key=task_key
        )
    return result


def action(
    name: str,
    *,
    returns_to: str = "board",
    form: Callable[[HttpRequest, dict[str, Any]], Any] | None = None,
    checkboxes: tuple[str, ...] = (),
    respond: Callable[..., HttpResponse] | None = None,
    decisive: bool = False,
) -> Callable[..., HttpResponse]:
    """A POST-only view running the declared operation `name` on the row its URL names.

    `decisive`: the action settles what the task waited on (an answered block, an approval, a
    cancel …): back on the board, its drawer stays closed (issue 25), where another action
    (a note, limits) opens it again.

    `form(request, url_kwargs)` builds the input where the form's shape differs from the API's
    (rescope rows, a triage's task); `respond(request, project, result)` answers instead of
    the flash-and-redirect (a new key is shown once, on the response itself).
    """
    op = operation(name)

    @functools.wraps(op.service)
    def view(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
        project, role = project_for_role(request, slug, op.role)
        page = return_page(request, returns_to)
        task_key = kwargs.get("key") or request.POST.get("task") or None
        target = resolve_target(project, op.target, kwargs)
        try:
            data = (
                form(request, kwargs)
                if form
                else form_data(op, request.POST, checkboxes=checkboxes)
            )
        except ProtocolError as exc:
            messages.error(request, exc.message)
            return _render_refusal(
                request, page, project, role, status=exc.status_code, task_key=task_key
            )
        result = run(
            request, project, role, op, target=target, data=data, page=page, task_key=task_key
        )
        if isinstance(result, HttpResponse):
            return result
        if respond is not None:
            return respond(request, project, result)
        messages.success(request, op.done(result))
        return redirect(return_url(page, project, task_key, decisive=decisive))

    view.__name__ = f"{name}_action"
    return login_required(require_POST(view))


# -- the board's forms, each a declared operation ------------------------------------------


def _issued(request: HttpRequest, project: Project, issued) -> HttpResponse:
    key, plain = issued
    return key_shown(request, project, key.agent, key, plain, created=False)


agent_key_issue = action("agent_key_issue", returns_to="agents", respond=_issued)
agent_key_revoke = action("agent_key_revoke", returns_to="agents")
agent_availability = action("agent_set_availability", returns_to="agents")


@login_required
@require_POST
def agent_enable(request: HttpRequest, slug: str, agent_id: str) -> HttpResponse:
    """One form, two operations: `enabled=1` enables, anything else disables."""
    name = "agent_enable" if request.POST.get("enabled") == "1" else "agent_disable"
    return action(name, returns_to="agents")(request, slug, agent_id=agent_id)


# -- forms whose shape differs from the API's --------------------------------------------------


def _rescope_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The new-task rows of a rescope form; a row without key, description and done_when is
    ignored (its priority field comes pre-filled)."""
    columns = {
        name: request.POST.getlist(f"new_{name}")
        for name in ("key", "description", "done_when", "spec_ref", "priority")
    }
    count = max((len(v) for v in columns.values()), default=0)
    rows = []
    for index in range(count):
        row = {
            name: (values[index].strip() if index < len(values) else "")
            for name, values in columns.items()
        }
        if not (row["key"] or row["description"] or row["done_when"]):
            continue
        rows.append({name: value for name, value in row.items() if value or name == "key"})
    return {"reason": request.POST.get("reason", "").strip(), "new_tasks": rows}


def _triage_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Members defer or reject; converting into a task creates work, so the service asks for an
    admin (SPEC §3) and a member gets its 403. The new task: key required; description (the
    discovery's by default), done_when, spec_ref and priority optional."""
    post = request.POST
    data: dict[str, Any] = {"decision": post.get("decision", "").strip()}
    if post.get("note", "").strip():
        data["note"] = post["note"].strip()
    if data["decision"] == "convert":
        task = {"key": post.get("new_key", "").strip()}
        for name in ("description", "done_when", "spec_ref", "priority"):
            if value := post.get(f"new_{name}", "").strip():
                task[name] = value
        data["task"] = task
    return data


def _task_note_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**form_data(operation("human_note_create"), request.POST), "task": kwargs["key"]}


@login_required
@require_POST
def task_note(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """A member's note on a task (a foreign or missing task is a 404, not a 400)."""
    project, _ = project_for_role(request, slug, Membership.Role.MEMBER)
    task_get(project=project, key=key)
    return _task_note(request, slug, key=key)


_task_note = action("human_note_create", form=_task_note_form)


def _limits_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    return form_data(
        operation("task_set_limits"), request.POST, checkboxes=("needs_human_approval",)
    )


def _notifications_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Two forms post here: a member's own (events as checkboxes, all unticked = none; e-mail;
    digest) and an admin's for one member's chat webhook (`user`, `chat_url`, `chat_format`)."""
    post = request.POST
    if "chat_url" in post:
        data = {name: post.get(name, "").strip() for name in ("user", "chat_url", "chat_format")}
        data = {name: value for name, value in data.items() if value or name == "chat_url"}
    else:
        data = {
            "events": post.getlist("events"),
            "email": post.get("email", "") not in ("", "0", "false", "off"),
            "digest_minutes": post.get("digest_minutes", "").strip() or "0",
        }
    return operation("notifications_set").validate(data)


def _with_blank_description(data: dict[str, Any], post: QueryDict) -> dict[str, Any]:
    """An edit form's emptied description is refused by name, never read as "unchanged"."""
    if "description" in post and not post["description"].strip():
        data["description"] = ""
    return data


def _goal_edit_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    return _with_blank_description(form_data(operation("goal_edit"), request.POST), request.POST)


def _task_edit_form(request: HttpRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    """A task's edit form, or one of its priority buttons (only `priority`). The full form says
    that it carries the dependency picker and the gate checkbox (`*_shown`), so that nothing
    selected means "none" and unticked means "no gate" there, and "unchanged" elsewhere."""
    post = request.POST
    data = _with_blank_description(form_data(operation("task_edit"), post), post)
    if "depends_on_shown" in post:
        data["depends_on"] = [v.strip() for v in post.getlist("depends_on") if v.strip()]
    if "needs_human_approval_shown" in post:
        data["needs_human_approval"] = post.get("needs_human_approval", "") not in ("", "false")
    return data


ACTIONS: dict[str, Any] = {
    # resolving BLOCKED
    "task_release": action("task_release", decisive=True),
    "task_rescope": action("task_rescope", form=_rescope_form, decisive=True),
    "task_abandon": action("task_abandon", decisive=True),
    # overrides on any task
    "task_override_block": action("task_override_block", decisive=True),
    "task_release_claim": action("task_release_claim", decisive=True),
    "task_cancel": action("task_cancel", decisive=True),
    "task_suspend": action("task_suspend"),
    "task_resume": action("task_resume"),
    "task_approve": action("task_human_approve", decisive=True),
    "task_reject": action("task_human_reject", decisive=True),
    "task_limits": action("task_set_limits", form=_limits_form),
    # notes and discoveries
    "project_note": action("human_note_create"),
    "discovery_triage": action("discovery_triage", returns_to="inbox", form=_triage_form),
    # sprint, goal, project
    "sprint_checkpoint": action("sprint_checkpoint"),
    "sprint_resume": action("sprint_resume"),
    "sprint_abort": action("sprint_abort"),
    "sprint_deadline": action("sprint_set_deadline"),
    "goal_complete": action("goal_complete"),
    "goal_abort": action("goal_abort"),
    "alert_acknowledge": action("alert_acknowledge", returns_to="inbox"),
    "circuit_breaker_resolve": action("circuit_breaker_resolve", returns_to="breaker"),
    "budget_set": action("budget_set", returns_to="settings"),
    "project_pause": action("project_pause"),
    "project_resume": action("project_resume"),
    "notifications_set": action(
        "notifications_set", returns_to="notifications", form=_notifications_form
    ),
    # planning from the board (issue 25): the planner's own operations, run as the person
    "goal_create": action("goal_create", returns_to="plan"),
    "task_create": action("task_create", returns_to="plan"),
    "task_finalize": action("task_finalize", returns_to="plan"),
    "task_edit": action("task_edit", returns_to="plan", form=_task_edit_form),
    "goal_edit": action("goal_edit", returns_to="plan", form=_goal_edit_form),
    "sprint_complete": action("sprint_complete", returns_to="plan"),
    "membership_invite": action(
        "membership_invite", returns_to="members", checkboxes=("can_plan",)
    ),
    "sprint_create": action("sprint_create", returns_to="plan"),
}
