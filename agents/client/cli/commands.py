"""`liza`'s hand-written commands: identity, liveness and work, the coder's claims and
submission, the reviewer's claim, usage, the planner's groups, the board and `liza mcp` (the
contract's other operations are generated: generated.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click

from agents.client import gitops
from agents.client.cli.group import (
    ROLE_COMPLETE,
    WAIT,
    WORK_AVAILABLE,
    client,
    emit,
    main,
    task_line,
)
from agents.client.errors import EXIT, LizaError
from agents.client.wire import TASK_STATES

# -- identity, liveness, work ---------------------------------------------------------------------


@main.command()
@click.option("--context-percent", type=click.IntRange(0, 100))
@click.pass_context
def heartbeat(ctx, context_percent):
    """Extend the agent's leases; exit 42 when the server says stop."""
    beat = client(ctx).heartbeat(context_percent=context_percent)
    emit(ctx, beat, f"{beat['agent']}  task {beat['task'] or '-'}  stop {beat['stop'] or '-'}")
    if beat.get("stop"):
        ctx.exit(EXIT["stop"])


@main.command()
@click.option("--role", help="ask for a role (default: the key's agent's)")
@click.pass_context
def work(ctx, role):
    """Is there work? Exit 0 yes, 10 role complete, 11 wait (Retry-After printed), 42 stop."""
    answer = client(ctx).work(role=role)
    body = answer.body
    if body.get("exit") == EXIT["stop"]:
        code, word = EXIT["stop"], "stop"
    elif body.get("work"):
        code, word = WORK_AVAILABLE, "work"
    elif body.get("exit") == 0:
        code, word = ROLE_COMPLETE, "complete"
    else:
        code, word = WAIT, "wait"
    retry = body.get("retry_after") or answer.headers.get("retry-after")
    human = f"{word}: {body.get('reason', '')}"
    if code == WAIT and retry:
        human += f"\nRetry-After: {retry}"
    emit(ctx, body, human)
    ctx.exit(code)


# -- the coder ------------------------------------------------------------------------------------


@main.command()
@click.argument("key", required=False)
@click.option("--base-commit", default="", help="integration HEAD at claim time")
@click.option("--worktree")
@click.pass_context
def claim(ctx, key, base_commit, worktree):
    """Claim KEY, or the best claimable task without KEY (exit 11 when there is none)."""
    c = client(ctx)
    if key:
        task = c.claim(key, base_commit=base_commit, worktree=worktree)
    else:
        task = c.claim_next(base_commit=base_commit, worktree=worktree)
    emit(ctx, {"task": task}, task_line(task))
    if task is None:
        ctx.exit(WAIT)


@main.command("claim-next")
@click.option("--base-commit", default="", help="integration HEAD at claim time")
@click.option("--worktree")
@click.pass_context
def claim_next(ctx, base_commit, worktree):
    """Claim the best claimable task (exit 11 when there is none)."""
    ctx.invoke(claim, key=None, base_commit=base_commit, worktree=worktree)


@main.command()
@click.argument("key")
@click.option("--commit", "review_commit", required=True, help="the commit to review")
@click.option(
    "--tree-clean/--tree-dirty",
    required=True,
    default=None,
    help="attest that `git status --porcelain` is empty",
)
@click.option("--pr-url", default=None, help="the pull request opened for it (http(s))")
@click.pass_context
def submit(ctx, key, review_commit, tree_clean, pr_url):
    """Request review of KEY at a commit (with what it changed, when run in its repository,
    and the pull request's address when one was opened)."""
    api = client(ctx)
    summary = _change_summary(api, key, review_commit)
    task = api.submit(
        key,
        review_commit=review_commit,
        tree_clean=tree_clean,
        change_summary=summary,
        pr_url=pr_url,
    )
    emit(ctx, {"task": task}, task_line(task))


