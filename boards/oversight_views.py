"""Human oversight on the board (SPEC §7 "Human actions"): pages and POST actions for people.

Every action re-checks the user's role in the project, then calls the same service as the API,
so the service checks again, locks, audits and publishes after commit; open boards see the
change live. A view never writes a domain row itself (STYLE.md).

How outcomes reach the person:
- success → a flash message and a redirect (POST-redirect-GET) to the page the form came from;
- a refusal by the protocol (`ProtocolError`, Django's `ValidationError`) → that page again,
  rendered with the error and the refusal's status (409, 400, …), never a 500;
- `PermissionDenied` → Django's 403 page; a missing or foreign object → 404.
A new agent key is the one exception to redirecting: it is shown once, on the response to the
POST that made it, and never stored where a later GET could read it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agents import services as agent_services
from agents.models import Agent, AgentKey
from boards import protocol as p
from boards import selectors
from boards.errors import ProtocolError, ProtocolValidationError
from boards.models import Discovery, Goal, Membership, Project, ProjectConfig, Sprint, Task
from boards.services import goals as goal_services
from boards.services import oversight
from boards.services import records as record_services
from boards.services import sprints as sprint_services
from boards.services import tasks as task_services
from boards.services.common import config_of
from boards.views import _board_context, project_for_member

ADMIN = Membership.Role.ADMIN
MEMBER = Membership.Role.MEMBER


# -- access ------------------------------------------------------------------------------------


def project_for_role(request: HttpRequest, slug: str, role: str) -> tuple[Project, str]:
    """The project when the user holds at least `role` in it.

    A non-member gets the 404 of a missing project (SPEC §3); a member below `role` gets 403.
    """
    project, current = project_for_member(request, slug)
    if Membership.RANK[current] < Membership.RANK[role]:
        raise PermissionDenied(f"this needs the {role} role in project {project.slug}")
    return project, current


def _task(project: Project, key: str) -> Task:
    return selectors.task_get(project=project, key=key)


def _sprint(project: Project, sprint_id: str) -> Sprint:
    sprint = Sprint.objects.filter(project=project, sprint_id=sprint_id).first()
    if sprint is None:
        raise Http404("No such sprint.")
    return sprint


def _goal(project: Project, goal_id: str) -> Goal:
    goal = Goal.objects.filter(project=project, goal_id=goal_id).first()
    if goal is None:
        raise Http404("No such goal.")
    return goal


def _discovery(project: Project, disc_id: str) -> Discovery:
    discovery = Discovery.objects.filter(project=project, disc_id=disc_id).first()
    if discovery is None:
        raise Http404("No such discovery.")
    return discovery


def _agent(project: Project, agent_id: str) -> Agent:
    agent = Agent.objects.filter(project=project, agent_id=agent_id).first()
    if agent is None:
        raise Http404("No such agent.")
    return agent


def _key(project: Project, prefix: str) -> AgentKey:
    key = AgentKey.objects.filter(project=project, prefix=prefix).select_related("agent").first()
    if key is None:
        raise Http404("No such key.")
    return key


# -- where a form returns to -------------------------------------------------------------------

# A form names the page it came from (`next`); a name, never a URL, so nothing can redirect
# elsewhere.
RETURN_PAGES = ("board", "inbox", "inbox-all", "settings", "agents")


def _return_page(request: HttpRequest, default: str) -> str:
    page = request.POST.get("next", "")
    if page == "inbox-all" and not request.user.is_staff:
        page = "inbox"
    return page if page in RETURN_PAGES else default


def _return_url(page: str, project: Project, task_key: str | None) -> str:
    if page == "board":
        url = reverse("board", args=[project.slug])
        # Back to the board with the task's drawer open again.
        return f"{url}?task={task_key}" if task_key else url
    if page == "inbox-all":
        return reverse("inbox-all")
    return reverse(page, args=[project.slug])


def _render_page(
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
        response = _inbox_page(request, project)
    elif page == "inbox-all" and request.user.is_staff:
        response = _inbox_page(request, None)
    elif page == "settings" and role == ADMIN:
        response = _settings_page(request, project, ConfigForm(instance=config_of(project)))
    elif page == "agents" and role == ADMIN:
        response = _agents_page(request, project)
    else:
        response = _board_page(request, project, role, open_task=task_key)
    response.status_code = status
    return response


def _refusal_message(exc: Exception) -> str:
    if isinstance(exc, ProtocolError):
        return exc.message
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


# -- the action decorator ----------------------------------------------------------------------

Outcome = str | HttpResponse


def oversight_action(role: str, *, returns_to: str = "board") -> Callable:
    """A POST-only, role-checked action on one project.

    The wrapped function gets `(request, project, now=..., **url_kwargs)` and returns the success
    message (or a full response). Refusals become the originating page with the error.
    """

    def decorate(func: Callable[..., Outcome]) -> Callable[..., HttpResponse]:
        @functools.wraps(func)
        def view(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
            project, current = project_for_role(request, slug, role)
            page = _return_page(request, returns_to)
            task_key = kwargs.get("key") or request.POST.get("task") or None
            try:
                outcome = func(request, project, now=timezone.now(), **kwargs)
            except (ProtocolError, ValidationError) as exc:
                messages.error(request, _refusal_message(exc))
                status = exc.status_code if isinstance(exc, ProtocolError) else 400
                return _render_page(
                    request, page, project, current, status=status, task_key=task_key
                )
            if isinstance(outcome, HttpResponse):
                return outcome
            messages.success(request, outcome)
            return redirect(_return_url(page, project, task_key))

        return login_required(require_POST(view))

    return decorate


def _text(request: HttpRequest, name: str) -> str:
    return request.POST.get(name, "").strip()


def _texts(request: HttpRequest, name: str) -> list[str]:
    return [v.strip() for v in request.POST.getlist(name) if v.strip()]


# -- pages: the board with its role, the inbox, settings, agents -------------------------------


def _board_page(
    request: HttpRequest, project: Project, role: str, *, open_task: str | None = None
) -> HttpResponse:
    context = _board_context(request, project)
    context["role"] = role
    context["open_task"] = open_task or ""
    return render(request, "boards/board.html", context)


def _inbox_page(request: HttpRequest, project: Project | None) -> HttpResponse:
    """One project's inbox, or (project None, site staff) every project's."""
    now = timezone.now()
    context = {
        "project": project,
        "inbox": selectors.inbox(project=project, now=now),
        "next_page": "inbox" if project is not None else "inbox-all",
        "role": ADMIN,
        "now": now,
        "canonical_url": reverse("inbox", args=[project.slug])
        if project is not None
        else reverse("inbox-all"),
    }
    return render(request, "boards/oversight/inbox.html", context)


@login_required
def inbox(request: HttpRequest, slug: str) -> HttpResponse:
    """What waits for a human in one project (SPEC §7), with the forms that resolve it."""
    project, _ = project_for_role(request, slug, ADMIN)
    return _inbox_page(request, project)


@login_required
def inbox_all(request: HttpRequest) -> HttpResponse:
    """Site staff: every project's inbox on one page, each item linking to its board."""
    if not request.user.is_staff:
        raise PermissionDenied("the cross-project inbox is for site staff")
    return _inbox_page(request, None)


