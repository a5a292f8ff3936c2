"""Django admin for agents and their API keys (SPEC §3, §7).

Agents register themselves through the identity protocol (`agent_register`): the admin never
adds one, and their status, leases and task are read-only. What an admin manages here is
whether an agent may act (`enabled`), whether it counts as a security reviewer (seed 001), and
its keys: issued through `agent_key_issue` (the plain key is shown once, on the action's own
no-store response, then only its hash exists) and revoked through `agent_key_revoke`. A key's
hash is never shown nor editable. The sign-in audit of humans (django-axes) is registered here
too, read-only.
"""

from __future__ import annotations

from axes import admin as axes_admin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone

from agents.api.serializers import KEY_FIELDS
from agents.models import Agent, AgentKey, Budget, IdempotentRequest, Run, RunUsage
from agents.services import (
    agent_key_issue,
    agent_key_label,
    agent_key_revoke,
    agent_set_enabled,
    agent_set_security_reviewer,
)
from boards.admin.base import (
    AppendOnlyAdmin,
    NoAddOrChange,
    ReadOnly,
    ServiceManagedAdmin,
    ViewOnlyInline,
    related_key,
    service_actions,
)


class AgentKeyInline(ViewOnlyInline):
    # View-only: keys are issued and revoked by the actions, never through a form.
    model = AgentKey
    fields = KEY_FIELDS


@admin.register(Agent)
class AgentAdmin(ServiceManagedAdmin):
    # `enabled` and `security_reviewer` are the admin's decisions about an identity, not state
    # the protocol moves; services read them, so an edit is recorded in the event log.
    editable_fields = ("enabled", "security_reviewer")
    list_display = (
        "agent_id",
        "project",
        "role",
        "status",
        "current_task_key",
        "heartbeat",
        "lease_expires",
        "enabled",
        "security_reviewer",
    )
    list_filter = ("role", "status", "enabled", "security_reviewer", "project")
    search_fields = ("agent_id", "terminal", "project__slug")
    list_select_related = ("project", "current_task")
    inlines = (AgentKeyInline,)
    current_task_key = related_key("current_task__key", description="current task")

    def edit(self, request: HttpRequest, obj: Agent, changes) -> None:
        # Disabling takes back what the agent held (agent_set_enabled), like the board's button.
        now = timezone.now()
        if "enabled" in changes:
            agent_set_enabled(agent=obj, actor=request.user, enabled=changes["enabled"], now=now)
        if "security_reviewer" in changes:
            agent_set_security_reviewer(
                agent=obj,
                actor=request.user,
                security_reviewer=changes["security_reviewer"],
                now=now,
            )

    def has_issue_key_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.add_agentkey")

    def has_revoke_key_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.change_agentkey")

    @admin.action(description="Issue a new API key (shown once)", permissions=["issue_key"])
    def issue_key(self, request: HttpRequest, queryset: QuerySet[Agent]) -> TemplateResponse:
        issued = []
        for agent in queryset:
            key, plain = agent_key_issue(
                agent=agent,
                actor=request.user,
                now=timezone.now(),
                label=f"issued in the admin by {request.user.get_username()}",
            )
            issued.append((agent, key, plain))
        # The only time the plain keys exist: shown on this response alone — never put in the
        # messages or the session, whose next page (a board, cached or not) would show them.
        response = TemplateResponse(
            request,
            "admin/liza/keys_issued.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": "New API keys",
                "issued": issued,
            },
        )
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke every active key", permissions=["revoke_key"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        now = timezone.now()
        for agent in queryset:
            keys = list(AgentKey.objects.filter(agent=agent, revoked_at__isnull=True))
            for key in keys:
                agent_key_revoke(key=key, actor=request.user, now=now)
            self.message_user(request, f"{agent}: {len(keys)} key(s) revoked", messages.SUCCESS)

    actions = (
        "issue_key",
        "revoke_keys",
        *service_actions(
            # Seed 003 availability: overloaded, or available again (which also clears an error).
            set_availability=(
                "agent_set_availability",
                "Set availability (overloaded / available, clears an error)",
            ),
        ),
    )


