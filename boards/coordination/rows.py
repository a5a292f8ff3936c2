"""Whole rows in one plain statement: the hot paths' reads and writes.

Every claim and heartbeat locks the agent and its task, saves them, writes an event and asks
which sprint is open, and every agent request looks its key up. Through the ORM each such
statement costs ~0.3–0.8 ms of Python (a queryset built, its SQL compiled, the row turned into
a model), several times the statement itself (bench/README.md "Lean rows"). Here the SQL of a
model's row is written once per model from its own metadata (every concrete column, in field
order, so a new field needs nothing here) and the row becomes a model through `Model.from_db`,
with the converters the ORM's compiler would apply. What the rules decide stays in the
services and selectors; these only move rows.

Writes skip the `pre_save`/`post_save` signals, as `QuerySet.update` does: the models written
here (tasks, agents, reviews, events) have no receivers, and
tests/coordination/test_rows.py checks that, and that every read and write here equals the
ORM's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TypeVar

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import Aggregate, Model, QuerySet, Value

M = TypeVar("M", bound=Model)


@cache
def _columns(model: type[Model]) -> tuple[list[str], str]:
    """(attnames, quoted column list) of every concrete field, in the ORM's own order."""
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    return [f.attname for f in fields], ", ".join(quote(f.column) for f in fields)


def select_sql(model: type[Model], where: str, *, lock: bool = False, tail: str = "") -> str:
    """`SELECT <every column> FROM <table> WHERE <where> <tail>`, with `lock` FOR UPDATE."""
    _, columns = _columns(model)
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"SELECT {columns} FROM {table} WHERE {where} {tail}".rstrip()
    if lock:
        sql += " FOR UPDATE"
    return sql


