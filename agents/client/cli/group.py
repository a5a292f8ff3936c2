"""The `liza` click group: its shared options (the server, project and key), the state every
command reads, the error handling, `liza work`'s exit codes and the helpers the commands share.
The commands themselves are registered on `main` by the other modules of this package (importing
`agents.client.cli` imports them all)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import click

from agents.client.errors import EXIT, LizaError, UsageError
from agents.client.http import Client

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
  8   not registered: the agent left (liza leave), or this session was
      superseded (the id registered again since); exit (liza register or liza
      supervise starts a new one)
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
        self,
        url: str | None,
        project: str | None,
        key: str | None,
        as_json: bool,
        retries: int,
        generation: int | None = None,
    ) -> None:
        self.url, self.project, self.key, self.as_json = url, project, key, as_json
        self.retries, self.generation = retries, generation
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
                generation=self.generation,
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
@click.option(
    "--generation",
    envvar="LIZA_GENERATION",
    type=click.IntRange(min=1),
    help="the session this process belongs to, as its registration answered it; set by liza "
    "supervise for its agent: a superseded session is refused, exit 8 (LIZA_GENERATION)",
)
@click.pass_context
def main(ctx, url, project, key, key_file, as_json, retries, generation):
    """Liza Board from the command line: one agent on one project."""
    if key is None and key_file:
        try:
            key = read_key_file(key_file)
        except UsageError as error:
            click.echo(f"liza: {error.message}", err=True)
            ctx.exit(EXIT["usage"])
    ctx.obj = State(url, project, key, as_json, retries, generation)
    ctx.obj.key_file = key_file


def client(ctx: click.Context) -> Client:
    return ctx.obj.client
