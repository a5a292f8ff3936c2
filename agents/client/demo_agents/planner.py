"""The scripted planner: plans the goal into a sprint, answers blocked tasks, completes the goal.

Wake triggers, one a session, the first that applies: BLOCKED_TASKS releases each blocked
task with an answer (a task blocked by a limit cannot be released by an agent: it is abandoned);
INITIAL_PLANNING (the goal has no task yet; the original's "no task at all", which it checks
first) writes four tasks (one depending on another, one marked `[ask]` that a coder will block
with a question), finalizes them and starts a sprint with them planned. When every task of the
goal has ended the goal is completed (exit 0), once the watcher has closed the sprint; until
then, and whenever nothing is left to do, exit 42 (the supervisor waits for work).
"""

from __future__ import annotations

import os
from typing import Any

from agents.client.demo_agents.common import DONE, RESTART, Env, finish, run, say
from agents.client.errors import LizaError
from agents.client.http import Client
from agents.client.wire import BLOCKED, GOAL_IN_PROGRESS, TERMINAL_TASK_STATES

DEFAULT_GOAL = "Write the demo guide: an introduction, a usage page, a glossary and an FAQ"
SPEC = "README.md"


def plan(goal_id: str) -> list[dict[str, Any]]:
    """The goal's tasks: `usage` waits for `intro`; `faq` asks a question first."""
    return [
        {
            "key": f"{goal_id}-intro",
            "description": "Introduce the demo guide",
            "done_when": "demo/<key>.md names the goal",
            "priority": 1,
        },
        {
            "key": f"{goal_id}-glossary",
            "description": "List the protocol's words",
            "done_when": "demo/<key>.md defines task, lease and review",
            "priority": 2,
        },
        {
            "key": f"{goal_id}-usage",
            "description": "Show how to run the team",
            "done_when": "demo/<key>.md shows the command",
            "priority": 2,
            "depends_on": [f"{goal_id}-intro"],
        },
        {
            "key": f"{goal_id}-faq",
            "description": "Answer the first questions [ask]",
            "done_when": "demo/<key>.md answers for the chosen audience",
            "priority": 3,
        },
    ]


def current_goal(client: Client, me: str) -> dict[str, Any]:
    """The project's goal; without one, the goal of LIZA_GOAL (or the demo's) is set."""
    try:
        return client.goal()
    except LizaError as error:
        if error.code != "not_found":
            raise
    goal = client.goal_create(
        description=os.environ.get("LIZA_GOAL") or DEFAULT_GOAL, spec_ref=SPEC
    )
    say(me, f"goal {goal['id']}: {goal['description']}")
    return goal


def initial_planning(client: Client, me: str, goal_id: str) -> None:
    keys = []
    for task in plan(goal_id):
        created = client.task_create(spec_ref=SPEC, sprint_scope=None, **task)
        keys.append(created["key"])
    for key in keys:
        client.task_finalize(key)
    sprint = client.sprint_create(planned=keys)
    say(me, f"INITIAL_PLANNING: {', '.join(keys)} in {sprint['id']}")


def answer_blocked(client: Client, me: str, task: dict[str, Any]) -> None:
    key = task["key"]
    try:
        client.task_release(key, reason="Answer: write for newcomers; keep it to one page")
        say(me, f"BLOCKED_TASKS: answered {key}")
    except LizaError as error:
        if error.exit == RESTART:
            raise
        client.task_abandon(key, reason=f"cannot be answered by the planner: {error.message}")
        say(me, f"BLOCKED_TASKS: abandoned {key} ({error.code})")


def main(env: Env, client: Client) -> int:
    """One wake trigger per session, the first that applies (the original's order)."""
    me = env.agent_id
    blocked = client.tasks(status=BLOCKED)
    if blocked:
        for task in blocked:
            answer_blocked(client, me, task)
        return finish(client, me)
    goal = current_goal(client, me)
    if goal["status"] != GOAL_IN_PROGRESS:
        say(me, f"goal {goal['id']} is {goal['status']}: nothing to plan")
        return DONE
    tasks = client.tasks(goal=goal["id"])
    if not tasks:
        initial_planning(client, me, goal["id"])
        return finish(client, me)
    if all(t["status"] in TERMINAL_TASK_STATES for t in tasks):
        try:
            client.goal_complete(reason="every task of the goal has ended")
        except LizaError as error:
            if error.code != "conflict":
                raise
            say(me, f"goal not complete yet: {error.message}")
            return RESTART
        say(me, f"goal {goal['id']} completed")
        return DONE
    return finish(client, me)


if __name__ == "__main__":
    run(main)
