"""`liza`'s subcommands generated from the contract (agents.client.contract), and upstream
Liza's hyphenated aliases. Imported after the hand-written commands: an operation a command
there already took is its special form, and is not generated again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

# The hand-written commands are on `main` before any is generated (see _contract_commands).
from agents.client.cli import commands, supervise  # noqa: F401
from agents.client.cli.group import client, emit, main, task_line
from agents.client.contract import CONTRACT, Endpoint, Param

# -- every other operation, from the contract ------------------------------------------------------
# Each contract entry with a `cli` path that no hand-written command (commands.py, supervise.py)
# has taken is a subcommand: its path parameters are arguments, the others options (`--name`, or
# the entry's `flag`), typed and bounded as the contract says. Only what it prints is written here.


def _sprint_line(body: dict[str, Any]) -> str:
    return f"{body.get('id', '')}  {body.get('status', '')}"


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
    "register": lambda a, _: (
        f"{a['agent_id']}  {a['role']}  {a['status']}  generation {a.get('generation')}"
    ),
    "leave": lambda a, _: f"{a['agent_id']}  {a['role']}  {a['status']}  left",
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
        if endpoint.cli[-1] not in group.commands:  # a hand-written one is its special form
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