def _change_summary(api, key: str, review_commit: str) -> dict | None:
    """What the review commit changed since the task's base commit, from the git repository
    the command runs in (issue 25); None when there is none to read (not a repository, an
    unknown commit): the submission goes on without it."""
    try:
        base = api.task(key).get("base_commit") or ""
        if not base:
            return None
        return gitops.change_summary(Path.cwd(), base, review_commit)
    except (gitops.GitError, LizaError, OSError, ValueError):
        return None


# -- the code reviewer ----------------------------------------------------------------------------


@main.group()
def review():
    """The code reviewer's operations."""


@review.command("claim-next")
@click.pass_context
def review_claim_next(ctx):
    """Claim the review the server picks (exit 11 when there is none)."""
    body = client(ctx).review_claim_next()
    task = body.get("task")
    emit(ctx, body, f"reviewing {task['key']} at {task['review_commit']}" if task else "no review")
    if not body.get("review"):
        ctx.exit(WAIT)


# -- records --------------------------------------------------------------------------------------


@main.command()
@click.option("--model", default="", help="the model's name as the provider says it")
@click.option("--input-tokens", type=click.IntRange(min=0), default=0)
@click.option("--output-tokens", type=click.IntRange(min=0), default=0)
@click.option("--cache-read-tokens", type=click.IntRange(min=0), default=0)
@click.option("--cache-write-tokens", type=click.IntRange(min=0), default=0)
@click.option("--cost-usd", type=click.FloatRange(min=0), help="the session's cost so far")
@click.pass_context
def usage(ctx, **reported):
    """Report this session's usage so far for one model (running totals: counted once)."""
    body = client(ctx).usage(**reported)
    row = body[0] if body else {}
    emit(
        ctx,
        body,
        f"usage of run {row.get('run')}: {row.get('tokens')} tokens, ${row.get('cost_usd')}",
    )


# -- the planner ----------------------------------------------------------------------------------


@main.group()
def goal():
    """The project's goal."""


@main.group()
def task():
    """The planner's task operations (and `task show`)."""


@main.group()
def sprint():
    """The current sprint."""


# -- the board ------------------------------------------------------------------------------------


@main.command()
@click.option("--status", multiple=True, help="only tasks in this state (repeatable)")
@click.option("--assigned-to", help="only this agent's tasks")
@click.option("--search", "q", help="text in key or description")
@click.option("--priority", type=int)
@click.option("--criticality")
@click.option("--goal", help="a goal id")
@click.option("--sprint", help="a sprint id (planned or stretch)")
@click.pass_context
def status(ctx, status, **filters):
    """The board: tasks by state."""
    tasks = client(ctx).tasks(status=list(status) or None, **filters)
    by_state: dict[str, list[dict[str, Any]]] = {}
    for row in tasks:
        by_state.setdefault(row["status"], []).append(row)
    if ctx.obj.as_json:
        counts = Counter(row["status"] for row in tasks)
        emit(ctx, {"counts": dict(counts), "tasks": by_state})
        return
    states = [s for s in TASK_STATES if s in by_state] + sorted(set(by_state) - set(TASK_STATES))
    width = max((len(s) for s in states), default=0)
    lines = [f"{ctx.obj.project}: {len(tasks)} tasks"]
    for state in states:
        rows = by_state[state]
        keys = ", ".join(
            row["key"] + (f" ({row['assigned_to']})" if row.get("assigned_to") else "")
            for row in rows
        )
        lines.append(f"{state:<{width}}  {len(rows):>3}  {keys}")
    click.echo("\n".join(lines))


# -- MCP ------------------------------------------------------------------------------------------


def _mcp_epilog() -> str:
    from agents.client.upstream import tools_help

    return tools_help()


@main.command(epilog=_mcp_epilog())
@click.pass_context
def mcp(ctx):
    """Serve this key's role's operations as MCP tools over stdio (for Claude Code, Codex …),
    also under upstream Liza's `liza_*` names, with the resources liza://state, liza://tasks
    and liza://agents. An `agent_id` argument must be the key's own agent."""
    # Imported here: the SDK is heavy, and only this command needs it.
    from agents.client.mcp_server import run as serve_mcp

    ctx.exit(serve_mcp(client(ctx)))
