"""The embedded default's in-memory layer (liza_site/channel_layer.py): Channels' layer with its
expiry sweep run at most once per `clean_every`. What the sweep does must still happen: an
expired message is dropped and its channel leaves its groups, within one `clean_every`."""

from __future__ import annotations

import asyncio
import time

from liza_site.channel_layer import InMemoryChannelLayer


def run(coro):
    return asyncio.run(coro)


def test_group_send_reaches_every_member_at_once():
    async def scenario():
        layer = InMemoryChannelLayer()
        names = [await layer.new_channel() for _ in range(3)]
        for name in names:
            await layer.group_add("board-1", name)
        await layer.group_send("board-1", {"type": "board.event", "seq": 1})
        await layer.group_send("board-1", {"type": "board.event", "seq": 2})
        return [
            [(await layer.receive(name))["seq"], (await layer.receive(name))["seq"]]
            for name in names
        ]

    assert run(scenario()) == [[1, 2]] * 3


def test_an_expired_message_is_dropped_and_its_channel_leaves_its_groups_after_one_interval():
    async def scenario():
        layer = InMemoryChannelLayer(expiry=0.05, clean_every=0.3)
        stale, live = await layer.new_channel(), await layer.new_channel()
        for name in (stale, live):
            await layer.group_add("board-1", name)
        await layer.send(stale, {"type": "board.event", "seq": 1})
        await layer.send(live, {"type": "board.event", "seq": 1})
        assert (await layer.receive(live))["seq"] == 1  # the first sweep: nothing expired yet
        await asyncio.sleep(0.1)  # `stale`'s message has expired; no sweep is due yet
        await layer.group_send("board-1", {"type": "board.event", "seq": 2})
        kept = "board-1" in layer.groups and stale in layer.groups["board-1"]
        await asyncio.sleep(0.3)
        await layer.group_send("board-1", {"type": "board.event", "seq": 3})  # a sweep is due
        return kept, stale in layer.groups.get("board-1", {}), layer.channels.get(stale)

    kept_before, member_after, queue_after = run(scenario())
    assert kept_before  # not swept within the interval
    assert not member_after  # swept once it passed: expired, so out of the group
    # Its queue is gone with the expired message; what was sent after it was never queued.
    assert queue_after is None or all(seq >= 2 for seq in _seqs(queue_after))


def _seqs(queue) -> list[int]:
    return [message["seq"] for _, message in list(queue._queue)]


def test_the_sweep_runs_once_per_interval_however_many_receives():
    """The reason for the class: 500 open boards each receiving every event must not each walk
    every channel and group (quadratic in the boards)."""
    sweeps = []

    class Counted(InMemoryChannelLayer):
        def _clean_expired(self) -> None:
            before = self._next_clean
            super()._clean_expired()
            if self._next_clean != before:
                sweeps.append(time.monotonic())

    async def scenario():
        layer = Counted(clean_every=60)
        names = [await layer.new_channel() for _ in range(200)]
        for name in names:
            await layer.group_add("board-1", name)
        for seq in range(5):
            await layer.group_send("board-1", {"type": "board.event", "seq": seq})
            for name in names:
                assert (await layer.receive(name))["seq"] == seq

    run(scenario())
    assert len(sweeps) == 1
