"""The in-memory channel layer alone: CPU per board event with N open boards (bench/BOARD.md).

    .venv/bin/python bench/memory_layer.py [--boards 500] [--events 50]

N consumers, each in a board group and a user group as the board's sockets are, each waiting
in `receive`; one `group_send` per event to the board group, timed (this process's CPU) until
every consumer has every event. Channels' own layer and the product's
(liza_site/channel_layer.py) alternated, two rounds. No database, no server, no network.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from channels.layers import InMemoryChannelLayer as Stock

from liza_site.channel_layer import InMemoryChannelLayer as Product


async def cpu_per_event(layer_class: type, boards: int, events: int) -> float:
    layer = layer_class()
    received = 0
    everything = asyncio.Event()
    joined = 0

    async def board() -> None:
        nonlocal received, joined
        channel = await layer.new_channel()
        await layer.group_add("board-1", channel)
        await layer.group_add("board-user-1", channel)
        joined += 1
        while True:
            await layer.receive(channel)
            received += 1
            if received == boards * events:
                everything.set()

    tasks = [asyncio.create_task(board()) for _ in range(boards)]
    while joined < boards:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # every board waiting in receive
    message = {"type": "board.event", "project_id": 1, "changes": [{"kind": "task", "id": 1}]}
    start = time.process_time()
    for seq in range(events):
        await layer.group_send("board-1", {**message, "seq": seq})
        await asyncio.sleep(0)
    await everything.wait()
    cpu_ms = (time.process_time() - start) * 1000 / events
    for task in tasks:
        task.cancel()
    return cpu_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--boards", type=int, default=500)
    parser.add_argument("--events", type=int, default=50)
    args = parser.parse_args()
    for order in ((Stock, Product), (Product, Stock)):
        for layer_class in order:
            cpu = asyncio.run(cpu_per_event(layer_class, args.boards, args.events))
            name = f"{layer_class.__module__}.{layer_class.__name__}"
            print(f"{name:50} {cpu:7.1f} ms CPU per event, {args.boards} boards", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
