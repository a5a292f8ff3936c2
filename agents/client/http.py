"""A typed client of one project's REST API (SPEC §6): base URL + project + bearer key.

A 3xx is not followed (httpx's default): it is a `Redirected` error naming the Location, exit 7,
so a key is never sent on to another address (e.g. a proxy's http → https redirect).

Retries: a connection error, a timeout or a 503 is retried with exponential backoff (a 503's
Retry-After is honoured up to the backoff cap); a 4xx never is — the server has answered, and
asking again would get the same answer. Every write carries a fresh `Idempotency-Key`, the same
on each of its retries, so a write whose answer was lost is applied once (docs/decisions.md).
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

from agents.client.errors import LizaError, Redirected, Unreachable, UsageError

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass
class Answer:
    """A successful answer: status, JSON body and headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


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
    ) -> None:
        if not url or not project or not key:
            raise UsageError("a server URL, a project and a key are all needed")
        self.base = f"{url.rstrip('/')}/api/v1/projects/{project}"
        self.project = project
        self.retries = retries
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self._sleep = sleep
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
            if response.status_code == 503 and attempt < self.retries:
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

    # -- identity and liveness (every role) ------------------------------------------------------

    def register(self, *, terminal: str | None = None) -> dict[str, Any]:
        return self.post("agents/register", _drop_none(terminal=terminal))

    def heartbeat(
        self, *, context_percent: int | None = None, progress_at: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"context_percent": context_percent}
        if progress_at is not None:
            body["progress_at"] = progress_at
        return self.post("agents/heartbeat", body)

    def work(self, *, role: str | None = None) -> Answer:
        return self.request("GET", "work", params=_drop_none(role=role) or None)

    # -- the coder -------------------------------------------------------------------------------

    def claim(self, key: str, *, base_commit: str = "", worktree: str | None = None) -> Any:
        body = _drop_none(base_commit=base_commit, worktree=worktree)
        return self.post(f"tasks/{key}/claim", body)["task"]

    def claim_next(self, *, base_commit: str = "", worktree: str | None = None) -> Any:
        body = _drop_none(base_commit=base_commit, worktree=worktree)
        return self.post("tasks/claim-next", body)["task"]

    def submit(
        self,
        key: str,
        *,
        review_commit: str,
        tree_clean: bool,
        change_summary: dict[str, Any] | None = None,
        pr_url: str | None = None,
    ) -> Any:
        body: dict[str, Any] = {"review_commit": review_commit, "tree_clean": tree_clean}
        if change_summary is not None:
            body["change_summary"] = change_summary
        if pr_url:
            body["pr_url"] = pr_url
        return self.post(f"tasks/{key}/request-review", body)["task"]

    def block(
        self, key: str, *, reason: str, questions: list[str], attempted: list[str] | None = None
    ) -> Any:
        body = _drop_none(reason=reason, questions=questions, attempted=attempted)
        return self.post(f"tasks/{key}/block", body)["task"]

    def handoff(self, key: str, *, summary: str, next_action: str, **notes: Any) -> Any:
        return self.post(
            f"tasks/{key}/handoff", {"summary": summary, "next_action": next_action, **notes}
        )

    def pickup(self, key: str) -> Any:
        return self.post(f"tasks/{key}/handoff/pickup")

    # -- the code reviewer -----------------------------------------------------------------------

    def review_claim(self, key: str) -> Any:
        return self.post(f"tasks/{key}/review/claim")

    def review_claim_next(self) -> dict[str, Any]:
        """`{"review", "task"}`: the review the server picked (both null when none)."""
        return self.post("reviews/claim-next")

    def review_extend(self, key: str) -> Any:
        return self.post(f"tasks/{key}/review/extend")

    def verdict(self, key: str, *, verdict: str, review_commit: str, reason: str = "") -> Any:
        body = {"verdict": verdict, "review_commit": review_commit, "reason": reason}
        return self.post(f"tasks/{key}/verdict", body)["task"]

    def merge(self, key: str, *, merge_commit: str) -> Any:
        return self.post(f"tasks/{key}/merge", {"merge_commit": merge_commit})["task"]

    def integration_failed(self, key: str, *, reason: str) -> Any:
        return self.post(f"tasks/{key}/integration-failure", {"reason": reason})["task"]

    # -- records (every role) --------------------------------------------------------------------

    def discover(
        self,
        *,
        description: str,
        severity: str,
        urgency: str | None = None,
        during: str | None = None,
        recommendation: str | None = None,
    ) -> Any:
        body = _drop_none(
            description=description,
            severity=severity,
            urgency=urgency,
            during=during,
            recommendation=recommendation,
        )
        return self.post("discoveries", body)

    def anomaly(self, *, type: str, details: dict[str, Any], task: str | None = None) -> Any:
        return self.post("anomalies", _drop_none(type=type, details=details, task=task))

    def log(self, *, action: str, detail: str, task: str | None = None) -> Any:
        return self.post("log", _drop_none(action=action, detail=detail, task=task))

    # -- the planner -----------------------------------------------------------------------------

    def goal(self) -> Any:
        return self.get("goal")

    def goal_create(self, *, description: str, spec_ref: str | None = None) -> Any:
        return self.post("goal", _drop_none(description=description, spec_ref=spec_ref))

    def goal_complete(self, *, reason: str) -> Any:
        return self.post("goal/complete", {"reason": reason})

    def task_create(self, *, key: str, description: str, **fields: Any) -> Any:
        body = {"key": key, "description": description, **_drop_none(**fields)}
        return self.post("tasks", body)["task"]

    def task_finalize(self, key: str) -> Any:
        return self.post(f"tasks/{key}/finalize")["task"]

    def task_dependencies(self, key: str, *, depends_on: list[str]) -> Any:
        answer = self.request("PUT", f"tasks/{key}/dependencies", json={"depends_on": depends_on})
        return answer.body["task"]

    def task_rescope(self, key: str, *, reason: str, new_tasks: list[dict[str, Any]]) -> Any:
        return self.post(f"tasks/{key}/rescope", {"reason": reason, "new_tasks": new_tasks})

    def task_abandon(self, key: str, *, reason: str) -> Any:
        return self.post(f"tasks/{key}/abandon", {"reason": reason})["task"]

    def task_release(self, key: str, *, reason: str) -> Any:
        return self.post(f"tasks/{key}/release", {"reason": reason})["task"]

    def sprint(self) -> Any:
        return self.get("sprint")

    def sprint_create(
        self,
        *,
        planned: list[str] | None = None,
        stretch: list[str] | None = None,
        deadline: str | None = None,
    ) -> Any:
        return self.post("sprint", _drop_none(planned=planned, stretch=stretch, deadline=deadline))

    def sprint_checkpoint(self, *, reason: str) -> Any:
        return self.post("sprint/checkpoint", {"reason": reason})

    def sprint_continue(self, *, decision: str) -> Any:
        return self.post("sprint/continue", {"decision": decision})

    def sprint_abort(self, *, reason: str) -> Any:
        return self.post("sprint/abort", {"reason": reason})

    # -- runs (the supervisor's spawns) ----------------------------------------------------------

    def run_start(
        self, *, task: str | None = None, restart_reason: str = "", command: str = ""
    ) -> dict[str, Any]:
        body = {"task": task, "restart_reason": restart_reason, "command": command}
        return self.post("runs", body)

    def run_finish(
        self, run: int, *, exit_code: int, stopped_by: str = "", output: str = ""
    ) -> dict[str, Any]:
        body = {"exit_code": exit_code, "stopped_by": stopped_by, "output": output}
        return self.post(f"runs/{run}/finish", body)

    def agents(self) -> list[dict[str, Any]]:
        return self.get("agents")

    def quota_pause(self, *, until: str, provider: str, message: str = "") -> dict[str, Any]:
        return self.post("agents/quota", {"until": until, "provider": provider, "message": message})

    def usage(
        self,
        *,
        model: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> list[dict[str, Any]]:
        """The agent's own report of its running run's usage so far for one model."""
        entry = _drop_none(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            cost_usd=cost_usd,
        )
        return self.post("usage", {"usage": [entry]})

    def usage_report(self, run: int, *, usage: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The supervisor's report of a run's usage so far, every model at once."""
        return self.post("usage", {"run": run, "usage": usage})

    def budgets(self) -> list[dict[str, Any]]:
        return self.get("budgets")

    def run_output(self, run: int, *, text: str) -> dict[str, Any]:
        return self.post(f"runs/{run}/output", {"text": text})

    def runs(self, *, task: str | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        return self.get("runs", task=task, agent=agent)

    # -- reads -----------------------------------------------------------------------------------

    def tasks(self, **filters: Any) -> list[dict[str, Any]]:
        return self.get("tasks", **filters)

    def task(self, key: str) -> dict[str, Any]:
        return self.get(f"tasks/{key}")
