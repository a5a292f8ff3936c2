"""`liza`: the agent protocol (SPEC §6) from a shell.

Configured by flags or the environment (LIZA_URL, LIZA_PROJECT, LIZA_KEY or LIZA_KEY_FILE).
Prints a short human summary, or the server's JSON with `--json`. The exit code is the
protocol's (the server's `details.exit`); `liza work` and `liza claim` add their own, below.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from agents.client import gitops
from agents.client.contract import CONTRACT, Endpoint, Param
from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client
from agents.client.wire import TASK_STATES

# `liza work` (and `liza claim` without a key): what the agent process does next.
WORK_AVAILABLE = 0
ROLE_COMPLETE = 10
WAIT = 11

EXIT_HELP = f"""\b
Exit codes:
  0   ok (liza work: there is work for this role now)
  2   usage: wrong flags, missing configuration, a world-readable key file
  3   refused: validation, permission or authentication; fix the call
  4   conflict: invalid transition or a lost race; read the board again
  5   not found (or another project's)
  6   collision: the agent id is held by a live session; exit
  7   unreachable: no answer or a 5xx after retries (try again later), or a
      redirect (3xx), never followed: the Location is printed; fix the URL
  {ROLE_COMPLETE}  liza work: the role is complete, nothing more will come
  {WAIT}  liza work / liza claim: nothing now; Retry-After is printed, ask again then
  12  liza supervise: the agent crashed 3 times within 5 minutes
  13  liza supervise: the supervisor itself failed 3 times within 5 minutes
  14  budget exhausted: a budget of the project, goal, sprint, agent or task is
      spent; nothing more until an admin raises it (liza supervise waits)
  42  stop: lease lost, paused, checkpoint or aborted; stop and restart
"""


class State:
    def __init__(
        self, url: str | None, project: str | None, key: str | None, as_json: bool, retries: int
    ) -> None:
        self.url, self.project, self.key, self.as_json = url, project, key, as_json
        self.retries = retries
        self.key_file: str | None = None
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            missing = [
                name
                for name, value in (
                    ("--url/LIZA_URL", self.url),
                    ("--project/LIZA_PROJECT", self.project),
                    ("--key/LIZA_KEY or --key-file/LIZA_KEY_FILE", self.key),
                )
                if not value
            ]
            if missing:
                raise UsageError("missing configuration: " + ", ".join(missing))
            self._client = Client(
                self.url,  # type: ignore[arg-type]
                self.project,  # type: ignore[arg-type]
                self.key,  # type: ignore[arg-type]
                retries=self.retries,
            )
        return self._client


def read_key_file(path: str) -> str:
    """The key in `path`, refused if anyone on the machine may read it."""
    try:
        mode = os.stat(path).st_mode
        text = Path(path).read_text().strip()
    except OSError as exc:
        raise UsageError(f"cannot read the key file {path}: {exc.strerror}") from exc
    if mode & stat.S_IROTH:
        raise UsageError(
            f"the key file {path} is world-readable (mode {stat.S_IMODE(mode):o}); "
            f"run: chmod 600 {path}"
        )
    if not text:
        raise UsageError(f"the key file {path} is empty")
    return text


def emit(ctx: click.Context, body: Any, human: str | None = None) -> None:
    state: State = ctx.obj
    if state.as_json:
        click.echo(json.dumps(body, indent=2, sort_keys=True))
    elif human is not None:
        click.echo(human)
    else:
        click.echo(json.dumps(body, indent=2, sort_keys=True))


def task_line(task: dict[str, Any] | None) -> str:
    if not task:
        return "no task"
    holder = f"  {task['assigned_to']}" if task.get("assigned_to") else ""
    return f"{task['key']}  {task['status']}{holder}"


class LizaGroup(click.Group):
    """Turns every client error into its message and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LizaError as error:
            state = ctx.obj
            if isinstance(state, State) and state.as_json:
                click.echo(json.dumps(error.as_dict(), indent=2, sort_keys=True))
            else:
                click.echo(f"liza: {error.code}: {error.message}", err=True)
            ctx.exit(error.exit)


@click.group(cls=LizaGroup, epilog=EXIT_HELP)
@click.option("--url", envvar="LIZA_URL", help="the server, e.g. https://liza.example (LIZA_URL)")
@click.option("--project", envvar="LIZA_PROJECT", help="the project's slug (LIZA_PROJECT)")
@click.option("--key", envvar="LIZA_KEY", help="the agent key (LIZA_KEY); prefer --key-file")
@click.option(
    "--key-file",
    envvar="LIZA_KEY_FILE",
    help="a file holding the key, not world-readable (LIZA_KEY_FILE)",
)
@click.option("--json", "as_json", is_flag=True, help="print the server's JSON (for scripts)")
@click.option(
    "--retries",
    envvar="LIZA_RETRIES",
    type=click.IntRange(0, 10),
    default=3,
    show_default=True,
    help="retries on no answer or 503, with backoff (LIZA_RETRIES)",
)
@click.pass_context
def main(ctx, url, project, key, key_file, as_json, retries):
    """Liza Board from the command line: one agent on one project."""
    if key is None and key_file:
        try:
            key = read_key_file(key_file)
        except UsageError as error:
            click.echo(f"liza: {error.message}", err=True)
            ctx.exit(EXIT["usage"])
    ctx.obj = State(url, project, key, as_json, retries)
    ctx.obj.key_file = key_file


def client(ctx: click.Context) -> Client:
    return ctx.obj.client


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
def usage(ctx, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd):
    """Report this session's usage so far for one model (running totals: counted once)."""
    body = client(ctx).usage(
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
        cost_usd=cost_usd,
    )
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


def _sprint_line(body: dict[str, Any]) -> str:
    return f"{body.get('id', '')}  {body.get('status', '')}"


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


# -- the supervisor -------------------------------------------------------------------------------


def _seconds(name: str, default: float | None) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else default


@main.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--agent",
    "agent_name",
    help="the coding CLI's profile: claude, codex, gemini, aider, opencode, or custom (the "
    "command after --) [default: custom when a command is given]",
)
@click.option(
    "--explain",
    is_flag=True,
    help="print the command, environment (secrets redacted) and prompt it would run; register "
    "nothing",
)
@click.option("--role", help="assert the key's role (coder, code_reviewer/code-reviewer, planner)")
@click.option("--id", "agent_id", help="assert the key's agent id")
@click.option("--repo", type=click.Path(file_okay=False), help="the git repository (default: .)")
@click.option(
    "--remote",
    envvar="LIZA_REMOTE",
    help="the shared git remote when agents run on several machines [LIZA_REMOTE; none]",
)
@click.option("--dry-run", is_flag=True, help="print what it would do; register nothing")
@click.option(
    "--poll-interval",
    type=float,
    help="seconds between /work polls [LIZA_POLL_INTERVAL; default: Retry-After]",
)
@click.option(
    "--heartbeat-interval",
    type=float,
    help="[LIZA_HEARTBEAT_INTERVAL; default: min(heartbeat_interval, lease/3)]",
)
@click.option("--restart-delay", type=float, help="after exit 42 [LIZA_RESTART_DELAY; 2]")
@click.option("--crash-delay", type=float, help="after a crash [LIZA_CRASH_DELAY; 5]")
@click.option("--crash-window", type=float, help="crash-loop window [LIZA_CRASH_WINDOW; 300]")
@click.option(
    "--terminate-grace",
    type=float,
    help="seconds an agent has to exit after SIGTERM before SIGKILL [LIZA_TERMINATE_GRACE; 10]",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def supervise(
    ctx, agent_name, explain, role, agent_id, repo, remote, dry_run, command, **intervals
):
    """Run an agent under seed 000's supervisor: `liza supervise --agent claude --role coder`
    (a profile, `liza agents`), or any command: `liza supervise -- CMD ...`.

    \b
    Registers the key's agent, waits for work, claims before spawning, prepares
    .worktrees/<task> on task/<task>, heartbeats, restarts by exit code (0 stop,
    42 after 2 s, other after 5 s), merges what its reviewer approved.
    With --remote, each machine has its own clone: task branches and
    integration go through that remote (fetch before, push after).
    Exit: 0 stopped (role complete, aborted, signal), 2 usage, 6 collision,
    12 crash loop (3 crashes within 5 minutes), 13 the supervisor's own error
    3 times within 5 minutes (each said with its traceback, the round tried
    again), else the protocol's code.
    """
    from agents.client.profiles import profile
    from agents.client.supervisor import Options, Supervisor, Timing

    state: State = ctx.obj
    agent = profile(agent_name or "custom", list(command))
    state.client  # noqa: B018 — the configuration check, with its usage error
    timing = Timing(
        poll=intervals["poll_interval"] or _seconds("LIZA_POLL_INTERVAL", None),
        heartbeat=intervals["heartbeat_interval"] or _seconds("LIZA_HEARTBEAT_INTERVAL", None),
        restart=intervals["restart_delay"] or _seconds("LIZA_RESTART_DELAY", 2.0),
        crash=intervals["crash_delay"] or _seconds("LIZA_CRASH_DELAY", 5.0),
        crash_window=intervals["crash_window"] or _seconds("LIZA_CRASH_WINDOW", 300.0),
        terminate_grace=intervals["terminate_grace"] or _seconds("LIZA_TERMINATE_GRACE", 10.0),
    )
    options = Options(
        url=state.url,
        project=state.project,
        key=state.key,
        key_file=state.key_file,
        command=list(command),
        role=role,
        agent_id=agent_id,
        repo=Path(repo) if repo else None,
        remote=remote or None,
        dry_run=dry_run,
        explain=explain,
        profile=agent,
        timing=timing,
    )
    ctx.exit(Supervisor(options, client=state.client).run())


@main.command("agents")
def agents_list():
    """The agent profiles `liza supervise --agent` runs, and which CLIs are installed here."""
    from agents.client.profiles import PROFILES

    for name, agent in PROFILES.items():
        if name == "custom":
            click.echo(f"{name:<9} {agent.title}")
            continue
        path, version = agent.installed()
        found = f"{path} ({version or 'version unknown'})" if path else "not installed"
        click.echo(f"{name:<9} {agent.title}\n          {found}")
        click.echo(f"          flags checked against {agent.flags.cli} {agent.flags.version}")


@main.command("demo-team", context_settings={"ignore_unknown_options": True})
@click.option(
    "--keys",
    "keys_dir",
    envvar="LIZA_TEAM_KEYS",
    type=click.Path(file_okay=False, exists=True),
    required=True,
    help="a directory of <agent-id>.key files, e.g. from `manage.py liza_demo --team DIR` "
    "[LIZA_TEAM_KEYS]",
)
@click.option("--repo", type=click.Path(file_okay=False), help="default: a new throwaway one")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="seconds")
@click.argument("supervise_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def demo_team(ctx, keys_dir, repo, timeout, supervise_args):
    """A planner, two coders and two reviewers: scripted agents (no LLM), each under its own
    `liza supervise`, until the goal is COMPLETED.

    \b
    One supervisor per DIR/<agent-id>.key (planner-N, coder-N, code-reviewer-N); the
    project is --project/LIZA_PROJECT, else DIR/project. SUPERVISE_ARGS (e.g.
    --poll-interval 1) go to every `liza supervise`.
    Exit: 0 the goal completed, 1 timeout or every supervisor stopped first,
    130/143 interrupted (each supervisor hands off and stops).
    """
    from agents.client.team import run_team

    state: State = ctx.obj
    keys = Path(keys_dir)
    project = state.project
    if not project and (keys / "project").is_file():
        project = (keys / "project").read_text().strip()
    if not state.url or not project:
        raise UsageError("missing configuration: --url/LIZA_URL and --project/LIZA_PROJECT")
    ctx.exit(
        run_team(
            url=state.url,
            project=project,
            keys_dir=keys,
            repo=Path(repo).resolve() if repo else None,
            timeout=timeout,
            supervise_args=supervise_args,
        )
    )


# -- every other operation, from the contract ------------------------------------------------------
# Each contract entry with a `cli` path that no command above has taken is a subcommand: its path
# parameters are arguments, the others options (`--name`, or the entry's `flag`), typed and
# bounded as the contract says. Only what it prints is written here.


def _goal_line(body: dict[str, Any]) -> str:
    return f"{body.get('id', '')}  {body.get('status', '')}  {body.get('description')}"


def _run_lines(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{r['id']:>5}  {r['agent']:<18} {r['task'] or '-':<12} "
        f"exit {r['exit_code'] if r['ended'] else 'running'}"
        + (f"  ({r['restart_reason']})" if r["restart_reason"] else "")
        for r in rows
    ]
    return "\n".join(lines) or "no runs"


# The human line of each generated command: (its answer, the values it was given) → text. A
# task's answer (`result="task"`) is its task line.
SHOWN: dict[str, Callable[[Any, dict[str, Any]], str]] = {
    "register": lambda a, _: f"{a['agent_id']}  {a['role']}  {a['status']}",
    "handoff": lambda body, given: f"handoff of {given['key']}: {body['summary']}",
    "pickup": lambda body, given: f"{given['key']}: {body['summary']}\nnext: {body['next_action']}",
    "review_claim": lambda body, given: f"reviewing {given['key']}",
    "review_extend": lambda body, given: f"review of {given['key']} extended",
    "discover": lambda body, _: f"{body['id']}  {body['severity']}  {body['description']}",
    "anomaly": lambda body, given: f"anomaly {body.get('type', given['type'])} recorded",
    "log": lambda body, given: f"logged {given['action']}",
    "goal": lambda body, _: _goal_line(body),
    "goal_create": lambda body, _: _goal_line(body),
    "goal_complete": lambda body, _: _goal_line(body),
    "task": lambda body, _: task_line(body),
    "task_rescope": lambda body, _: "\n".join(task_line(t) for t in body),
    "sprint": lambda body, _: _sprint_line(body),
    "sprint_create": lambda body, _: _sprint_line(body),
    "sprint_checkpoint": lambda body, _: _sprint_line(body),
    "sprint_continue": lambda body, _: _sprint_line(body),
    "sprint_abort": lambda body, _: _sprint_line(body),
    "runs": lambda rows, _: _run_lines(rows),
}


def _is_json(param: Param) -> bool:
    """Given on the command line as JSON text: an object, or a list of objects."""
    return param.type in ("object", "any") or (param.type == "array" and param.items == "object")


def _flag(param: Param) -> str:
    return param.flag or "--" + param.name.replace("_", "-")


def _parameter(param: Param) -> click.Parameter:
    """A contract parameter as a click argument or option."""
    kind: Any = str
    if param.enum:
        kind = click.Choice(param.enum, case_sensitive=False)
    elif param.type == "integer":
        kind = click.IntRange(param.minimum, param.maximum)
    elif param.type == "number":
        kind = click.FloatRange(param.minimum, param.maximum)
    if param.where == "path" or param.argument:
        return click.Argument([param.name], type=kind)
    flag = _flag(param)
    if param.type == "boolean":
        return click.Option(
            [f"{flag}/--no-{flag.removeprefix('--')}", param.name], default=None, help=param.help
        )
    if param.type == "array" and not _is_json(param):
        return click.Option([flag, param.name], multiple=True, help=f"{param.help} (repeatable)")
    return click.Option(
        [flag, param.name],
        type=kind,
        required=param.required and param.type != "array",
        help=f"{param.help or param.name}: JSON" if _is_json(param) else param.help,
    )


def _value(param: Param, value: Any) -> Any:
    """What the client sends for a parameter's value (None: not sent)."""
    if param.type == "array" and not _is_json(param):
        return list(value) if value else ([] if param.required else None)
    if value is not None and _is_json(param):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint=_flag(param)) from exc
    return value


