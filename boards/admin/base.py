"""The admin's shared machinery: view-only bases for rows that services own, the action runner
that calls a declared operation with `actor=request.user`, the changelist's columns (a related
row's key, an excerpt, a list of task keys).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.text import Truncator

from boards.errors import ProtocolValidationError, as_protocol_error
from boards.operations import Operation, operation


def error_text(exc: Exception) -> str | None:
    """The one message of a refusal (boards.errors); None for a real bug, which must surface."""
    error = as_protocol_error(exc)
    return error.message if error is not None else None


def model_field_names(model: type[models.Model]) -> tuple[str, ...]:
    """Every concrete and many-to-many field of `model` except the automatic primary key."""
    opts = model._meta
    return tuple(
        f.name for f in [*opts.fields, *opts.many_to_many] if not (f.primary_key and f.auto_created)
    )


def excerpt(text: str, length: int = 80) -> str:
    return Truncator(text).chars(length)


class NoAddOrChange:
    """A mixin for an admin (or inline) that shows rows and never adds nor edits one."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnly(NoAddOrChange):
    """A mixin: shown, never added, edited nor deleted, by anybody (superusers included)."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AppendOnlyAdmin(ReadOnly, admin.ModelAdmin):
    """The log: visible, never written from the admin, by anybody (superusers included)."""


class ViewOnlyInline(ReadOnly, admin.TabularInline):
    """Rows listed under their parent: Django never validates nor saves a view-only inline's
    forms, so nothing is written through it; each row links to its own page."""

    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Every field it shows, so none of them is a form field.
        return tuple(self.fields or ())


class ServiceManagedAdmin(admin.ModelAdmin):
    """A domain model whose rows only services create and move.

    `editable_fields` names the fields a change form may write: presentation or configuration
    with no protocol meaning. Everything else, `status` always, is read-only; with no editable
    field the change view is view-only (no save button, a POST is refused with 403).
    """

    editable_fields: tuple[str, ...] = ()

    def __init__(self, model: type[models.Model], admin_site: admin.AdminSite) -> None:
        if "status" in self.editable_fields:
            raise ImproperlyConfigured(f"{type(self).__name__}: status is never editable")
        super().__init__(model, admin_site)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(self.editable_fields) and super().has_change_permission(request, obj)

    def has_transition_permission(self, request: HttpRequest) -> bool:
        """Running a service from an action: the Django `change` permission on the model.

        (`has_change_permission` above is about the form; the services then check the
        protocol role themselves, and site staff count as admins of every project.)
        """
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        hidden = set(self.exclude or ())
        fields = [
            name
            for name in model_field_names(self.model)
            if name not in self.editable_fields and name not in hidden
        ]
        helpers_ = [name for name in self.readonly_fields if name not in fields]
        return (*fields, *helpers_)

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool):
        """An edit goes through the model's service (`edit`), which checks, saves and audits;
        the form never writes the row itself."""
        changed = {
            name: form.cleaned_data[name]
            for name in form.changed_data
            if name in self.editable_fields
        }
        if not (change and changed):
            return
        try:
            self.edit(request, type(obj).objects.get(pk=obj.pk), changed)
        except Exception as exc:
            message = error_text(exc)
            if message is None:
                raise
            request._liza_refused = True  # type: ignore[attr-defined]
            self.message_user(request, f"{obj}: not saved: {message}", messages.ERROR)

    def edit(self, request: HttpRequest, obj: Any, changes: dict[str, Any]) -> None:
        """Run the service that edits `changes` (field → new value) on `obj`."""
        raise ImproperlyConfigured(f"{type(self).__name__} edits need a service")

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs) -> None:
        # After a refused edit, Django's own "changed successfully" would be a lie.
        if getattr(request, "_liza_refused", False) and level == messages.SUCCESS:
            return
        super().message_user(request, message, level, *args, **kwargs)


def input_form(op: Operation) -> type[forms.Form] | None:
    """The intermediate page's form of an operation: one field per input field, no rules of its
    own — the operation's input validates what it sends (one definition, boards.operations)."""
    if op.input is None:
        return None
    fields: dict[str, forms.Field] = {}
    for name, field in op.input().fields.items():
        multiple = hasattr(field, "child")
        fields[name] = forms.CharField(
            required=field.required and not multiple,
            widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
            help_text=("one per line" if multiple else "") or (field.help_text or ""),
        )
        fields[name].multiple = multiple  # type: ignore[attr-defined]
    return type(f"{op.name}_form", (forms.Form,), fields)


