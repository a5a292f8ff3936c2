"""The watcher's tests run on the coordination services' world: seed 002 requires a goal in a
valid state (tests/coordination/services/conftest.py)."""

from tests.coordination.services.conftest import world

__all__ = ["world"]
