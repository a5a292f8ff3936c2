"""Django's ASGI handler, with the views marked `one_hop` served in one thread hop.

Under ASGI, Django runs its middleware in async mode: every synchronous middleware (all of
ours but axes; WhiteNoise cannot run async at all, so the chain goes back and forth between
the event loop and a thread around it) and the view each run in a thread through
`sync_to_async`, and every request gets a thread of its own (asgiref's ThreadSensitiveContext),
a new database connection object in it, and two more hops for the `request_started` and
`request_finished` signals. py-spy on a granian worker under the heartbeat load (bench/README.md,
2026-11-27) found ~40 % of the workers' Python time in that machinery — locks, futures,
executors, thread starts — against ~30 % in the view.

A request to a view marked `one_hop` (an agent's heartbeat and claim-next, boards.api.hot) is
served the way a WSGI server serves every request: the same middleware, loaded in sync mode,
run with the view and both signals in one call on a long-lived thread (a small pool per
process, no larger than the database pool, so a thread always finds a connection soon). The
answer is the one the async chain gives — the same middleware classes in the same order, so
the same status, body and headers (tests/site/test_asgi_handler.py compares them). The
response is closed (`request_finished`: the connection goes back to the pool) before it is
sent: it is never a streaming one on these routes; a streaming answer is sent first, then
closed, as Django does. Every other request goes through Django's handler unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import HttpResponseBase
from django.urls import resolve, set_script_prefix

ONE_HOP = "liza_one_hop"
# Without a database pool each request opens its own connection: a few threads still share
# the cores as well as more would.
DEFAULT_THREADS = 8

View = TypeVar("View", bound=Callable[..., Any])


def one_hop(view: View) -> View:
    """Mark `view` (a synchronous view) to be served in one thread hop under ASGI."""
    setattr(view, ONE_HOP, True)
    return view


def _threads() -> int:
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    if isinstance(pool, dict) and pool.get("max_size"):
        return int(pool["max_size"])
    return DEFAULT_THREADS


class OneHopASGIHandler(ASGIHandler):
    """ASGIHandler serving `one_hop` views with the sync middleware chain in one thread hop."""

    def __init__(self) -> None:
        super().__init__()
        self._sync = BaseHandler()
        self._sync.load_middleware(is_async=False)
        self._executor = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="one-hop")
        self._serve_in_thread = sync_to_async(
            self._serve, thread_sensitive=False, executor=self._executor
        )

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and self._one_hop(scope):
            await self._handle_one_hop(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    @staticmethod
    def _one_hop(scope) -> bool:
        if scope["method"] != "POST":
            return False  # the marked views are agents' POSTs: nothing else pays a resolution
        # The request's path_info, as ASGIRequest computes it.
        path = scope["path"].removeprefix(get_script_prefix(scope))
        try:
            match = resolve(path)
        except Exception:  # Resolver404, or whatever else: Django's handler answers that path
            return False
        return getattr(match.func, ONE_HOP, False)

    async def _handle_one_hop(self, scope, receive, send) -> None:
        """ASGIHandler.handle with everything synchronous in one call of `_serve`."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        try:
            response = await self._serve_in_thread(scope, body_file)
            # A send on a closed connection raises an OSError (ASGI): the client is gone, and
            # Django's handler, which listens for the disconnect, would have sent nothing.
            with contextlib.suppress(OSError):
                await self.send_response(response, send)
            if response.streaming:
                await sync_to_async(response.close, thread_sensitive=False)()
        finally:
            body_file.close()

    def _serve(self, scope, body_file) -> HttpResponseBase:
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self._sync.get_response(request)
            response._handler_class = self.__class__
        if not response.streaming:
            response.close()  # request_finished: the connection is back in the pool
        return response
