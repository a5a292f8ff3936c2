"""Safe by default, and clean for production (docs/security.md "Production environment").

Settings are read once per process, so each case starts Python in a subprocess with the
environment it is about.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_KEY_OF_THE_FIRST_RELEASE = "liza-board-insecure-embedded-default-key"
# The key is decided when a process reads its settings (liza_site/settings.py), which every
# process does first; django.setup() after it (the apps and their models, ~1.5 s of CPU a
# process against ~0.15) would add nothing to what these tests see.
PRINT_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"


def _environment(**overrides: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "LIZA_")) and name not in ("DATABASE_URL", "REDIS_URL")
    }
    env.update(DJANGO_SETTINGS_MODULE="liza_site.settings", PYTHONPATH=str(ROOT), **overrides)
    return env


def _python(code: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# -- the secret key ------------------------------------------------------------------------------


def test_without_a_secret_key_one_is_generated_privately_and_reused(tmp_path):
    path = tmp_path / "var" / "secret_key"
    env = _environment(LIZA_SECRET_KEY_FILE=str(path))

    first = _python(PRINT_KEY, env)

    assert first != PUBLIC_KEY_OF_THE_FIRST_RELEASE
    assert len(first) >= 50 and len(set(first)) >= 5  # what check --deploy asks of a key
    assert path.read_text().strip() == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _python(PRINT_KEY, env) == first  # reused, not replaced
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_processes_starting_together_agree_on_one_key(tmp_path):
    path = tmp_path / "secret_key"
    env = _environment(LIZA_SECRET_KEY_FILE=str(path))
    processes = [
        subprocess.Popen([sys.executable, "-c", PRINT_KEY], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]  # fmt: skip
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert keys == {path.read_text().strip()}


def test_the_default_key_file_is_in_var():
    env = _environment()
    key = _python(PRINT_KEY, env)
    assert key == (ROOT / "var" / "secret_key").read_text().strip()
    assert key != PUBLIC_KEY_OF_THE_FIRST_RELEASE


def test_a_key_from_the_environment_wins(tmp_path):
    path = tmp_path / "secret_key"
    env = _environment(
        DJANGO_SECRET_KEY="k" * 20 + "from-the-environment", LIZA_SECRET_KEY_FILE=str(path)
    )
    assert _python(PRINT_KEY, env) == "k" * 20 + "from-the-environment"
    assert not path.exists()


# -- check --deploy ------------------------------------------------------------------------------


def documented_production_environment() -> dict[str, str]:
    """The `# production-environment` block of docs/security.md, as KEY=VALUE pairs."""
    text = (ROOT / "docs" / "security.md").read_text()
    block = re.search(r"```sh\n# production-environment[^\n]*\n(.*?)```", text, re.S).group(1)
    values = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
    assert values["DJANGO_SECRET_KEY"].startswith("<")  # a placeholder: generate one here
    values["DJANGO_SECRET_KEY"] = "test-" + os.urandom(32).hex()
    return values


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_check_deploy_is_clean_with_the_documented_production_environment(tmp_path):
    env = _environment(
        **documented_production_environment(), LIZA_SECRET_KEY_FILE=str(tmp_path / "k")
    )
    result = _check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_flags_the_development_defaults(tmp_path):
    """The same check fails without the production settings (so the test above can fail)."""
    result = _check_deploy(_environment(LIZA_SECRET_KEY_FILE=str(tmp_path / "k")))
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout, warning


# -- the API schema setting ----------------------------------------------------------------------

FETCH_SCHEMA = """
import django; django.setup()
from django.test.utils import setup_test_environment; setup_test_environment()
from django.test import Client
print(*(Client().get(url).status_code for url in ("/api/v1/schema/", "/api/v1/docs/")))
"""


@pytest.mark.parametrize(("public", "statuses"), [("true", "200 200"), ("false", "401 401")])
def test_the_api_schema_is_public_unless_configured_otherwise(tmp_path, public, statuses):
    env = _environment(LIZA_PUBLIC_API_SCHEMA=public, LIZA_SECRET_KEY_FILE=str(tmp_path / "k"))
    assert _python(FETCH_SCHEMA, env).splitlines()[-1] == statuses


# -- prepared statements -------------------------------------------------------------------------

PRINT_PREPARE = (
    "from django.conf import settings; "
    "print(settings.DATABASES['default']['OPTIONS'].get('prepare_threshold'))"
)


@pytest.mark.parametrize(("setting", "threshold"), [(None, "5"), ("1", "5"), ("0", "None")])
def test_the_hot_statements_are_prepared_unless_a_pooler_cannot_hold_them(setting, threshold):
    """psycopg prepares only on a server-side binding cursor, which only the hot statements use
    (boards.coordination.rows.prepared_cursor; tests/coordination/test_rows.py shows them
    prepared and nothing else); DB_PREPARED_STATEMENTS=0 leaves them unprepared too."""
    overrides = {} if setting is None else {"DB_PREPARED_STATEMENTS": setting}
    env = _environment(DATABASE_URL="postgres://postgres@127.0.0.1:5432/liza", **overrides)
    assert _python(PRINT_PREPARE, env) == threshold
