import pytest

from boards.services.goals import goal_create


@pytest.fixture
def world(db):
    """The suite's World with a goal IN_PROGRESS: seed 002 requires `goal` in a valid state."""
    from tests.lifecycle import World

    world = World()
    goal_create(
        project=world.project,
        actor=world.planner,
        description="Retry logic for every API call",
        now=world.now,
    )
    return world