@admin.register(AgentKey)
class AgentKeyAdmin(ServiceManagedAdmin):
    # The label is a note for humans; everything else belongs to agent_key_issue/_revoke.
    editable_fields = ("label",)
    exclude = ("key_hash",)
    fields = ("agent", "project", *KEY_FIELDS)
    list_display = (
        "prefix",
        "agent_id",
        "project",
        "label",
        "created",
        "last_used_at",
        "revoked_at",
        "active",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "project")
    search_fields = ("prefix", "label", "agent__agent_id", "project__slug")
    date_hierarchy = "created"
    list_select_related = ("project", "agent")
    agent_id = related_key("agent__agent_id", description="agent")

    @admin.display(description="active", boolean=True)
    def active(self, obj: AgentKey) -> bool:
        return obj.is_active

    @admin.action(description="Revoke selected keys", permissions=["transition"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[AgentKey]) -> None:
        now = timezone.now()
        for key in queryset:
            agent_key_revoke(key=key, actor=request.user, now=now)
            self.message_user(request, f"key {key.prefix}… revoked", messages.SUCCESS)

    def edit(self, request: HttpRequest, obj: AgentKey, changes) -> None:
        agent_key_label(key=obj, actor=request.user, label=changes["label"], now=timezone.now())

    actions = ("revoke",)


# -- sign-ins of humans (django-axes) ----------------------------------------------------------
# Logins belong to no project, so they are not Events: axes' own tables are their audit — every
# sign-in and sign-out (AccessLog), every failure and whether it was locked out
# (AccessFailureLog), and the failure counters (AccessAttempt). The two logs are read-only; a
# counter can be deleted, which is how a staff member unlocks an account or an address early.


@admin.register(AccessAttempt)
class AccessAttemptAdmin(NoAddOrChange, axes_admin.AccessAttemptAdmin):
    pass


@admin.register(AccessLog)
class AccessLogAdmin(ReadOnly, axes_admin.AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class AccessFailureLogAdmin(ReadOnly, axes_admin.AccessFailureLogAdmin):
    pass


@admin.register(IdempotentRequest)
class IdempotentRequestAdmin(AppendOnlyAdmin):
    """The stored first answers of agents' keyed writes (24 h): visible for debugging a retry,
    never written from the admin (the API writes them; `liza_purge_idempotency` removes them)."""

    list_display = ("created_at", "agent", "method", "path", "status_code", "key")
    list_filter = ("method", "status_code")
    search_fields = ("key", "path", "agent__agent_id")
    date_hierarchy = "created_at"
    list_select_related = ("agent",)


@admin.register(Run)
class RunAdmin(AppendOnlyAdmin):
    """The supervisors' runs of agent commands (issue 12): visible for a human asking why an
    agent keeps failing, never written from the admin (`liza supervise` reports them)."""

    list_display = (
        "started",
        "agent",
        "task",
        "ended",
        "exit_code",
        "stopped_by",
        "restart_reason",
    )
    list_filter = ("exit_code",)
    search_fields = ("agent__agent_id", "task__key", "restart_reason", "output")
    date_hierarchy = "started"
    list_select_related = ("agent", "task")


@admin.register(RunUsage)
class RunUsageAdmin(AppendOnlyAdmin):
    """What each run cost per model (issue 24): reported by supervisors and agents, never
    written from the admin."""

    list_display = ("recorded_at", "run", "agent", "task", "model", "cost_usd", "input_tokens")
    list_filter = ("model",)
    search_fields = ("agent__agent_id", "task__key", "model")
    date_hierarchy = "recorded_at"
    list_select_related = ("run", "agent", "task")


@admin.register(Budget)
class BudgetAdmin(AppendOnlyAdmin):
    """Budgets (issue 24), visible here; set, raised or removed on the board's settings page or
    through the API (`budget_set`: project admins, audited), never from the admin."""

    list_display = ("project", "scope", "subject", "limit_usd", "limit_tokens", "updated_at")
    list_filter = ("scope",)
    search_fields = ("project__slug", "subject")
    list_select_related = ("project",)
