"""The insights pages' tests run on the board pages' fixtures: the in-memory channel layer and
the sprint world (tests/board/web/conftest.py)."""

from tests.board.web.conftest import _in_memory_layer, world

__all__ = ["_in_memory_layer", "world"]
