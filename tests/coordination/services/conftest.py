import pytest


@pytest.fixture
def world(db):
    """The suite's World with a goal IN_PROGRESS: seed 002 requires `goal` in a valid state."""
    from tests.coordination.services.helpers import goal_world

    return goal_world()
