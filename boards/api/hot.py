"""The agents' hot path (issue 26): heartbeat and claim-next without DRF's dispatch.

An agent sends these two requests far more than any other (10,000 agents heartbeating every
60 s are ~170 a second before any claim), and each paid for DRF's request machinery around a
few milliseconds of service: wrapping the request, negotiating the renderer, trying each
authentication class, the permission class, the throttle classes, and a key lookup in the
database. `fast(view)` serves the common request — an agent's `POST` with a bearer key of this
project and a JSON body — with the same view's own handler and `finalize_response`, so the
answer is the one DRF gives (status, JSON envelope, error codes, Idempotency-Key, headers),
but

* the key is authenticated through `agents.keycache` (per process, bounded TTL and size,
  dropped at once on revoke, disable, project changes and deleted rows through
  `liza_site.key_generation`), whose counter is read in the same Redis round trip as the
  per-address rate limit and, when the cache holds the key and the counter still stands for
  its entry, the key's own rate limit (`liza_site.throttling.count_hot`: one round trip a
  request; a key looked up is counted after, as before); a key whose rows are gone by the
  time the service runs gets DRF's answer to it (`boards.api.base.key_refusal`, as
  ProjectView.dispatch does), not a 500;
* nothing else of DRF's `dispatch` runs: the request is a small stand-in (`_AgentRequest`)
  carrying what the handlers read.

Anything else — another method, no bearer key, a key that is unknown, revoked, disabled or of
another project, a query string, another content type or `Accept` — goes to the DRF view
unchanged, so those answers (401 with WWW-Authenticate, 403, 404, 405, 406, 415) are DRF's by
construction. The per-address rate limit counts such a request once: it is marked counted.
OpenAPI sees the DRF view (`cls`, `initkwargs`), so the schema does not change.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import cached_property
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.urls import URLPattern
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from agents import keycache
from agents.authentication import AgentPrincipal
from agents.models import AgentKey
from agents.services import agent_key_used
from boards.api.base import (
    ProjectView,
    _Replay,
    in_request_transaction,
    key_refusal,
)
from boards.api.parsers import JSONParser
from boards.errors import database_unavailable, lost_race
from boards.operations.base import runs_left
from boards.protocol import AgentStatus
from liza_site import key_generation
from liza_site.asgi_handler import one_hop
from liza_site.exceptions import api_exception_handler
from liza_site.throttling import ClientAddressRateThrottle, PrincipalRateThrottle, count_hot

_RENDERER = JSONRenderer()
_PARSER = JSONParser()
_PLAIN_ACCEPT = frozenset({"", "*/*", "application/json"})


class _AgentRequest:
    """What the project views' handlers and `finalize_response` read of DRF's Request."""

    def __init__(self, request: HttpRequest, key: AgentKey) -> None:
        self._request = request
        self.user = self._user = AgentPrincipal(key.agent)
        self.auth = key
        self.method = request.method
        self.path = request.path
        self.headers = request.headers
        self.META = request.META
        self.accepted_renderer = _RENDERER
        self.accepted_media_type = "application/json"

    @cached_property
    def data(self) -> Any:
        # DRF's Request.data for an `application/json` body (Request._load_stream): {} without a
        # Content-Length, else the parser's reading of the request as a stream (no body-size
        # check, as DRF reads it).
        meta = self._request.META
        try:
            length = int(meta.get("CONTENT_LENGTH", meta.get("HTTP_CONTENT_LENGTH", 0)))
        except (ValueError, TypeError):
            length = 0
        if length == 0:
            return {}
        stream = (
            self._request if not self._request._read_started else io.BytesIO(self._request.body)
        )
        return _PARSER.parse(stream, "application/json", {})


def _bearer(request: HttpRequest) -> str | None:
    """The bearer key of a request the fast path serves exactly as DRF would, else None."""
    meta = request.META
    if request.method != "POST" or meta.get("QUERY_STRING"):
        return None
    if meta.get("CONTENT_TYPE", "") != "application/json":
        return None
    if meta.get("HTTP_ACCEPT", "").strip() not in _PLAIN_ACCEPT:
        return None
    header = meta.get("HTTP_AUTHORIZATION", "").split()
    if len(header) != 2 or header[0].lower() != "bearer" or not header[1].isascii():
        return None
    return header[1]


def _count(
    request: HttpRequest, trusted: _AgentRequest | None, stamped: int
) -> tuple[bool, float | None, int | None, tuple[bool, float | None] | None]:
    """The per-address limit (counted here, before authentication, as ProjectView does), the key
    cache's counter and, when the cache holds the request's key (`trusted`, stamped with the
    counter at `stamped`) and the counter still has that value, the key's own limit — in one
    Redis round trip: (allowed, wait, generation, the key's limit as (allowed, wait), or None
    when not counted: then it is counted once the key is known, as before)."""
    if not settings.REDIS_URL:
        throttle = ClientAddressRateThrottle()
        allowed = throttle.allow_request(request, None)  # marks the request counted
        return allowed, throttle.wait(), key_generation.current(), None
    # Marks the request counted: the DRF view, if it takes over, counts it no more.
    counted = count_hot(request, trusted, read=key_generation.KEY, stamped=stamped)
    if counted is None:
        return True, None, None, None  # Redis down: no limit, and no cache (its counter unknown)
    principal = None if counted.principal is None else (counted.principal, counted.principal_wait)
    return (
        counted.address,
        counted.address_wait,
        key_generation.parse(counted.read),
        principal,
    )


def _admit(
    request: HttpRequest, plain: str, slug: str
) -> _AgentRequest | exceptions.Throttled | None:
    """The key and the rate limits of a request with a bearer key, as ProjectView checks them:
    the stand-in request to serve, 429 over a limit, or None for DRF's view to answer (a key
    unknown, revoked, disabled or of another project; the database unavailable)."""
    # The key as the cache holds it, if it does: its own limit is then counted in the same
    # round trip as the address's, trusted only if the counter read there is its stamp.
    held = keycache.held(plain)
    trusted = None
    if held is not None and held.key.agent.enabled and held.key.agent.project.slug == slug:
        trusted = _AgentRequest(request, held.key)
    allowed, wait, generation, principal = _count(
        request, trusted, held.generation if held is not None else 0
    )
    if not allowed:
        return exceptions.Throttled(wait)
    try:
        if principal is not None and held is not None:  # the counter read is its stamp
            key = keycache.trusted(held)
        else:
            key = keycache.lookup(plain, generation)
        if key is None or not key.agent.enabled or key.agent.project.slug != slug:
            return None  # 401, 403 or 404, as DRF answers them
        agent_key_used(key=key, now=timezone.now())
    except Exception as exc:
        if database_unavailable(exc):
            return None  # its 503 `unavailable`, as DRF answers it
        raise
    keycache.used(key)
    if principal is not None and trusted is not None:  # counted in the one round trip
        agent_request = trusted
        allowed, wait = principal
    else:  # the cache did not hold the key, or no longer trusted it: counted now
        agent_request = _AgentRequest(request, key)
        throttle = PrincipalRateThrottle()
        allowed = throttle.allow_request(agent_request, None)
        wait = throttle.wait()
    if not allowed:
        return exceptions.Throttled(wait)
    return agent_request


def _error(view: ProjectView, exc: Exception) -> Response:
    """What ProjectView.handle_exception answers (the replay of an Idempotency-Key included)."""
    if isinstance(exc, _Replay):
        return Response(
            exc.record.body,
            status=exc.record.status_code,
            headers={"Idempotent-Replayed": "true"},
        )
    response = api_exception_handler(exc, view.get_exception_handler_context())
    if response is None:
        raise exc
    response.exception = True
    return response


def fast(drf_view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """`drf_view` (a ProjectView's `as_view()` with a `post` handler), its agents' requests
    served without DRF's dispatch."""
    view_class: type[ProjectView] = drf_view.cls  # type: ignore[attr-defined]
    initkwargs = drf_view.initkwargs  # type: ignore[attr-defined]

    def answer(agent_request: _AgentRequest, key: AgentKey, slug: str) -> HttpResponseBase:
        view = view_class(**initkwargs)
        view.args, view.kwargs = (), {"slug": slug}
        view.request = agent_request  # type: ignore[assignment]
        view.headers = view.default_response_headers
        view._idempotent = None
        try:
            # ProjectView.initial after authentication and the rate limits: the key's project
            # is the slug's (checked by the caller), which holds no NUL, and there is no query.
            view.now = timezone.now()
            view.project = key.agent.project
            view._begin_idempotent(agent_request)  # type: ignore[arg-type]
            response = view_class.post(view, agent_request, slug)  # type: ignore[attr-defined,arg-type]
        except Exception as exc:
            if runs_left() and lost_race(exc):
                raise  # to the runner around the transaction, as ProjectView.handle_exception
            response = _error(view, exc)
        # The cached agent's status is as old as its entry: finalize_response gets the status
        # the answer shows, or STARTING when the answer does not say it, so that agent_ready
        # decides under its lock (as it does when the status was STARTING).
        data = response.data if isinstance(response.data, dict) else {}
        shown = data.get("agent")
        if isinstance(shown, dict) and shown.get("status"):
            status = shown["status"]  # the heartbeat's answer
        elif data.get("task"):
            status = AgentStatus.WORKING  # a claim's answer: its coder works on it
        else:
            status = AgentStatus.STARTING
        # Not a transition: the request's copy of the row learns what the answer says (the
        # FSM field refuses plain assignment).
        key.agent.__dict__["status"] = status
        return view.finalize_response(agent_request, response)  # type: ignore[arg-type]

    @csrf_exempt
    def hot(request: HttpRequest, slug: str) -> HttpResponseBase:
        plain = _bearer(request)
        if plain is None:
            return drf_view(request, slug=slug)
        admitted = _admit(request, plain, slug)
        if admitted is None:
            return drf_view(request, slug=slug)  # 401, 403, 404 or 503, as DRF answers them
        if isinstance(admitted, exceptions.Throttled):
            return _refused(request, view_class, initkwargs, slug, admitted)
        agent_request, key = admitted, admitted.auth
        try:
            return in_request_transaction(request, lambda: answer(agent_request, key, slug))
        except Exception:
            # No envelope for it (a row the service locks is gone: Agent.DoesNotExist): the
            # cached key may no longer stand for what it did, its rows deleted since the lookup
            # (a delete whose count has not reached this process yet). Then the answer is
            # DRF's to the key as it is now, else the failure stands.
            refused = key_refusal(request, slug)
            if refused is None:
                raise
            return _refused(request, view_class, initkwargs, slug, refused)

    # The DRF view's marks (cls, initkwargs, view_class, csrf_exempt): drf-spectacular documents
    # the route from them, unchanged.
    hot.__dict__.update(drf_view.__dict__)
    hot.drf_view = drf_view  # type: ignore[attr-defined]
    # Under ASGI, its middleware, the view and the request signals in one thread hop.
    return one_hop(hot)


def _refused(
    request: HttpRequest,
    view_class: type[ProjectView],
    initkwargs: dict[str, Any],
    slug: str,
    exc: exceptions.APIException,
) -> HttpResponseBase:
    """The request refused with `exc` before any handler ran, as DRF's dispatch answers it."""
    view = view_class(**initkwargs)
    view.args, view.kwargs = (), {"slug": slug}
    view.request = None  # type: ignore[assignment]
    view.headers = view.default_response_headers
    response = _error(view, exc)
    agent_request = type("_Refused", (), {})()
    agent_request.accepted_renderer = _RENDERER
    agent_request.accepted_media_type = "application/json"
    agent_request.method = request.method
    return view.finalize_response(agent_request, response)  # type: ignore[arg-type]


def fast_paths(patterns: list[URLPattern], *, names: tuple[str, ...]) -> list[URLPattern]:
    """`patterns` with the routes called `names` served by `fast` (each must be there)."""
    found = {p.name for p in patterns if isinstance(p, URLPattern)}
    missing = set(names) - found
    assert not missing, f"no route named {sorted(missing)}"
    return [
        URLPattern(p.pattern, fast(p.callback), p.default_args, p.name)
        if isinstance(p, URLPattern) and p.name in names
        else p
        for p in patterns
    ]