@login_required
def board_controls(request: HttpRequest, slug: str) -> HttpResponse:
    """The board's control strip, fetched again by board.js whenever the header changes."""
    project, role = project_for_role(request, slug, MEMBER)
    context = {**selectors.board_header(project=project), "role": role}
    return render(request, "boards/oversight/_board_controls.html", context)


# -- settings ----------------------------------------------------------------------------------


class ConfigForm(forms.ModelForm):
    """Seed 002 `config`; the write goes through `config_update`, never `form.save()`."""

    escalation_webhook = forms.URLField(required=False, assume_scheme="https")

    class Meta:
        model = ProjectConfig
        fields = [
            "max_coder_iterations",
            "max_review_cycles",
            "heartbeat_interval",
            "lease_duration",
            "lease_grace",
            "coder_poll_interval",
            "coder_max_wait",
            "integration_branch",
            "escalation_webhook",
            "archive_after_days",
        ]

    def _post_clean(self) -> None:
        # ModelForm would copy the values onto the config row and run its clean(); the service
        # validates and saves, so the form only parses.
        pass


def _settings_page(request: HttpRequest, project: Project, form: ConfigForm) -> HttpResponse:
    return render(
        request,
        "boards/oversight/settings.html",
        {
            "project": project,
            "form": form,
            "role": ADMIN,
            "next_page": "settings",
            "canonical_url": reverse("settings", args=[project.slug]),
        },
    )


