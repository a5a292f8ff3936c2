"""A Redis database of this test process's own, for the tests that flush it or read its keys
(the websocket layer on Redis, two servers sharing a layer, the watcher reaching a board).

The suite runs on several xdist workers, and tests of one module may run on two at once: on one
shared database, a worker's `flushdb` would wipe the other's board sequence mid-test. Each
worker gets its own number from the top (15, 14, ...), on the server of `REDIS_URL`; the suite's
own `REDIS_URL` database (0 in CI) is left to everything else. `LIZA_TEST_REDIS_TOP` moves the
top (default 15), so two suites run side by side on one machine (two checkouts) stay apart.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit


def private_redis_url() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    server = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    shared = int(server.path.strip("/") or 0)
    number = int(os.environ.get("LIZA_TEST_REDIS_TOP", "15")) - index
    if number <= shared:
        raise RuntimeError(f"no private Redis database left for xdist worker {worker}")
    return f"{server.scheme}://{server.netloc}/{number}"
