"""A typed client of one project's REST API (SPEC §6): base URL + project + bearer key.

A 3xx is not followed (httpx's default): it is a `Redirected` error naming the Location, exit 7,
so a key is never sent on to another address (e.g. a proxy's http → https redirect).

Retries: a connection error, a timeout, a 503 or an answer the contract calls retryable
(`contract.RETRYABLE`: a 409 `contention`, the rows busy with another request) is retried with
exponential backoff (an answer's Retry-After is honoured up to the backoff cap); any other 4xx
never is — the server has answered, and asking again would get the same answer. Every write
carries a fresh `Idempotency-Key`, the same on each of its retries, so a write whose answer was
lost is applied once (docs/decisions.md).

Fencing: once its agent registered (or given `generation`, which `liza` reads from
LIZA_GENERATION, set by `liza supervise` for the agent it starts), every request carries
`Liza-Generation`, so the server refuses a process of a superseded session (`not_registered`,
exit 8) instead of letting it act as the live one (docs/decisions.md "Fencing a stale
session").
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from agents.client.contract import CONTRACT, GENERATION_HEADER, RETRYABLE, Endpoint
from agents.client.errors import LizaError, Redirected, Unreachable, UsageError
from agents.client.usage import Usage

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass
class Answer:
    """A successful answer: status, JSON body and headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _send_again(response: httpx.Response) -> bool:
    """A 503, or an error whose code says the server wrote nothing (`RETRYABLE`)."""
    if response.status_code == 503:
        return True
    if response.status_code < 400:
        return False
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return False
    return code in RETRYABLE


def _mark_progress() -> None:
    """Under `liza supervise`: a protocol operation is progress for its watchdog
    (agents.client.watchdog), marked by touching LIZA_PROGRESS_FILE."""
    path = os.environ.get("LIZA_PROGRESS_FILE")
    if path:
        with contextlib.suppress(OSError):
            with open(path, "a"):
                pass
            os.utime(path)


class Client:
    """One agent (or human token) on one project of one Liza Board server."""

    def __init__(
        self,
        url: str,
        project: str,
        key: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        backoff_cap: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        generation: int | None = None,
    ) -> None:
        if not url or not project or not key:
            raise UsageError("a server URL, a project and a key are all needed")
        self.base = f"{url.rstrip('/')}/api/v1/projects/{project}"
        self.project = project
        self.retries = retries
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self._sleep = sleep
        # The registration this process belongs to: sent on every request once known (the
        # register answer's, or the supervisor's LIZA_GENERATION); None sends nothing.
        self.generation = generation
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one request path -------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        method = method.upper()
        headers: dict[str, str] = {}
        if self.generation is not None:
            headers[GENERATION_HEADER] = str(self.generation)
        if method in WRITE_METHODS:
            headers["Idempotency-Key"] = idempotency_key or uuid.uuid4().hex
        url = f"{self.base}/{path.lstrip('/')}" if path else self.base
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method,
                    url,
                    json=json if method in WRITE_METHODS else None,
                    params=params,
                    headers=headers,
                )
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise Unreachable("unreachable", f"{url}: {exc or type(exc).__name__}") from exc
                self._sleep(self._delay(attempt))
                attempt += 1
                continue
            if attempt < self.retries and _send_again(response):
                self._sleep(self._delay(attempt, response.headers.get("Retry-After")))
                attempt += 1
                continue
            if method in WRITE_METHODS and response.status_code < 400:
                _mark_progress()
            return self._answer(response)

    def _delay(self, attempt: int, retry_after: str | None = None) -> float:
        delay = min(self.backoff * 2**attempt, self.backoff_cap)
        if retry_after and retry_after.isdigit():
            delay = min(max(delay, float(retry_after)), self.backoff_cap)
        return delay

    @staticmethod
    def _answer(response: httpx.Response) -> Answer:
        if 300 <= response.status_code < 400:
            raise Redirected(response.status_code, response.headers.get("Location", ""))
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise LizaError.from_response(response.status_code, body)
        if body is None and response.content:
            raise LizaError("bad_response", "the server's answer is not JSON", status=200)
        return Answer(response.status_code, body, dict(response.headers))

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=_drop_none(**params) or None).body

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, json=body or {}).body

    # -- the operations: one method each, from the contract ---------------------------------------

    def call(self, endpoint: Endpoint, *path: Any, **params: Any) -> Any:
        """`endpoint` (agents.client.contract) with its path parameters in order and its other
        parameters by name; a parameter given as None is not sent. A task's answer is the task
        (`{"task": …}` unwrapped); `/work`'s is the whole `Answer` (its Retry-After header)."""
        in_path = endpoint.where("path")
        if len(path) != len(in_path):
            names = ", ".join(p.name for p in in_path) or "none"
            raise TypeError(f"{endpoint.client}: path parameters {names}, given {len(path)}")
        unknown = set(params) - {p.name for p in endpoint.params if p.where != "path"}
        if unknown:
            raise TypeError(f"{endpoint.client}: unknown parameter(s) {', '.join(sorted(unknown))}")
        url = endpoint.url(**{p.name: value for p, value in zip(in_path, path, strict=True)})
        given = _drop_none(**params)
        if endpoint.method == "GET":
            answer = self.request("GET", url, params=given or None)
        else:
            answer = self.request(endpoint.method, url, json=given)
        if endpoint.name == "agents_register" and isinstance(answer.body, dict):
            # A new session: this process is it from now on (a server of the previous
            # release answers no generation: nothing is sent then, as before).
            self.generation = answer.body.get("generation")
        if endpoint.result == "work":
            return answer
        return answer.body["task"] if endpoint.result == "task" else answer.body

    # -- usage: one model's report (an agent's), every model's (its supervisor's) ----------------

    def usage(self, **reported: Any) -> list[dict[str, Any]]:
        """The agent's own report of its running run's usage so far for one model: the fields
        of `agents.client.usage.Usage` (an unknown one is a TypeError, as for any method)."""
        return self.usage_record(usage=[Usage(**reported).entry()])

    def usage_report(self, run: int, *, usage: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The supervisor's report of a run's usage so far, every model at once."""
        return self.usage_record(run=run, usage=usage)

    # The other operations are methods generated below, one a contract entry with a `client`
    # name: `claim(key, base_commit=…)`, `heartbeat(context_percent=…)`, `work(role=…)` …


def _operation_method(endpoint: Endpoint) -> Callable[..., Any]:
    def method(self: Client, *path: Any, **params: Any) -> Any:
        return self.call(endpoint, *path, **params)

    method.__name__ = method.__qualname__ = endpoint.client
    method.__doc__ = f"{endpoint.method} {endpoint.path}" + (
        f": {endpoint.help}" if endpoint.help else ""
    )
    return method


for _endpoint in CONTRACT:
    if _endpoint.client:
        setattr(Client, _endpoint.client, _operation_method(_endpoint))
