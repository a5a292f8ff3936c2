"""What the suite needs from its machine, and what happens when it is missing.

On CI (`CI=true`, as `.ci/test` runs) every dependency the suite declares is there, so a missing
one is a failure: a skipped proof would pass unnoticed. Elsewhere (a developer's machine) the
test skips with the reason.
"""

from __future__ import annotations

import os

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str, *, ci_hint: str = "") -> None:
    """Fail on CI, skip elsewhere; never returns."""
    if on_ci():
        pytest.fail(f"{reason} (CI=true: these tests must run{'; ' + ci_hint if ci_hint else ''})")
    pytest.skip(reason)
