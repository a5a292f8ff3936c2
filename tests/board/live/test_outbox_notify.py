"""The embedded default's bridge between processes (liza_site/channel_layer.py): a process that
serves no board (the watcher) notifies PostgreSQL; the server sends locally, relays what others
notify, and numbers it in its own stream."""

from __future__ import annotations

import asyncio
import json
import os

import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from boards.coordination import outbox as events
from liza_site import channel_layer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_memory_layer")]

PROJECT = 10**9 + os.getpid()  # no row needed: messages carry ids only


def _event(count: int) -> dict:
    return {
        "type": "board.event",
        "project_id": PROJECT,
        "changes": [{"kind": "task", "id": i} for i in range(count)],
    }


def _listening() -> psycopg.Connection:
    connection = psycopg.connect(**channel_layer.connection_params(), autocommit=True)
    connection.execute(f"LISTEN {channel_layer.NOTIFY_CHANNEL}")
    return connection


def _notified(connection: psycopg.Connection, timeout: float = 0.5) -> list[dict]:
    return [json.loads(n.payload) for n in connection.notifies(timeout=timeout)]


def test_a_process_serving_no_board_notifies_in_chunks_a_notify_can_carry():
    with _listening() as listener:
        assert events.send(_event(2 * events.NOTIFY_CHANGES + 50))
        notified = _notified(listener)
    assert [n["group"] for n in notified] == [events.board_group(PROJECT)] * 3
    changes = [n["message"]["changes"] for n in notified]
    assert [len(c) for c in changes] == [100, 100, 50]
    assert [c["id"] for chunk in changes for c in chunk] == list(range(250))
    # Unnumbered: the server that relays them numbers them; this process counted nothing.
    assert all("seq" not in n["message"] for n in notified)
    assert events.current_sequence(PROJECT) == 0
    assert all(len(json.dumps(n)) < 8000 for n in notified)


def test_the_server_sends_locally_numbers_what_others_notify_and_listens_again():
    layer = get_channel_layer()
    group = events.board_group(PROJECT)

    listeners = (
        "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        f" AND query = 'LISTEN {channel_layer.NOTIFY_CHANNEL}'"
    )

    async def query(sql: str):
        async with await psycopg.AsyncConnection.connect(
            **channel_layer.connection_params(), autocommit=True
        ) as connection:
            return await (await connection.execute(sql)).fetchone()

    async def listener_ready() -> None:
        for _ in range(200):
            if (await query(f"SELECT count(*) {listeners}"))[0]:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the layer never listened")

    async def scenario():
        channel = await layer.new_channel()
        await layer.group_add(group, channel)  # a board connects: the layer starts listening
        assert layer.listening
        await listener_ready()
        with _listening() as watcher_side:
            await sync_to_async(events.send)(_event(1))  # a request of the server's own
            local = await asyncio.wait_for(layer.receive(channel), 2)
            assert _notified(watcher_side, 0.3) == []  # no loop back through PostgreSQL
        # Another process's event, notified: relayed with the server's next number.
        await sync_to_async(channel_layer.notify)(group, _event(2))
        relayed = await asyncio.wait_for(layer.receive(channel), 5)
        await sync_to_async(channel_layer.notify)(
            group, {"type": "watcher.swept", "silent_after": 30}
        )
        swept = await asyncio.wait_for(layer.receive(channel), 5)
        # The database drops the listener's connection (a restart): what is notified meanwhile
        # is lost, so once it listens again the board's next number leaves a gap.
        await query(f"SELECT pg_terminate_backend(pid) {listeners}")
        await asyncio.sleep(channel_layer.RECONNECT_AFTER + 0.5)
        await listener_ready()
        await sync_to_async(channel_layer.notify)(group, _event(1))
        after_gap = await asyncio.wait_for(layer.receive(channel), 5)
        return local, relayed, swept, after_gap

    local, relayed, swept, after_gap = async_to_sync(scenario)()
    assert local["seq"] == 1 and len(local["changes"]) == 1
    assert relayed["seq"] == 2 and len(relayed["changes"]) == 2
    assert swept == {"type": "watcher.swept", "silent_after": 30}  # not a board event: no number
    assert after_gap["seq"] == 4  # 3 skipped: the board resynchronises
