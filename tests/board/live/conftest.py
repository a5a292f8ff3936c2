"""Fixtures for the board websocket: one channel layer per test, chosen explicitly.

CI exports REDIS_URL, so nothing here relies on the settings' default layer: a test asks for
the in-memory layer (and the process-local sequence) or for the Redis pub/sub layer on a
database and a channel prefix of its own.
"""

from __future__ import annotations

import pytest

from tests.board.live.helpers import in_memory_layer_settings, redis_layer_settings
from tests.private_redis import private_redis_url


@pytest.fixture
def in_memory_layer(settings):
    with in_memory_layer_settings(settings):
        yield


@pytest.fixture
def redis_layer(settings):
    with redis_layer_settings(settings, private_redis_url()) as prefix:
        yield prefix