def _input_data(form: forms.Form) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name, "")
        if getattr(field, "multiple", False):
            lines = [line.strip() for line in value.splitlines() if line.strip()]
            if lines:
                data[name] = lines
        elif value != "":
            data[name] = value
    return data


def service_action(
    name: str, *, action: str, description: str, permission: str = "transition"
) -> Callable[..., Any]:
    """An admin action running the declared operation `name` on each selected row.

    An operation with an input first shows an intermediate page listing the selection and
    asking for it (reason, decision…); the confirmed POST carries `apply=1` and the form. Each
    row gets its own success or error message: one refusal does not stop the others.
    """
    op = operation(name)
    form_class = input_form(op)

    @admin.action(description=description, permissions=[permission])
    def run(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet):
        data: dict[str, Any] = {}
        if form_class is not None:
            if not request.POST.get("apply"):
                return _action_page(modeladmin, request, queryset, run, form_class())
            form = form_class(request.POST)
            if not form.is_valid():
                return _action_page(modeladmin, request, queryset, run, form)
            data = _input_data(form)
            try:
                data = op.validate(data)
            except ProtocolValidationError as exc:
                # The operation's own rules (the same as the API's), shown on the form.
                for field, problems in exc.details["fields"].items():
                    form.add_error(field if field in form.fields else None, problems)
                return _action_page(modeladmin, request, queryset, run, form)
        _apply_each(modeladmin, request, queryset, op, data)
        return None

    run.__name__ = action  # the name the changelist posts
    return run


def service_actions(**actions: tuple[str, str]) -> tuple[Callable[..., Any], ...]:
    """A ModelAdmin's `actions`, each `action=(operation, description)`: the changelist posts
    `action`, which runs the declared `operation` (`service_action`)."""
    return tuple(
        service_action(name, action=action, description=description)
        for action, (name, description) in actions.items()
    )


def _apply_each(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: Iterable[Any],
    op: Operation,
    data: dict[str, Any],
) -> None:
    for obj in queryset:
        before = getattr(obj, "status", "")
        try:
            after = op.run(target=obj, actor=request.user, now=timezone.now(), data=data)
        except Exception as exc:
            message = error_text(exc)
            if message is None:
                raise
            modeladmin.message_user(request, f"{obj}: {message}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{obj}: {before} → {after.status}", messages.SUCCESS)


def _action_page(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    action: Callable[..., Any],
    form: forms.Form,
) -> TemplateResponse:
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": action.short_description,
        "subtitle": None,
        "opts": opts,
        "objects": list(queryset),
        "action_name": action.__name__,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "form": form,
        "media": modeladmin.media + form.media,
    }
    return TemplateResponse(request, "admin/liza/service_action.html", context)


def related_key(lookup: str, *, description: str) -> Callable[[Any, Any], str]:
    """A column showing the key of a related row (`lookup`: `relation__key_field`), sorted by
    it; "—" when there is none."""
    relation, key = lookup.split("__")

    @admin.display(description=description, ordering=lookup)
    def column(modeladmin: admin.ModelAdmin, obj: Any) -> str:
        related = getattr(obj, relation)
        return getattr(related, key) if related is not None else "—"

    return column


def excerpt_column(field: str) -> Callable[[Any, Any], str]:
    """A column showing the start of the long text `field`, headed by its name."""

    @admin.display(description=field)
    def column(modeladmin: admin.ModelAdmin, obj: Any) -> str:
        return excerpt(getattr(obj, field))

    return column


def task_keys(relation: str, *, description: str) -> Callable[[Any, Any], str]:
    """A read-only field listing the keys of the tasks in the many-to-many `relation`."""

    @admin.display(description=description)
    def column(modeladmin: admin.ModelAdmin, obj: Any) -> str:
        return ", ".join(getattr(obj, relation).values_list("key", flat=True)) or "—"

    return column


class TaskKeyColumn:
    task_key = related_key("task__key", description="task")