@login_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = project_for_role(request, slug, ADMIN)
    config = config_of(project)
    if request.method != "POST":
        return _settings_page(request, project, ConfigForm(instance=config))
    form = ConfigForm(request.POST, instance=ProjectConfig(project=project))
    if not form.is_valid():
        messages.error(request, "The settings were not saved: correct the fields marked below.")
        response = _settings_page(request, project, form)
        response.status_code = 400
        return response
    changes = {
        name: value for name, value in form.cleaned_data.items() if getattr(config, name) != value
    }
    if not changes:
        messages.info(request, "Nothing changed.")
        return redirect("settings", project.slug)
    try:
        oversight.config_update(project=project, actor=request.user, now=timezone.now(), **changes)
    except (ProtocolError, ValidationError) as exc:
        if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
            for field, errors in exc.error_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        elif isinstance(exc, ProtocolValidationError) and exc.field in form.fields:
            form.add_error(exc.field, exc.message)
        messages.error(request, _refusal_message(exc))
        response = _settings_page(request, project, form)
        response.status_code = exc.status_code if isinstance(exc, ProtocolError) else 400
        return response
    messages.success(request, "Settings saved: " + ", ".join(sorted(changes)) + ".")
    return redirect("settings", project.slug)


# -- agents and keys ---------------------------------------------------------------------------


class AgentCreateForm(forms.Form):
    role = forms.ChoiceField(choices=Agent.Role.choices)
    security_reviewer = forms.BooleanField(required=False)
    label = forms.CharField(required=False, max_length=100)


def _agents_page(request: HttpRequest, project: Project) -> HttpResponse:
    agents = (
        Agent.objects.filter(project=project)
        .select_related("current_task")
        .prefetch_related("keys")
        .order_by("role", "agent_id")
    )
    return render(
        request,
        "boards/oversight/agents.html",
        {
            "project": project,
            "agents": agents,
            "create_form": AgentCreateForm(),
            "role": ADMIN,
            "next_page": "agents",
            "now": timezone.now(),
            "canonical_url": reverse("agents", args=[project.slug]),
        },
    )


@login_required
def agent_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = project_for_role(request, slug, ADMIN)
    return _agents_page(request, project)


def _key_shown(request: HttpRequest, project: Project, agent: Agent, key, plain: str, *, created):
    response = render(
        request,
        "boards/oversight/key_shown.html",
        {
            "project": project,
            "agent": agent,
            "key": key,
            "plain": plain,
            "created": created,
            "role": ADMIN,
            "next_page": "agents",
            # Reloading must not post again (a second agent, a second key): the address bar
            # shows the agents page.
            "canonical_url": reverse("agents", args=[project.slug]),
        },
        status=201,
    )
    # The only copy of the key: no cache, no history entry worth keeping.
    response["Cache-Control"] = "no-store"
    return response


