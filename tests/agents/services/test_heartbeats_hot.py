"""Heartbeats can be HOT updates on PostgreSQL (issue #14).

An UPDATE is HOT (heap-only: no index entry written, the new row version on the same page) only
when it changes no indexed column and the page has room. These tests read both conditions off
the real database: the columns the heartbeat's own UPDATE statements write, against every
index of their tables, and the tables' fillfactor. The measured HOT share is in
`bench/heartbeats.py`.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services import agent_heartbeat

UPDATE = re.compile(r'^UPDATE "(?P<table>\w+)" SET (?P<sets>.*?) WHERE ', re.S)
SET_COLUMN = re.compile(r'"(\w+)" = ')
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
    with CaptureQueriesContext(connection) as queries:
        agent_heartbeat(agent=agent, now=now)
    written: dict[str, set[str]] = {}
    for query in queries.captured_queries:
        match = UPDATE.match(query["sql"])
        if match:
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
