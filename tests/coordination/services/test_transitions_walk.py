import pytest

from boards import protocol as p


@pytest.mark.django_db
@pytest.mark.parametrize("status", p.TASK_STATES)
def test_every_state_is_reachable_through_the_services(world, status):
    task = world.drive_to(status, "task-x")
    assert task.status == status
