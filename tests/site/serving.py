"""What the tests of `.ci/serve` share: its children, their end, and the insights it serves."""

from __future__ import annotations

import csv
import io
import signal
import subprocess
import time
from pathlib import Path

import httpx

from boards.demo.projects import ADMIN_PASSWORD, ADMIN_USERNAME


def children(pid: int) -> dict[int, str]:
    """Direct children of `pid` and their command lines (Linux /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, ValueError, IndexError):
            continue
    return {k: v.decode() for k, v in found.items()}


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stops_on_sigterm(serve: subprocess.Popen, pids: list[int]) -> None:
    """SIGTERM to `.ci/serve`: it exits 143, and every one of `pids` is gone soon after."""
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=60) == 143
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if alive(pid)]
        time.sleep(0.2)


def insights_csv(url: str, *charts: str) -> list[list[dict[str, str]]]:
    """Each chart's CSV from demo-flow's insights page, signed in as the demo admin."""
    with httpx.Client(base_url=url, timeout=60) as web:
        web.get("/login/")
        signed_in = web.post(
            "/login/",
            data={
                "username": ADMIN_USERNAME,
                "password": ADMIN_PASSWORD,
                "csrfmiddlewaretoken": web.cookies["csrftoken"],
            },
            headers={"Referer": f"{url}/login/"},
        )
        assert signed_in.status_code == 302, signed_in.text[:500]
        tables = []
        for chart in charts:
            answer = web.get("/p/demo-flow/insights/", params={"format": "csv", "chart": chart})
            assert answer.status_code == 200, answer.text[:500]
            tables.append(list(csv.DictReader(io.StringIO(answer.text))))
        return tables
