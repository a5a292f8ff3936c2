"""`liza supervise` (one agent under seed 000's supervisor, agents.client.supervisor), the
agent profiles it runs (`liza agents`) and `liza demo-team` (a scripted team of supervisors)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from agents.client.cli.group import State, main
from agents.client.errors import UsageError

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
