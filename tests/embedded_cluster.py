"""The embedded default's PostgreSQL cluster (liza_site/embedded_db.py) from a test: a cluster in
a folder of the test's own (LIZA_EMBEDDED_PG_DIR), started with this test process as a holder
and stopped after, e.g. to read what a `.ci/serve` left once it stopped (its data survives)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.live_server import ROOT


def cluster_command(pg_dir: Path, *args: str, holder: int | None = None) -> str:
    env = {**os.environ, "LIZA_EMBEDDED_PG_DIR": str(pg_dir)}
    command = [sys.executable, "-m", "liza_site.embedded_db", *args]
    if holder is not None:
        command += ["--holder", str(holder)]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


@contextlib.contextmanager
def embedded_cluster(pg_dir: Path) -> Iterator[str]:
    """The cluster's DATABASE_URL while it runs, held by this process."""
    url = cluster_command(pg_dir, "start", holder=os.getpid())
    try:
        yield url
    finally:
        cluster_command(pg_dir, "stop", holder=os.getpid())
