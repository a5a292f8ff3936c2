"""One webhook attempt on the wire, bounded as a whole, and the breaker of a destination.

Issue #27: httpx's timeout bounds each read, not the request, so a receiver that drips its
headers or its body a byte at a time held the sender for minutes, and an answer was read whole
into the watcher (1.5 GB). Here:

- `post` runs the attempt (connect, TLS, send, headers, answer) under one deadline
  (`asyncio.timeout`, which cancels whatever await is pending), so it ends within `timeout`
  seconds whatever the receiver does;
- the answer is streamed and counted, and reading stops at `cap` bytes (the status code is all
  the sender needs; the rest is never read);
- `Breaker`: after `threshold` failed attempts in a row to one destination (scheme, host,
  port), no attempt goes there for `cool_off` seconds; then one trial attempt decides.

No database, no Django models: the caller (boards.watch.services.webhooks) records what happened.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import httpx


@dataclass(frozen=True)
class Answer:
    status: int
    read: int  # bytes of the answer read
    cut: bool  # the answer went on past the cap and was not read further


class AttemptTimedOut(Exception):
    """The whole attempt outlasted its deadline."""


def destination(url: str) -> str:
    """What a breaker and the per-destination limit count by: scheme://host:port."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return url
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def post(
    url: str,
    addresses: list[str],
    headers: dict[str, str],
    body: bytes,
    *,
    timeout: float,
    cap: int,
) -> Answer:
    """POST `body` to `url`, all of it within `timeout` seconds; with `addresses`, to the first
    (the one checked), keeping the URL's host name for the Host header and TLS (SNI and the
    certificate). Raises `AttemptTimedOut`, or httpx's errors for the rest."""
    extensions = {}
    if addresses:
        parts = urlsplit(url)
        address = addresses[0]
        host = f"[{address}]" if ":" in address else address
        netloc = f"{host}:{parts.port}" if parts.port else host
        headers = {**headers, "Host": parts.netloc.rpartition("@")[2]}
        if parts.scheme == "https":
            extensions["sni_hostname"] = parts.hostname
        url = urlunsplit(parts._replace(netloc=netloc))
    try:
        return asyncio.run(_post(url, headers, body, extensions, timeout=timeout, cap=cap))
    except TimeoutError as exc:
        raise AttemptTimedOut(f"timed out after {timeout:g} s") from exc


@functools.lru_cache(maxsize=4)
def _tls(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # reads SSL_CERT_FILE / SSL_CERT_DIR (trust_env)


def _tls_context() -> ssl.SSLContext:
    """The trusted authorities, loaded once per SSL_CERT_FILE/SSL_CERT_DIR (loading them takes
    ~0.1 s, which must not count against an attempt's deadline)."""
    return _tls(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


async def _post(url, headers, body, extensions, *, timeout: float, cap: int) -> Answer:
    client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=_tls_context())
    async with (
        client,
        asyncio.timeout(timeout),
        client.stream(
            "POST", url, content=body, headers=headers, extensions=extensions
        ) as response,
    ):
        read = 0
        async for chunk in response.aiter_raw():
            read += len(chunk)
            if read > cap:
                return Answer(response.status_code, cap, cut=True)
        return Answer(response.status_code, read, cut=False)


@dataclass
class Breaker:
    """A destination's circuit breaker, on the deliveries' clock (`now`)."""

    threshold: int
    cool_off: timedelta
    failures: int = 0
    open_until: datetime | None = None
    trial: bool = field(default=False)  # a trial attempt is under way (half-open)

    def allows(self, now: datetime) -> bool:
        if self.open_until is None:
            return True
        if now < self.open_until or self.trial:
            return False
        self.trial = True  # half-open: this one attempt decides
        return True

    def record(self, now: datetime, *, ok: bool) -> None:
        self.trial = False
        if ok:
            self.failures, self.open_until = 0, None
            return
        self.failures += 1
        if self.failures >= self.threshold:
            self.open_until = now + self.cool_off
