"""Fixtures of the file-compatibility tests: seed 002's files and a command runner."""

from __future__ import annotations

import os
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.ci import unavailable

# The `shared` directory sits beside the repository root: <repo>/../shared/fixtures;
# LIZA_SEED_FIXTURES points elsewhere if moved (as in tests/boards/validation).
SHARED_FIXTURES = Path(
    os.environ.get(
        "LIZA_SEED_FIXTURES", Path(__file__).resolve().parents[3].parent / "shared" / "fixtures"
    )
)


@pytest.fixture
def seed_fixtures() -> Path:
    """The seed 002 fixtures; without them a failure on CI (CI=true: they are there), else a
    skip with the reason."""
    if not (SHARED_FIXTURES / "seed-002-valid" / ".liza" / "state.yaml").exists():
        unavailable(f"seed 002 fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.fixture
def valid_dir(seed_fixtures: Path) -> Path:
    return seed_fixtures / "seed-002-valid"


@pytest.fixture
def example_dir(seed_fixtures: Path) -> Path:
    return seed_fixtures / "seed-002-example"


@dataclass(frozen=True)
class Run:
    out: str
    err: str
    code: int  # the process exit code the command would have

    @property
    def out_lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_command(command: str, *args: str, **options) -> Run:
    """call_command, with the exit code a shell would see (CommandError → its returncode)."""
    out, err = StringIO(), StringIO()
    try:
        call_command(command, *args, stdout=out, stderr=err, **options)
        code = 0
    except CommandError as exc:
        err.write(f"CommandError: {exc}\n")
        code = exc.returncode
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return Run(out.getvalue(), err.getvalue(), code)


@pytest.fixture
def manage():
    return run_command
