import pytest

from boards.services.goals import goal_create


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # World() makes a human admin; PBKDF2 would cost ~0.3 s per test for a password nobody uses.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def world(db, _fast_password_hasher):
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
