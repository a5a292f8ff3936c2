"""The scripted coder: writes its task's file in the worktree, commits, submits for review.

A task whose description says `[ask]` is blocked once with a question; once the planner has
answered it (released to UNCLAIMED), the next claim writes the answer into the file. A rejected
task is redone with the reviewer's reason addressed (a `Checked:` line).
"""

from __future__ import annotations

from typing import Any

from agents.client import gitops
from agents.client.demo_agents.common import RESTART, Env, finish, git, run, say
from agents.client.http import Client
from agents.client.wire import CLAIMED

ASK = "[ask]"


def answer_of(task: dict[str, Any]) -> str:
    """The answer a release carried (its event's detail), or ""."""
    released = [e for e in task.get("history", []) if e.get("action") == "released"]
    return released[-1]["detail"] if released else ""


def write(env: Env, task: dict[str, Any], answer: str) -> str:
    """The task's file, as this iteration writes it; returns its path in the worktree."""
    key = task["key"]
    lines = [
        f"# {key}",
        "",
        task["description"].replace(ASK, "").strip(),
        "",
        f"Done when: {task.get('done_when') or '-'}",
        f"Written by {env.agent_id}, iteration {task.get('iteration') or 1}.",
    ]
    if answer:
        lines.append(f"Answer: {answer}")
    if task.get("rejection_reason"):
        lines.append(
            f"Checked: {task['done_when'] or 'the task'} (after: {task['rejection_reason']})"
        )
    path = env.worktree / "demo" / f"{key}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return str(path.relative_to(env.worktree))


def main(env: Env, client: Client) -> int:
    me = env.agent_id
    key = env.task
    if not key:
        # Run without a supervisor: claim for ourselves, from integration's HEAD.
        base = env.base_commit or git("rev-parse", env.integration_branch, cwd=env.worktree)
        claimed = client.claim_next(base_commit=base, worktree=str(env.worktree))
        if claimed is None:
            say(me, "nothing to claim")
            return finish(client, me)
        key = claimed["key"]
    task = client.task(key)
    if task["status"] != CLAIMED or task["assigned_to"] != me:
        say(me, f"{key} is {task['status']} for {task['assigned_to'] or 'nobody'}: lease lost")
        return RESTART
    say(me, f"working on {key} (iteration {task.get('iteration')}) in {env.worktree}")
    if task.get("handoff_pending"):
        notes = client.pickup(key)
        say(me, f"picked up the handoff: {notes.get('next_action', '')}")
    answer = answer_of(task)
    if ASK in task["description"] and not answer:
        client.block(
            key,
            reason="the task leaves a choice to the planner",
            questions=[f"Which audience should {key} address: newcomers or operators?"],
            attempted=["read the goal and the spec reference"],
        )
        say(me, f"blocked {key} with a question")
        return finish(client, me)
    path = write(env, task, answer)
    client.heartbeat()
    git("add", path, cwd=env.worktree)
    git(
        "-c",
        f"user.name={me}",
        "-c",
        f"user.email={me}@agents.liza.invalid",
        "commit",
        "-q",
        "-m",
        f"{key}: {task['description'][:60]}",
        cwd=env.worktree,
    )
    commit = git("rev-parse", "HEAD", cwd=env.worktree)
    clean = git("status", "--porcelain", cwd=env.worktree) == ""
    # What changed, as `liza submit` uploads it (issue 25): the drawer shows it per round.
    base = task.get("base_commit") or ""
    summary = gitops.change_summary(env.worktree, base, commit) if base else None
    client.submit(key, review_commit=commit, tree_clean=clean, change_summary=summary)
    say(me, f"submitted {key} at {commit[:8]} for review")
    return finish(client, me)


if __name__ == "__main__":
    run(main)
