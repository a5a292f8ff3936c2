"""The product's ASGI application plus one bench-only route, for `bench/board.py --layer memory`.

On the embedded default the channel layer is the server's own memory: a change reaches open
boards only if it is committed inside the server process (`boards.coordination.outbox`). The
bench therefore makes its transitions here, in the server, through the same service
(`task_finalize`) and in the same sync thread as a Django view (`sync_to_async`, thread
sensitive), and stamps the commit exactly as the Redis run does: an `on_commit` callback
registered before the service's own, so it runs right after COMMIT, before the publish.

    POST /__bench__/finalize?project=<id>&key=<task key>
    → {"committed": <time.time() at commit>, "seq": <the message's sequence>, "service_ms": …}

Never served by the product: only the bench names this module as the server's application.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async

from liza_site.asgi import application as liza

PATH = "/__bench__/finalize"


def _finalize(project_id: int, key: str) -> dict[str, float | int]:
    from django.db import close_old_connections, transaction
    from django.utils import timezone

    from agents.models import Agent
    from boards.coordination.models.tasks import Task
    from boards.coordination.outbox import current_sequence
    from boards.coordination.services.tasks import task_finalize

    close_old_connections()
    planner = Agent.objects.get(project_id=project_id, agent_id="planner-1")
    task = Task.objects.get(project_id=project_id, key=key)
    stamp: list[float] = []
    begin = time.perf_counter()
    with transaction.atomic():
        transaction.on_commit(lambda: stamp.append(time.time()))
        task_finalize(task=task, actor=planner, now=timezone.now())
    service_ms = (time.perf_counter() - begin) * 1000
    # The process-local sequence (no Redis): the number the commit's message just took.
    return {"committed": stamp[0], "seq": current_sequence(project_id), "service_ms": service_ms}


async def application(scope, receive, send) -> None:
    if scope["type"] != "http" or scope["path"] != PATH:
        await liza(scope, receive, send)
        return
    query = parse_qs(scope["query_string"].decode())
    result = await sync_to_async(_finalize)(int(query["project"][0]), query["key"][0])
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(result).encode()})
