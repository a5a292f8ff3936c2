"""The one task filter (django-filter), shared by the API's task list and the board.

Query parameters are validated here like any other input: an unknown status, a priority that
is not 1–5 (`²` included), text holding a NUL character is a 400 naming the parameter, never a
database error.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Exists, OuterRef, Q, QuerySet

from boards import protocol as p
from boards.coordination.models.tasks import Task

_no_nul = [ProhibitNullCharactersValidator()]


class _Text(django_filters.CharFilter):
    field_class = forms.CharField

    def __init__(self, *args, max_length: int = 64, **kwargs) -> None:
        super().__init__(*args, max_length=max_length, validators=_no_nul, **kwargs)


class TaskFilter(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=[(s, s) for s in p.TASK_STATES])
    assigned_to = _Text(field_name="assigned_to")
    # The board's name for the same filter.
    agent = _Text(field_name="assigned_to")
    priority = django_filters.TypedChoiceFilter(
        choices=[(str(n), str(n)) for n in range(1, 6)], coerce=int
    )
    criticality = django_filters.ChoiceFilter(choices=[(c, c) for c in p.CRITICALITIES])
    goal = _Text(field_name="goal__goal_id")
    sprint = _Text(method="in_sprint")
    q = _Text(method="search", max_length=200)

    class Meta:
        model = Task
        fields: list[str] = []

    def in_sprint(self, queryset: QuerySet[Task], name: str, value: str) -> QuerySet[Task]:
        """Planned or stretch in the sprint `value` ("all": every task)."""
        if value == "all":
            return queryset
        return queryset.filter(in_sprint_q(sprint_id=value))

    def search(self, queryset: QuerySet[Task], name: str, value: str) -> QuerySet[Task]:
        return queryset.filter(Q(key__icontains=value) | Q(description__icontains=value))


def in_sprint_q(*, sprint_id: str | None = None, sprint_pk: int | None = None) -> Q:
    """Tasks planned or stretch in one sprint, as EXISTS subqueries (no join, so no duplicate
    rows): each a probe of the task's own membership rows, whatever the planner estimates.
    As `IN (subquery) OR IN (subquery)` PostgreSQL cannot turn them into joins, and with
    statistics that make the sprint's rows look many it scanned them again for every task."""
    from boards.coordination.models.projects import Sprint

    scope = {"sprint__sprint_id": sprint_id} if sprint_pk is None else {"sprint_id": sprint_pk}
    planned = Sprint.planned.through.objects.filter(task_id=OuterRef("pk"), **scope)
    stretch = Sprint.stretch.through.objects.filter(task_id=OuterRef("pk"), **scope)
    return Q(Exists(planned)) | Q(Exists(stretch))


def filter_errors(filterset: TaskFilter) -> dict[str, list[str]]:
    return {name: [str(m) for m in messages] for name, messages in filterset.errors.items()}