def fetch(model: type[M], sql: str, params: list | tuple) -> M | None:
    """The first row `sql` (from `select_sql`) returns, as a `model`, or None."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    return from_row(model, row)


def prepared_cursor() -> CursorWrapper:
    """A cursor of the default connection whose statements PostgreSQL prepares: each is parsed
    and planned once per connection (after `prepare_threshold` calls, liza_site/settings.py),
    not at every call. For the hot statements only (the heartbeat's, claim-next's, review
    claim-next's): long texts whose parse and plan were ~60 % of a heartbeat's database CPU
    (bench/README.md). Django's own cursor binds parameters client-side, so nothing can be
    prepared on it; this one binds them server-side (psycopg's `Cursor`, Django's
    `ServerBindingCursor`), wrapped as `connection.cursor()` wraps its own: the same database
    errors, the same query log (DEBUG, `CaptureQueriesContext`), the same health check."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = ServerBindingCursor(connection.connection)
    if connection.queries_logged:
        return _PreparedDebugCursor(raw, connection)
    return connection.make_cursor(raw)


class _PreparedDebugCursor(CursorDebugWrapper):
    """Logs a prepared statement as Django logs its own cursor's: with its values bound in.
    (Django reads the text back from psycopg's client-side query, which a server-side binding
    cursor does not have: its log would say None once the statement is prepared.)"""

    def execute(self, sql, params=None):
        with self.debug_sql(self.db.ops.compose_sql(sql, params or ())):
            return super(CursorDebugWrapper, self).execute(sql, params)


def select_list(model: type[Model], alias: str) -> str:
    """The model's columns as `alias."column", ...`, in `from_row`'s order, for a statement
    that joins several tables and turns each slice of its row into a model."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


def from_row(model: type[M], values: tuple) -> M:
    """A `model` from its slice of a joined row (`select_list`)."""
    names, _ = _columns(model)
    return model.from_db(connection.alias, names, _converted(model, values))


def get_locked(model: type[M], pk: int) -> M:
    """The row `pk` under a row lock; `model.DoesNotExist` when it is gone, as `.get()`."""
    found = fetch(model, _locked_by_pk(model), [pk])
    if found is None:
        raise model.DoesNotExist(f"{model.__name__} {pk} does not exist")
    return found


@cache
def _locked_by_pk(model: type[Model]) -> str:
    pk = connection.ops.quote_name(model._meta.pk.column)
    return select_sql(model, f"{pk} = %s", lock=True)


def save_fields(instance: Model, fields: list[str] | tuple[str, ...] | None = None) -> bool:
    """UPDATE the named fields of `instance` (every concrete field but the key when None), each
    value prepared for the database by its own field, as `Model.save(update_fields=...)`; False
    when the row is gone."""
    meta = instance._meta
    if fields is None:
        # A field not loaded (`.only()`) is not written, as `Model.save()` leaves it too.
        deferred = instance.get_deferred_fields()
        chosen = [
            f for f in meta.concrete_fields if not f.primary_key and f.attname not in deferred
        ]
    else:
        chosen = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in chosen)
    values = [f.get_db_prep_save(f.pre_save(instance, False), connection) for f in chosen]
    table = quote(meta.db_table)
    where = f"{quote(meta.pk.column)} = %s"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {assignments} WHERE {where}", [*values, instance.pk])
        return cursor.rowcount == 1


def _converted(model: type[Model], row: tuple) -> tuple:
    """The row's values as the ORM would give them: the backend's converters (JSON text) and
    each field's `from_db_value`."""
    converters = _converters(model)
    if not converters:
        return row
    values = list(row)
    for index, expression, funcs in converters:
        value = values[index]
        for func in funcs:
            value = func(value, expression, connection)
        values[index] = value
    return tuple(values)


@cache
def _converters(model: type[Model]) -> list[tuple[int, object, list]]:
    """Per column, the converters the ORM's compiler would apply (its `get_converters`)."""
    out = []
    for index, field in enumerate(model._meta.concrete_fields):
        expression = field.get_col(model._meta.db_table)
        funcs = connection.ops.get_db_converters(expression) + expression.get_db_converters(
            connection
        )
        if funcs:
            out.append((index, expression, funcs))
    return out


def insert(instance: Model) -> None:
    """INSERT `instance` (every concrete field but an automatic key) and set its key, as
    `Model.save()` does for a new row."""
    meta = instance._meta
    fields = [f for f in meta.concrete_fields if f is not meta.auto_field]
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    returning = meta.auto_field is not None and connection.features.can_return_columns_from_insert
    if returning:
        sql += f" RETURNING {quote(meta.pk.column)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        if meta.auto_field is not None:
            pk = cursor.fetchone()[0] if returning else cursor.lastrowid
            setattr(instance, meta.pk.attname, pk)
    instance._state.adding = False
    instance._state.db = connection.alias


def aggregates(*parts: tuple[QuerySet, dict[str, Aggregate]]) -> dict[str, object]:
    """`queryset.aggregate(**named)` for each part, in one statement: each part's own SQL (the
    ORM's, its filters unchanged) as a one-row subquery, side by side. For a page that reads
    several counts of different tables (the board header); the names must differ across parts."""
    return aggregated(*aggregates_sql(*parts))


def aggregates_sql(*parts: tuple[QuerySet, dict[str, Aggregate]]) -> tuple[str, list]:
    """`aggregates`' statement, to run with `aggregated` (or to keep: `compiled`)."""
    sqls, params, names = [], [], []
    for rows, named in parts:
        # Grouped by a constant, which the ORM leaves out of GROUP BY: a plain aggregate.
        query = rows.order_by().annotate(_one=Value(1)).values("_one").annotate(**named).query
        sql, part_params = query.sql_with_params()
        sqls.append(f"({sql}) AS part{len(sqls)}")
        params.extend(part_params)
        names.extend(named)
    columns = ", ".join(connection.ops.quote_name(n) for n in names)
    return f"SELECT {columns} FROM {' CROSS JOIN '.join(sqls)}", params


def aggregated(sql: str, params: list) -> dict[str, object]:
    """The one row of an `aggregates_sql` statement, by name."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


# Statements built through the ORM once per shape (`compiled`), by key, the latest used kept;
# None for a shape that cannot be kept. Views run in several threads of one process.
_SHAPES: OrderedDict[object, list[tuple[str, tuple, tuple[tuple[int, int], ...]]] | None] = (
    OrderedDict()
)
_SHAPES_LOCK = threading.Lock()
SHAPES_KEPT = 512
_STAND_IN_BASE = -7_361_000_000_000


def _stand_in(n: int, value: object) -> object:
    """A value of `value`'s kind that nothing else in a statement holds, the `n`th."""
    if isinstance(value, datetime):
        return datetime(1901, 2, 3, tzinfo=UTC) + timedelta(microseconds=n + 1)
    if isinstance(value, int) and not isinstance(value, bool):
        return _STAND_IN_BASE - n
    raise TypeError(f"no stand-in for {value!r}: only ids and moments vary in a shape")


def _shape(build, values: tuple):
    """`build`'s statements with stand-ins for `values`, and where each one went."""
    stand_ins = [_stand_in(n, value) for n, value in enumerate(values)]
    shapes = []
    for sql, params in build(*stand_ins):
        slots = tuple(
            (i, n)
            for i, param in enumerate(params)
            for n, stand_in in enumerate(stand_ins)
            if type(param) is type(stand_in) and param == stand_in
        )
        shapes.append((sql, tuple(params), slots))
    found = {n for *_, slots in shapes for _, n in slots}
    written = any(str(s) in sql for s in stand_ins for sql, *_ in shapes)
    return shapes if found == set(range(len(stand_ins))) and not written else None


def compiled(key: object, build, *values) -> list[tuple[str, list]]:
    """The statements `build(*values)` answers (each `(sql, params)`, as
    `query.sql_with_params()`), built and compiled by the ORM once per process for `key`,
    the shape of the statements: whatever else they depend on (filters, which parts are
    there). `values` (ids and moments, which may change with every call) are bound in the
    params where the ORM put them. Building and compiling a page's querysets cost several
    times their statements (a filtered, windowed selection: 3–4 ms of Python); this costs a
    dict lookup. The first build is with stand-ins for `values`: a shape whose SQL holds one
    written out, or whose params miss one, is not kept, and is built for every call instead.
    """
    with _SHAPES_LOCK:
        known = key in _SHAPES
        shapes = _SHAPES.get(key)
        if known:
            _SHAPES.move_to_end(key)
    if not known:
        shapes = _shape(build, values)
        with _SHAPES_LOCK:
            _SHAPES[key] = shapes
            while len(_SHAPES) > SHAPES_KEPT:
                _SHAPES.popitem(last=False)
    if shapes is None:
        return [(sql, list(params)) for sql, params in build(*values)]
    out = []
    for sql, params, slots in shapes:
        bound = list(params)
        for i, n in slots:
            bound[i] = values[n]
        out.append((sql, bound))
    return out
