"""A real webhook receiver for the tests: `http.server` on 127.0.0.1 in a thread.

It records every request (headers and raw body) and answers from a script: a status code per
request (the last one repeats) after an optional delay, so a test can play a healthy, a slow
or a failing receiver. With `tls` (a server-side `ssl.SSLContext`) it speaks HTTPS and records
the name each client asked for in its TLS handshake (SNI).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    statuses: list[int] = field(default_factory=lambda: [200])
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)  # SNI, over TLS
    arrived: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> int:
        with self.lock:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]


def verify(secret: str, headers: dict[str, str], body: bytes, *, now: float, tolerance=300):
    """What a receiver does (the README's snippet): recompute the HMAC over "<timestamp>." +
    the raw body, compare in constant time, refuse an old timestamp (a replay)."""
    timestamp = headers["X-Liza-Timestamp"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    if not hmac.compare_digest("sha256=" + expected.hexdigest(), headers["X-Liza-Signature"]):
        return False
    return abs(now - int(timestamp)) <= tolerance


@contextmanager
def webhook_receiver(
    *, statuses=(200,), delay: float = 0.0, tls: ssl.SSLContext | None = None, host="127.0.0.1"
) -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1; its `url` names `host` (e.g. "localhost" for TLS)."""
    receiver = Receiver(url="", statuses=list(statuses), delay=delay)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                receiver.received.append(Received(self.path, dict(self.headers.items()), body))
            receiver.arrived.set()
            if receiver.delay:
                time.sleep(receiver.delay)
            status = receiver.answer()
            try:
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sender timed out and hung up

        def log_message(self, *args) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:

        def note_server_name(_socket, name, _context) -> None:
            with receiver.lock:
                receiver.server_names.append(name)

        tls.sni_callback = note_server_name
        # The handshake runs at accept; one a client aborts (a certificate it refuses) is an
        # OSError there, which the server drops before any request is read.
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    receiver.url = f"{scheme}://{host}:{server.server_address[1]}/hooks/liza"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
