"""The heartbeat's rules as a small reference model (the oracle of test_heartbeats_sql.py).

This is the Python the service ran before issue 26 moved the rules into `liza_heartbeat_v1`
(boards migration 0027), with the departed agent's refusal of `liza_heartbeat_v2` (boards
migration 0034) and the superseded session's of `liza_heartbeat_v3` (boards migration 0035),
written over plain rows (`{pk: {column: value}}`, the ORM's `.values()`) so
that it reads as the rules do (seed 002 "Lease Model", SPEC §6):

* a disabled agent is refused; so is a process of a superseded session (the generation it
  sent older than the agent's: its id registered again since), one that left (`left_at`: its
  session ended, the original Liza deleted its registry entry; an agent that never registered
  has none and heartbeats), and one the server took a task from (`lost_task`: exit 42);
* the coder's task, when CLAIMED, must still be its own with a live lease (`lease_alive`: the
  lease plus the grace ahead of now, strictly), else lease_lost; it is extended to now plus
  the task's lease (its override, else the project's) unless the run's progress is stale;
* a code reviewer's open review claims (no verdict, not closed, a lease) in its project, each
  extended the same way while alive;
* the agent: STARTING becomes IDLE, its heartbeat is now, its lease the latest of now plus the
  project's lease and the leases it holds, the context and progress reported are kept.

A refusal writes nothing. Nothing here reads the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

Rows = dict[int, dict[str, Any]]


@dataclass(frozen=True)
class Config:
    lease_duration: int
    lease_grace: int
    stall_timeout: int


@dataclass
class Answer:
    """What the heartbeat answers: `ok`, or the refusal (`disabled`, `superseded`, `left`, `lost`,
    `lease_lost`)
    with the task it names; the task and review claims it answers with."""

    outcome: str
    task: int | None = None
    reviews: list[int] = field(default_factory=list)


def alive(expires: datetime | None, now: datetime, config: Config) -> bool:
    return expires is not None and expires + timedelta(seconds=config.lease_grace) > now


def stale(progress_at: datetime | None, now: datetime, config: Config) -> bool:
    if progress_at is None:
        return False
    return now - min(progress_at, now) > timedelta(seconds=2 * config.stall_timeout)


def task_lease(task: dict[str, Any], now: datetime, config: Config) -> datetime:
    return now + timedelta(seconds=task["lease_duration_override"] or config.lease_duration)


def heartbeat(
    agents: Rows,
    tasks: Rows,
    reviews: Rows,
    agent_pk: int,
    *,
    now: datetime,
    config: Config,
    context_percent: int | None,
    progress_at: datetime | None,
    generation: int | None = None,
) -> Answer:
    """The answer; `agents`, `tasks` and `reviews` are left as the heartbeat leaves the rows."""
    agent = agents[agent_pk]
    if not agent["enabled"]:
        return Answer("disabled")
    if generation is not None and generation < agent["generation"]:
        return Answer("superseded")
    if agent["left_at"] is not None:
        return Answer("left")
    if agent["lost_task_id"] is not None:
        return Answer("lost", agent["lost_task_id"])
    leases = [now + timedelta(seconds=config.lease_duration)]
    task = tasks.get(agent["current_task_id"])
    if task is not None and task["status"] == "CLAIMED":
        if task["assigned_to"] != agent["agent_id"] or not alive(
            task["lease_expires"], now, config
        ):
            return Answer("lease_lost", task["id"])
        if not stale(progress_at, now, config):
            task["lease_expires"] = task_lease(task, now, config)
    if task is not None and task["lease_expires"] is not None:
        leases.append(task["lease_expires"])
    held = []
    if agent["role"] == "code_reviewer":
        held = sorted(
            pk
            for pk, review in reviews.items()
            if tasks[review["task_id"]]["project_id"] == agent["project_id"]
            and review["reviewer"] == agent["agent_id"]
            and review["closed_at"] is None
            and review["verdict"] == ""
            and review["lease_expires"] is not None
        )
    for pk in held:
        review = reviews[pk]
        if alive(review["lease_expires"], now, config):
            review["lease_expires"] = task_lease(tasks[review["task_id"]], now, config)
        leases.append(review["lease_expires"])
    if agent["status"] == "STARTING":
        agent["status"] = "IDLE"
    agent["heartbeat"] = now
    agent["lease_expires"] = max(leases)
    if context_percent is not None:
        agent["context_percent"] = context_percent
    if progress_at is not None:
        agent["progress_at"] = min(progress_at, now)
    return Answer("ok", task["id"] if task is not None else None, held)
