"""The embedded default's PostgreSQL (liza_site/embedded_db.py) and the move of the old SQLite
default's data into it (boards/management/commands/liza_move_sqlite.py).

Each test runs clusters of its own in tmp_path (LIZA_EMBEDDED_PG_DIR), never the suite's."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from liza_site.embedded_db import database_url, socket_dir
from tests.embedded_cluster import cluster_command, embedded_cluster
from tests.live_server import ROOT, sibling_database_url

OLD_RELEASE = Path(__file__).parent / "fixtures" / "embedded-sqlite-740253f.sqlite3.gz"


def _running(pg_dir: Path) -> bool:
    return cluster_command(pg_dir, "status").startswith("running")


def test_a_cluster_keeps_its_data_across_a_restart(tmp_path):
    pg = tmp_path / "pg"
    with embedded_cluster(pg) as url, psycopg.connect(url, autocommit=True) as db:
        db.execute("CREATE TABLE kept (word text)")
        db.execute("INSERT INTO kept VALUES ('lease')")
        assert db.execute("SHOW server_version").fetchone()[0].startswith("18.")
        # Only a Unix socket of its own: no TCP port to clash with another run.
        assert db.execute("SHOW listen_addresses").fetchone() == ("",)
        # The product's data is durable.
        assert db.execute("SHOW fsync").fetchone() == ("on",)
        assert db.execute("SHOW synchronous_commit").fetchone() == ("on",)
    assert not _running(pg)

    with embedded_cluster(pg) as url, psycopg.connect(url) as db:
        assert db.execute("SELECT word FROM kept").fetchall() == [("lease",)]


DURABILITY = ("fsync", "synchronous_commit", "full_page_writes")


def test_the_test_commands_throwaway_cluster_skips_durability(tmp_path):
    pg = tmp_path / "pg"
    url = cluster_command(pg, "start", "--throwaway", holder=os.getpid())
    try:
        with psycopg.connect(url) as db:
            settings = [db.execute(f"SHOW {name}").fetchone()[0] for name in DURABILITY]
        assert settings == ["off", "off", "off"]
    finally:
        cluster_command(pg, "stop", holder=os.getpid())
    assert not _running(pg)


def test_the_last_holder_stops_the_cluster_and_a_dead_one_is_forgotten(tmp_path):
    pg = tmp_path / "pg"
    # A holder that died without saying so (kill -9): it never keeps the server up.
    ghost = subprocess.Popen(["sleep", "60"])
    cluster_command(pg, "start", holder=ghost.pid)
    with embedded_cluster(pg):
        ghost.send_signal(signal.SIGKILL)
        ghost.wait()
        cluster_command(pg, "start", holder=os.getpid())  # a second start is harmless
        assert _running(pg)
    assert not _running(pg)

    # Two live holders: the first to leave leaves it running for the other.
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        cluster_command(pg, "start", holder=sleeper.pid)
        with embedded_cluster(pg):
            pass
        assert _running(pg)
        cluster_command(pg, "stop", holder=sleeper.pid)
        assert not _running(pg)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_two_checkouts_run_their_clusters_side_by_side(tmp_path):
    with embedded_cluster(tmp_path / "one") as one, embedded_cluster(tmp_path / "two") as two:
        assert one != two
        with psycopg.connect(one, autocommit=True) as a, psycopg.connect(two) as b:
            a.execute("CREATE TABLE only_here ()")
            assert b.execute("SELECT to_regclass('only_here')").fetchone() == (None,)


def test_a_deep_checkout_gets_a_short_socket_folder(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("LIZA_EMBEDDED_PG_DIR", str(deep / "var" / "postgres"))
    short = socket_dir(deep)
    assert len(str(short / ".s.PGSQL.5432")) < 100
    assert socket_dir(deep) == short  # the same folder for every process of that checkout
    assert f"host={short}" in database_url(deep)


# -- the old SQLite default's data --------------------------------------------------------------


def _fresh_database(name: str, template: str | None = None) -> str:
    """An empty database `name`, or a copy of `template`, beside the suite's."""
    url = sibling_database_url(os.environ["DATABASE_URL"], name)
    copied = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(sibling_database_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"{copied}')
    return url


def _drop(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(sibling_database_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "liza_site.settings"}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def old_file(tmp_path) -> Path:
    """The embedded SQLite database of the last release that had one (740253f), as its
    `.ci/serve` left it: migrated, the demo projects imported, the demo admin and a key."""
    path = tmp_path / "var" / "liza.sqlite3"
    path.parent.mkdir()
    with gzip.open(OLD_RELEASE) as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return path


def test_the_old_sqlite_database_moves_into_postgresql_checked(tmp_path, old_file):
    url = _fresh_database(f"liza_move_{os.getpid()}")
    try:
        moved = _manage(url, "liza_move_sqlite", "--path", str(old_file))
        assert moved.returncode == 0, moved.stdout + moved.stderr
        assert "row counts checked" in moved.stdout
        assert not old_file.exists()
        assert old_file.with_name("liza.sqlite3.moved").is_file()  # kept, never deleted

        with psycopg.connect(url) as db:
            counts = [
                db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("boards_project", "boards_task", "boards_event", "auth_user",
                              "agents_agent", "agents_agentkey")
            ]  # fmt: skip
            # Identity sequences continue after the copied ids.
            db.execute(
                "INSERT INTO django_content_type (app_label, model) VALUES ('probe', 'probe')"
            )
        assert counts == [2, 42, 291, 1, 10, 1]
        # Migrated to this release, and valid by the validator.
        assert "[ ]" not in _manage(url, "showmigrations", "boards", "agents").stdout
        for project in ("demo", "demo-flow"):
            valid = _manage(url, "liza_validate", "--project", project)
            assert valid.stdout.strip() == "VALID", valid.stdout + valid.stderr
        # The demo admin signs in with the password the old release gave it.
        login = _manage(
            url,
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model;"
            "print(get_user_model().objects.get(username='admin').check_password('liza-admin'))",
        )
        assert login.stdout.strip().splitlines()[-1] == "True", login.stdout + login.stderr

        # Once moved, the command does nothing.
        again = _manage(url, "liza_move_sqlite", "--path", str(old_file))
        assert (again.returncode, again.stdout) == (0, "")
    finally:
        _drop(url)


def test_the_move_refuses_a_database_that_already_holds_data(tmp_path, old_file, django_db_setup):
    # A copy of the suite's migrated template (tests/template_db.py: `manage.py migrate` of an
    # empty database, as this test ran it itself before — 13-20 s of CPU — then copied).
    from django.conf import settings

    template = settings.DATABASES["default"]["TEST"]["TEMPLATE"]
    url = _fresh_database(f"liza_move_refused_{os.getpid()}", template=template)
    try:
        assert _manage(url, "liza_demo").returncode == 0

        refused = _manage(url, "liza_move_sqlite", "--path", str(old_file))

        assert refused.returncode == 1
        assert "nothing was moved" in refused.stderr
        assert old_file.is_file()  # left where it was
    finally:
        _drop(url)
