from __future__ import annotations

import pytest

from tests.admin.helpers import build_board


@pytest.fixture
def board(world):
    return build_board(world)
