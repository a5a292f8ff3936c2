"""HTTP load generator for `bench/claims.py`: virtual agents POSTing claim-next on loopback.

Runs in its own process (the benchmark starts it), so the client's Python does not share a GIL
with the server or with the benchmark's bookkeeping. Each virtual agent is one asyncio task
with one keep-alive HTTP/1.1 connection; it claims with one agent key after another (an agent
holds one task at a time, seed 000), one request in flight at a time. The client is a few
dozen lines of raw HTTP on uvloop rather than httpx: at ~50 µs a request it leaves the two
cores to the server and PostgreSQL.

With `"repeat": true` in the spec (bench/heartbeats.py) each virtual agent sends its one key's
request again and again until the time is up, `"body"` giving the JSON it posts, and every 200
counts as done; otherwise each key claims once (claim-next) and `task: null` ends the agent.

Input: a JSON spec file (argv[1]). Output: one JSON object on stdout.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from typing import Any

BODY = b'{"base_commit": "bench0001"}'


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = False
    close = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif name == b"connection" and b"close" in value.lower():
            close = True
    if chunked:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size + 2)
            body = body[:-2]
    else:
        body = await reader.readexactly(length or 0)
    return status, body, close


async def _agent(
    spec: dict[str, Any], keys: list[str], start: asyncio.Event, out: dict[str, Any]
) -> None:
    host, port, path = spec["host"], spec["port"], spec["path"]
    repeat = spec.get("repeat", False)
    body_out = spec["body"].encode() if "body" in spec else BODY
    reader, writer = await asyncio.open_connection(host, port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body_out)}\r\nAuthorization: Bearer "
    ).encode()
    await start.wait()
    deadline = out["deadline"]
    for key in itertools.cycle(keys) if repeat else keys:
        if time.perf_counter() >= deadline:
            break
        request = head + key.encode() + b"\r\n\r\n" + body_out
        t0 = time.perf_counter()
        writer.write(request)
        try:
            status, body, close = await asyncio.wait_for(_read_response(reader), 30)
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError) as exc:
            out["errors"][type(exc).__name__] = out["errors"].get(type(exc).__name__, 0) + 1
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
            continue
        t1 = time.perf_counter()
        out["end"] = max(out["end"], t1)
        if status == 200 and repeat:
            out["latencies"].append((t1 - t0) * 1000)
        elif status == 200:
            task = json.loads(body)["task"]
            if task is None:
                out["empty"] += 1
                break
            out["latencies"].append((t1 - t0) * 1000)
            out["claimed"].append(task["key"])
        else:
            out["errors"][str(status)] = out["errors"].get(str(status), 0) + 1
            if len(out["samples"]) < 5:
                out["samples"].append(body[:300].decode(errors="replace"))
        if close:
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
    else:
        out["exhausted"] += 1
    writer.close()


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "latencies": [],
        "claimed": [],
        "errors": {},
        "samples": [],
        "empty": 0,
        "exhausted": 0,
        "end": 0.0,
        "deadline": 0.0,
    }
    start = asyncio.Event()
    workers = [asyncio.create_task(_agent(spec, keys, start, out)) for keys in spec["keys"]]
    await asyncio.sleep(0.2)  # every connection open before the clock starts
    began = time.perf_counter()
    out["deadline"] = began + spec["duration"]
    start.set()
    await asyncio.wait_for(asyncio.gather(*workers), spec["duration"] + 60)
    out["elapsed"] = max(out["end"] - began, 1e-9)
    del out["end"], out["deadline"]
    return out


def run_from_spec(entry) -> None:
    """A load generator's process: `entry(spec)` run on uvloop (else asyncio) with the JSON spec
    its bench wrote to the file named first on the command line, its result printed as JSON."""
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    try:
        import uvloop

        result = uvloop.run(entry(spec))
    except ImportError:  # plain asyncio is slower but measures the same thing
        result = asyncio.run(entry(spec))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    run_from_spec(main)
