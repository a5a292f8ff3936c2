"""A small history walked through the services at fixed moments over three days (January 4–7,
2026), from which the insights figures were computed by hand (tests/insights/selectors/
test_insights.py lists them; the e2e test checks the charts draw the same numbers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from boards.coordination.services import tasks
from boards.coordination.services.goals import goal_create
from tests.lifecycle import World

# Long leases: the script's coders hold their tasks for hours without heartbeats.
DAY = 86_400


def moment(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, minute, tzinfo=UTC)


def at(world: World, when: datetime) -> None:
    """The next operation of `world` happens at `when` (World ticks one second first)."""
    world.now = when - timedelta(seconds=1)


def finalize(world: World, key: str, when: datetime) -> None:
    at(world, when)
    tasks.task_finalize(task=world.task(key), actor=world.planner, now=world.tick())


def merge(world: World, key: str, when: datetime) -> None:
    at(world, when)
    tasks.task_report_merge(
        task=world.task(key), agent=world.reviewer, merge_commit="merge001", now=world.tick()
    )


def build_history() -> World:
    """The script every figure of these tests was computed from by hand."""
    world = World(now=moment(4, 8))
    goal_create(project=world.project, actor=world.planner, description="Flow", now=world.now)
    # D: a draft since Jan 4 12:00, never finalized.
    at(world, moment(4, 12))
    world.draft("D")
    # A: two review rounds (rejected, then approved), merged Jan 6 13:00.
    at(world, moment(5, 10))
    world.draft("A", lease_duration_override=DAY)
    finalize(world, "A", moment(5, 11))
    at(world, moment(5, 12))
    world.claim("A", "coder-1")
    at(world, moment(5, 14))
    world.submit("A")
    at(world, moment(5, 15))
    world.claim_review("A")
    at(world, moment(5, 16))
    world.verdict("A", "REJECTED")
    at(world, moment(6, 9))
    world.claim("A", "coder-1")
    at(world, moment(6, 10))
    world.submit("A")
    at(world, moment(6, 11))
    world.claim_review("A")
    at(world, moment(6, 12))
    world.verdict("A", "APPROVED")
    merge(world, "A", moment(6, 13))
    # B: approved at the first review, merged Jan 7 10:00.
    at(world, moment(6, 8))
    world.draft("B", lease_duration_override=DAY)
    finalize(world, "B", moment(6, 8, 30))
    at(world, moment(6, 9, 30))
    world.claim("B", "coder-2")
    at(world, moment(6, 15))
    world.submit("B")
    at(world, moment(6, 15, 30))
    world.claim_review("B")
    at(world, moment(6, 16))
    world.verdict("B", "APPROVED")
    merge(world, "B", moment(7, 10))
    # C: blocked by its coder Jan 7 12:00, still blocked at the period's end.
    at(world, moment(7, 9))
    world.draft("C", lease_duration_override=DAY)
    finalize(world, "C", moment(7, 9, 10))
    at(world, moment(7, 9, 20))
    world.claim("C", "coder-3")
    at(world, moment(7, 12))
    world.block("C")
    return world
