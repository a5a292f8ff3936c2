import pytest

from tests.board.live.helpers import in_memory_layer_settings


@pytest.fixture(autouse=True)
def _in_memory_layer(settings):
    # The pages read the board sequence; with CI's REDIS_URL they would read another suite's
    # Redis database. The page tests never commit, so nothing is published either way.
    with in_memory_layer_settings(settings):
        yield


@pytest.fixture
def world(db):
    from tests.board.web.helpers import sprint_world

    return sprint_world()
