"""A real webhook receiver for the tests: `http.server` on 127.0.0.1 in a thread.

It records every request (headers and raw body) and answers from a script: a status code per
request (the last one repeats) after an optional delay, so a test can play a healthy, a slow
or a failing receiver. `answer` plays a hostile one (issue #27): "slow_headers" drips its
status line and headers a byte every `drip` seconds, "slow_body" sends `200` with
`Content-Length: 1000` and then a byte every `drip` seconds, "huge" announces 1.5 GB and
writes zeros as fast as the sender reads them (`sent_bytes` counts what it took).
With `tls` (a server-side `ssl.SSLContext`) it speaks HTTPS and records
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
    answer_kind: str = "normal"
    drip: float = 1.0
    sent_bytes: int = 0
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
    *,
    statuses=(200,),
    delay: float = 0.0,
    tls: ssl.SSLContext | None = None,
    host="127.0.0.1",
    answer: str = "normal",
    drip: float = 1.0,
) -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1; its `url` names `host` (e.g. "localhost" for TLS)."""
    receiver = Receiver(url="", statuses=list(statuses), delay=delay, answer_kind=answer, drip=drip)
    stopping = threading.Event()

    def drip_out(wfile, data: bytes) -> None:
        for i in range(len(data)):
            if stopping.wait(receiver.drip):
                return
            wfile.write(data[i : i + 1])
            wfile.flush()

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
                if receiver.answer_kind != "normal":
                    self.hostile(status)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the sender timed out and hung up

        def hostile(self, status: int) -> None:
            head = f"HTTP/1.1 {status} OK\r\n"
            if receiver.answer_kind == "slow_headers":
                drip_out(self.wfile, f"{head}Content-Length: 2\r\n\r\nok".encode())
            elif receiver.answer_kind == "slow_body":
                self.wfile.write(f"{head}Content-Length: 1000\r\n\r\n".encode())
                self.wfile.flush()
                drip_out(self.wfile, b"x" * 1000)
            elif receiver.answer_kind == "huge":
                size = 1_500_000_000
                self.wfile.write(f"{head}Content-Length: {size}\r\n\r\n".encode())
                block = b"\0" * 65536
                while receiver.sent_bytes < size and not stopping.is_set():
                    self.wfile.write(block)
                    with receiver.lock:
                        receiver.sent_bytes += len(block)
            self.close_connection = True

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
        stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def project_with_deliveries(url: str, count: int, secret: str):
    """A World whose project sends its escalations to `url` (signed with `secret`) and has
    `count` critical alerts, each with its delivery due after one sweep."""
    from boards.coordination.services.projects import config_update
    from boards.watch.models import WebhookDelivery
    from boards.watch.services.watch import watch_sweep
    from tests.lifecycle import World

    world = World()
    config_update(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        escalation_webhook=url,
        webhook_secret=secret,
    )
    for i in range(count):
        world.integration_failed(f"T-{i}", coder=f"coder-{1 + i % 3}")
    watch_sweep(project=world.project, now=world.tick())
    assert WebhookDelivery.objects.filter(project=world.project).count() == count
    return world