@oversight_action(ADMIN, returns_to="agents")
def agent_create(request: HttpRequest, project: Project, *, now: datetime) -> Outcome:
    form = AgentCreateForm(request.POST)
    if not form.is_valid():
        raise ValidationError("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    agent = agent_services.agent_create(
        project=project,
        actor=request.user,
        role=form.cleaned_data["role"],
        now=now,
        security_reviewer=form.cleaned_data["security_reviewer"],
    )
    key, plain = agent_services.agent_key_issue(
        agent=agent, now=now, label=form.cleaned_data["label"]
    )
    return _key_shown(request, project, agent, key, plain, created=True)


@oversight_action(ADMIN, returns_to="agents")
def agent_key_issue(
    request: HttpRequest, project: Project, *, now: datetime, agent_id: str
) -> Outcome:
    agent = _agent(project, agent_id)
    key, plain = agent_services.agent_key_issue(
        agent=agent, now=now, label=_text(request, "label")[:100]
    )
    return _key_shown(request, project, agent, key, plain, created=False)


@oversight_action(ADMIN, returns_to="agents")
def agent_key_revoke(request: HttpRequest, project: Project, *, now: datetime, prefix: str):
    key = _key(project, prefix)
    agent_services.agent_key_revoke(key=key, now=now)
    return f"Key {key.prefix}… of {key.agent.agent_id} revoked."


@oversight_action(ADMIN, returns_to="agents")
def agent_enable(request: HttpRequest, project: Project, *, now: datetime, agent_id: str):
    enabled = request.POST.get("enabled") == "1"
    agent = agent_services.agent_set_enabled(
        agent=_agent(project, agent_id), actor=request.user, enabled=enabled, now=now
    )
    return f"{agent.agent_id} {'enabled' if enabled else 'disabled'}."


# -- tasks: resolving BLOCKED ------------------------------------------------------------------


