"""The client's copy of the wire's words is the protocol's (agents/client/wire.py)."""

from agents.client import wire
from boards import protocol as p
from boards.coordination.models.tasks import Review


def test_the_clients_task_states_are_the_protocols_in_order():
    assert wire.TASK_STATES == p.TASK_STATES


def test_the_clients_verdicts_are_the_servers():
    assert set(wire.VERDICTS) == set(Review.Verdict.values)


def test_the_clients_terminal_states_and_goal_state_are_the_protocols():
    assert wire.TERMINAL_TASK_STATES == p.TERMINAL_TASK_STATES
    assert wire.GOAL_IN_PROGRESS == p.GoalStatus.IN_PROGRESS
    assert wire.GOAL_COMPLETED == p.GoalStatus.COMPLETED
    assert (wire.CLAIMED, wire.BLOCKED) == (p.TaskStatus.CLAIMED, p.TaskStatus.BLOCKED)