def _command(endpoint: Endpoint) -> click.Command:
    path = endpoint.where("path")
    others = tuple(p for p in endpoint.params if p.where != "path" and p.tool)

    @click.pass_context
    def run_it(ctx: click.Context, **given: Any) -> None:
        args = [given[p.name] for p in path]
        kwargs = {p.name: _value(p, given[p.name]) for p in others}
        body = getattr(client(ctx), endpoint.client)(*args, **kwargs)
        if endpoint.result == "task":
            emit(ctx, {"task": body}, task_line(body))
        else:
            shown = SHOWN.get(endpoint.client)
            emit(ctx, body, shown(body, given) if shown else None)

    params = [_parameter(p) for p in path] + [_parameter(p) for p in others]
    # Arguments first, in their order: click takes them by position.
    params.sort(key=lambda p: not isinstance(p, click.Argument))
    return click.Command(endpoint.cli[-1], callback=run_it, params=params, help=endpoint.help)


def _contract_commands() -> None:
    for endpoint in CONTRACT:
        if not endpoint.cli or not endpoint.client:
            continue
        group: click.Command = main
        for part in endpoint.cli[:-1]:
            assert isinstance(group, click.Group)
            group = group.commands[part]
        assert isinstance(group, click.Group)
        if endpoint.cli[-1] not in group.commands:  # a command above is its special form
            group.add_command(_command(endpoint))


_contract_commands()


def _upstream_aliases() -> None:
    """Upstream Liza's hyphenated commands, as aliases of ours (agents.client.upstream)."""
    from agents.client.upstream import CLI_ALIASES

    for alias, path in CLI_ALIASES.items():
        command: click.Command = main
        for part in path:
            assert isinstance(command, click.Group)
            command = command.commands[part]
        main.add_command(command, alias)


_upstream_aliases()


def run() -> None:
    main(prog_name="liza")


if __name__ == "__main__":
    sys.exit(run())