@oversight_action(ADMIN)
def task_release(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    """Answer the coder's questions; the answer becomes a note for the next coder."""
    task = task_services.task_release(
        task=_task(project, key), actor=request.user, reason=_text(request, "answer"), now=now
    )
    return f"{task.key} answered and back in the queue (UNCLAIMED)."


def _rescope_rows(request: HttpRequest) -> list[dict[str, Any]]:
    """The new-task rows of a rescope form; a row without key, description and done_when is
    ignored (its priority field comes pre-filled)."""
    columns = {
        name: request.POST.getlist(f"new_{name}")
        for name in ("key", "description", "done_when", "spec_ref", "priority")
    }
    count = max((len(v) for v in columns.values()), default=0)
    rows = []
    for i in range(count):
        row = {
            name: (values[i].strip() if i < len(values) else "") for name, values in columns.items()
        }
        if not (row["key"] or row["description"] or row["done_when"]):
            continue
        spec: dict[str, Any] = {
            "key": row["key"],
            "description": row["description"],
            "done_when": row["done_when"],
        }
        if row["spec_ref"]:
            spec["spec_ref"] = row["spec_ref"]
        if row["priority"]:
            if not row["priority"].isdigit():
                raise ValidationError(f"new task {i + 1}: priority must be a number 1–5")
            spec["priority"] = int(row["priority"])
        rows.append(spec)
    return rows


@oversight_action(ADMIN)
def task_rescope(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    created = task_services.task_rescope(
        task=_task(project, key),
        actor=request.user,
        reason=_text(request, "reason"),
        new_tasks=_rescope_rows(request),
        now=now,
    )
    return f"{key} rescoped into {', '.join(t.key for t in created)}."


@oversight_action(ADMIN)
def task_abandon(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = task_services.task_abandon(
        task=_task(project, key), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{task.key} abandoned."


# -- tasks: overrides on any task --------------------------------------------------------------


@oversight_action(ADMIN)
def task_override_block(
    request: HttpRequest, project: Project, *, now: datetime, key: str
) -> Outcome:
    task = task_services.task_override_block(
        task=_task(project, key),
        actor=request.user,
        reason=_text(request, "reason"),
        questions=_texts(request, "questions")[: p.MAX_BLOCKED_QUESTIONS],
        now=now,
    )
    return f"{task.key} blocked by override."


@oversight_action(ADMIN)
def task_release_claim(
    request: HttpRequest, project: Project, *, now: datetime, key: str
) -> Outcome:
    task = oversight.task_release_claim(
        task=_task(project, key), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"Claim on {task.key} released ({task.status})."


@oversight_action(ADMIN)
def task_cancel(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = oversight.task_cancel(
        task=_task(project, key), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{task.key} cancelled ({task.status})."


@oversight_action(ADMIN)
def task_suspend(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = oversight.task_suspend(
        task=_task(project, key), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{task.key} suspended."


@oversight_action(ADMIN)
def task_resume(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = oversight.task_resume(task=_task(project, key), actor=request.user, now=now)
    return f"{task.key} resumed."


@oversight_action(ADMIN)
def task_approve(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = oversight.task_human_approve(
        task=_task(project, key), actor=request.user, note=_text(request, "note"), now=now
    )
    return f"{task.key} approved for merge by a human."


@oversight_action(ADMIN)
def task_reject(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = oversight.task_human_reject(
        task=_task(project, key), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{task.key} rejected by a human ({task.status})."


class LimitsForm(forms.Form):
    """Per-task overrides; an empty number means "the project's setting"."""

    max_iterations = forms.IntegerField(required=False, min_value=1)
    max_review_cycles = forms.IntegerField(required=False, min_value=1)
    lease_duration_override = forms.IntegerField(required=False, min_value=1)
    needs_human_approval = forms.BooleanField(required=False)
    priority = forms.TypedChoiceField(choices=[(n, n) for n in range(1, 6)], coerce=int)


def limits_initial(task: Task) -> dict[str, Any]:
    return {name: getattr(task, name, None) for name in LimitsForm.base_fields}


@oversight_action(ADMIN)
def task_limits(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    task = _task(project, key)
    form = LimitsForm(request.POST)
    if not form.is_valid():
        raise ValidationError(
            "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        )
    changes = {
        name: value
        for name, value in form.cleaned_data.items()
        if getattr(task, name, None) != value
    }
    if not changes:
        return f"{task.key}: nothing changed."
    oversight.task_set_limits(task=task, actor=request.user, now=now, **changes)
    return f"{task.key}: {', '.join(sorted(changes))} updated."


# -- notes (members) ---------------------------------------------------------------------------


@oversight_action(MEMBER)
def task_note(request: HttpRequest, project: Project, *, now: datetime, key: str) -> Outcome:
    _task(project, key)  # a foreign or missing task is a 404, not a validation error
    record_services.human_note_create(
        project=project, actor=request.user, message=_text(request, "message"), now=now, task=key
    )
    return f"Note added to {key}."


@oversight_action(MEMBER)
def project_note(request: HttpRequest, project: Project, *, now: datetime) -> Outcome:
    record_services.human_note_create(
        project=project, actor=request.user, message=_text(request, "message"), now=now
    )
    return "Note added for the project."


# -- sprint, goal, project ---------------------------------------------------------------------


@oversight_action(ADMIN)
def sprint_checkpoint(request: HttpRequest, project: Project, *, now: datetime, sprint_id: str):
    sprint_services.sprint_checkpoint(
        sprint=_sprint(project, sprint_id),
        actor=request.user,
        reason=_text(request, "reason"),
        now=now,
    )
    return f"{sprint_id} is at CHECKPOINT: agents stop until you decide."


@oversight_action(ADMIN)
def sprint_resume(request: HttpRequest, project: Project, *, now: datetime, sprint_id: str):
    sprint_services.sprint_resume(
        sprint=_sprint(project, sprint_id),
        actor=request.user,
        decision=_text(request, "decision"),
        now=now,
    )
    return f"{sprint_id} continues."


@oversight_action(ADMIN)
def sprint_abort(request: HttpRequest, project: Project, *, now: datetime, sprint_id: str):
    sprint_services.sprint_abort(
        sprint=_sprint(project, sprint_id),
        actor=request.user,
        reason=_text(request, "reason"),
        now=now,
    )
    return f"{sprint_id} aborted."


class DeadlineForm(forms.Form):
    # <input type="datetime-local"> sends "2026-01-05T10:00"; the board shows UTC.
    deadline = forms.DateTimeField(
        required=False, input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
    )


@oversight_action(ADMIN)
def sprint_deadline(request: HttpRequest, project: Project, *, now: datetime, sprint_id: str):
    form = DeadlineForm(request.POST)
    if not form.is_valid():
        raise ValidationError("deadline: " + " ".join(form.errors.get("deadline", [])))
    deadline = form.cleaned_data["deadline"]
    sprint_services.sprint_set_deadline(
        sprint=_sprint(project, sprint_id), actor=request.user, deadline=deadline, now=now
    )
    if deadline is None:
        return f"{sprint_id}: deadline cleared."
    return f"{sprint_id}: deadline set to {deadline:%Y-%m-%d %H:%M} UTC."


@oversight_action(ADMIN)
def goal_complete(request: HttpRequest, project: Project, *, now: datetime, goal_id: str):
    goal_services.goal_complete(
        goal=_goal(project, goal_id), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{goal_id} completed."


@oversight_action(ADMIN)
def goal_abort(request: HttpRequest, project: Project, *, now: datetime, goal_id: str):
    goal_services.goal_abort(
        goal=_goal(project, goal_id), actor=request.user, reason=_text(request, "reason"), now=now
    )
    return f"{goal_id} aborted."


@oversight_action(ADMIN)
def project_pause(request: HttpRequest, project: Project, *, now: datetime) -> Outcome:
    oversight.project_pause(
        project=project, actor=request.user, reason=_text(request, "reason"), now=now
    )
    return "Project paused: agents stop and claims are refused."


@oversight_action(ADMIN)
def project_resume(request: HttpRequest, project: Project, *, now: datetime) -> Outcome:
    oversight.project_resume(project=project, actor=request.user, now=now)
    return "Project resumed."


# -- discoveries -------------------------------------------------------------------------------

TRIAGE_DECISIONS = ("convert", "defer", "reject")


def _converted_task(request: HttpRequest) -> dict[str, Any]:
    """The task a discovery becomes: key required; the rest optional (the service defaults the
    description to the discovery's)."""
    spec: dict[str, Any] = {"key": _text(request, "new_key")}
    for name in ("description", "done_when", "spec_ref"):
        if value := _text(request, f"new_{name}"):
            spec[name] = value
    if priority := _text(request, "new_priority"):
        if not priority.isdigit():
            raise ValidationError("priority must be a number 1–5")
        spec["priority"] = int(priority)
    return spec


@oversight_action(MEMBER, returns_to="inbox")
def discovery_triage(request: HttpRequest, project: Project, *, now: datetime, disc_id: str):
    """Members defer or reject; converting into a task creates work, so the service asks for an
    admin (SPEC §3) and a member gets its 403."""
    discovery = _discovery(project, disc_id)
    decision = _text(request, "decision")
    if decision not in TRIAGE_DECISIONS:
        raise ValidationError(f"decision: one of {', '.join(TRIAGE_DECISIONS)}")
    task = _converted_task(request) if decision == "convert" else None
    discovery = oversight.discovery_triage(
        discovery=discovery,
        actor=request.user,
        decision=decision,
        note=_text(request, "note"),
        task=task,
        now=now,
    )
    if decision == "convert":
        return f"{disc_id} converted into the DRAFT task {discovery.converted_to_task}."
    return f"{disc_id} {discovery.triage}."
