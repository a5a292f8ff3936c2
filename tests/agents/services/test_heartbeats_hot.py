"""Heartbeats can be HOT updates on PostgreSQL (issue #14).

An UPDATE is HOT (heap-only: no index entry written, the new row version on the same page) only
when it changes no indexed column and the page has room. These tests read both conditions off
the real database: the columns the heartbeat's UPDATE statements write — those of
`liza_heartbeat_v3` (boards migration 0035), which the heartbeat calls, read from its
definition as PostgreSQL holds it — against every index of their tables, and the tables'
fillfactor. The measured HOT share is in `bench/heartbeats.py`.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services import agent_heartbeat

UPDATE = re.compile(r"\bUPDATE (?P<table>\w+)(?: \w+)? SET\s+(?P<sets>.*?)\s(?:FROM|WHERE)\s", re.S)
# Each assignment's column: at the start of the SET list or after a comma (not a comparison).
SET_COLUMN = re.compile(r"(?:^|,)\s*(\w+) = ")
HEARTBEAT_TABLES = ("agents_agent", "boards_task", "boards_review")


def indexed_columns(table: str) -> set[str]:
    """Every column any index of `table` covers (keys, INCLUDE columns, expressions' columns)."""
    with connection.cursor() as cursor:
        cursor.execute(
            r"""
            SELECT DISTINCT a.attname
            FROM pg_index i
            JOIN pg_attribute a ON a.attrelid = i.indrelid
             AND (a.attnum = ANY (i.indkey)
                  OR ((i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)
                      AND pg_get_indexdef(i.indexrelid) ~ ('\m' || a.attname || '\M')))
            WHERE i.indrelid = %s::regclass AND a.attnum > 0
            """,
            [table],
        )
        return {row[0] for row in cursor.fetchall()}


def heartbeat_updates(agent, now) -> dict[str, set[str]]:
    """The columns each table's UPDATEs write in the function the heartbeat calls (and in any
    UPDATE the service would issue itself)."""
    with CaptureQueriesContext(connection) as queries:
        agent_heartbeat(agent=agent, now=now)
    sql = [q["sql"] for q in queries.captured_queries]
    assert any("liza_heartbeat_v3(" in statement for statement in sql), sql
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE proname = 'liza_heartbeat_v3'"
        )
        sql.append(cursor.fetchone()[0])
    written: dict[str, set[str]] = {}
    for statement in sql:
        for match in UPDATE.finditer(statement.replace('"', "")):
            written.setdefault(match["table"], set()).update(SET_COLUMN.findall(match["sets"]))
    return written


@pytest.mark.django_db
def test_a_heartbeat_writes_no_indexed_column(world):
    world.claimed("task-1", coder="coder-2")
    world.under_review("task-2")  # code-reviewer-1 holds its review lease
    written = {
        **heartbeat_updates(world.agent("coder-2"), world.tick()),
        **{
            f"{table} (reviewer)": columns
            for table, columns in heartbeat_updates(world.reviewer, world.tick()).items()
        },
    }
    tables = {name.split()[0] for name in written}
    # The proof must see every row a heartbeat extends: agent, task and review leases.
    assert tables == set(HEARTBEAT_TABLES), written
    for name, columns in written.items():
        table = name.split()[0]
        assert "lease_expires" in columns
        assert not columns & indexed_columns(table), (name, columns & indexed_columns(table))


@pytest.mark.django_db
@pytest.mark.parametrize("table", HEARTBEAT_TABLES)
def test_heartbeat_tables_leave_room_on_each_page(table):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [table])
        (options,) = cursor.fetchone()
    assert "fillfactor=80" in (options or [])
