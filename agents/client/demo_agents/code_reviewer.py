"""The scripted code reviewer: reads the task's file at the review commit and judges it.

It rejects a "strict" task (common.strict: about half, by a CRC of the key) until its file has
a `Checked:` line saying how the DONE WHEN was verified, and any commit without the task's
file; it approves the rest. Merging is the supervisor's, after an approval.
"""

from __future__ import annotations

from typing import Any

from agents.client.demo_agents.common import (
    RESTART,
    Env,
    GitError,
    finish,
    git,
    run,
    say,
    strict,
)
from agents.client.errors import LizaError
from agents.client.http import Client
from agents.client.wire import APPROVED, READY_FOR_REVIEW, REJECTED


def judge(env: Env, task: dict[str, Any]) -> tuple[str, str]:
    """(verdict, reason) for the task at its review commit."""
    key, commit = task["key"], task["review_commit"]
    try:
        text = git("show", f"{commit}:demo/{key}.md", cwd=env.repo)
    except GitError as error:
        return REJECTED, f"demo/{key}.md is not in {commit[:8]}: {error}"
    if f"# {key}" not in text:
        return REJECTED, f"demo/{key}.md does not start with its title"
    if strict(key) and "Checked:" not in text:
        return REJECTED, "Say how the DONE WHEN was verified: add a 'Checked:' line"
    return APPROVED, "the file says what the task asks, and how it was checked"


def claim_one(client: Client, me: str) -> str:
    """Without a supervisor: the first READY_FOR_REVIEW task whose review this agent may take."""
    for row in client.tasks(status=READY_FOR_REVIEW):
        try:
            client.review_claim(row["key"])
        except LizaError as error:
            if error.exit == RESTART:
                raise
            continue
        return row["key"]
    return ""


def main(env: Env, client: Client) -> int:
    me = env.agent_id
    key = env.task or claim_one(client, me)
    if not key:
        say(me, "nothing to review")
        return finish(client, me)
    task = client.task(key)
    reviewers = task.get("reviewing_by") or []
    if task["status"] != READY_FOR_REVIEW or me not in reviewers:
        say(me, f"{key} is {task['status']}, reviewed by {', '.join(reviewers) or 'nobody'}")
        return RESTART
    verdict, reason = judge(env, task)
    client.verdict(key, verdict=verdict, review_commit=task["review_commit"], reason=reason)
    say(me, f"{verdict} {key} at {task['review_commit'][:8]}: {reason}")
    return finish(client, me)


if __name__ == "__main__":
    run(main)
