"""The event log and the spec history are append-only, in the ORM and in PostgreSQL itself
(SPEC §4.1; triggers of migration 0002); every event carries its one-line detail."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from boards.coordination.models.records import AppendOnlyError, Event, SpecChange
from tests.factories import T0, ProjectFactory

pytestmark = pytest.mark.django_db


def _event(project) -> Event:
    return Event.objects.create(
        project=project,
        timestamp=T0,
        actor_kind=Event.ActorKind.SYSTEM,
        actor_id="system",
        action="note",
        detail="something happened",
    )


def _spec_change(project) -> SpecChange:
    return SpecChange.objects.create(
        project=project, timestamp=T0, spec="specs/a.md", change="Initial version"
    )


ROWS = {
    "event": (_event, "boards_event", "detail"),
    "spec_change": (_spec_change, "boards_specchange", "change"),
}


def _fields(row) -> dict:
    fresh = type(row).objects.get(pk=row.pk)
    return {f.attname: getattr(fresh, f.attname) for f in type(row)._meta.concrete_fields}


@pytest.fixture(params=sorted(ROWS))
def row(request):
    make, table, text_field = ROWS[request.param]
    return make(ProjectFactory()), table, text_field


def test_save_of_an_existing_row_is_refused(row):
    obj, _, text_field = row
    before = _fields(obj)
    setattr(obj, text_field, "rewritten history")
    with pytest.raises(AppendOnlyError):
        obj.save()
    assert _fields(obj) == before


def test_delete_of_a_row_is_refused(row):
    obj, _, _ = row
    with pytest.raises(AppendOnlyError):
        obj.delete()
    assert type(obj).objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize(
    "operation",
    [
        lambda qs, field: qs.update(**{field: "rewritten"}),
        lambda qs, field: qs.delete(),
        lambda qs, field: qs.model.objects.bulk_update(list(qs), [field]),
    ],
    ids=["update", "delete", "bulk_update"],
)
def test_queryset_writes_are_refused(row, operation):
    obj, _, text_field = row
    before = _fields(obj)
    with pytest.raises(AppendOnlyError):
        operation(type(obj).objects.filter(pk=obj.pk), text_field)
    assert _fields(obj) == before


@pytest.mark.parametrize(
    "sql",
    ["UPDATE {table} SET {field} = 'rewritten' WHERE id = %s", "DELETE FROM {table} WHERE id = %s"],
    ids=["update", "delete"],
)
def test_raw_sql_is_refused_by_the_database(row, sql):
    obj, table, text_field = row
    before = _fields(obj)
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql.format(table=table, field=text_field), [obj.pk])
    # The test transaction survived the refused statement, and the row is intact.
    assert _fields(obj) == before


def test_a_new_row_is_still_accepted_after_a_refusal(row):
    obj, _, _ = row
    with pytest.raises(AppendOnlyError):
        obj.delete()
    again = ROWS["event"][0](obj.project)
    assert Event.objects.filter(pk=again.pk).exists()


@pytest.mark.parametrize("detail", ["", None])
def test_an_event_without_detail_is_refused_by_the_database(detail):
    project = ProjectFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.create(
            project=project,
            timestamp=T0,
            actor_kind=Event.ActorKind.SYSTEM,
            actor_id="system",
            action="note",
            detail=detail,
        )
    assert not Event.objects.filter(project=project).exists()
