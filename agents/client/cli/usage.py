"""How a command-line agent's playbook names an operation: `liza <subcommand> ARGS
--required-option VALUE [--optional VALUE] …`, read from `main` itself so that the usage cannot
drift from the parser. `liza supervise` hands it to the supervisor (`Options.usage`), which
renders the playbooks with it (agents.client.playbooks)."""

from __future__ import annotations

import click

from agents.client.cli.group import main
from agents.client.operations import BY_NAME


def usage(name: str) -> str:
    """The usage line of operation `name` (every command is on `main` once the package
    agents.client.cli is imported, which importing this module does first)."""
    operation = BY_NAME[name]
    command: click.Command = main
    for part in operation.cli:
        assert isinstance(command, click.Group)
        command = command.commands[part]
    words = ["liza", *operation.cli]
    for param in command.params:
        if isinstance(param, click.Argument):
            words.append(param.human_readable_name.upper())
        elif isinstance(param, click.Option):
            flag = param.opts[0]
            word = flag if param.is_flag else f"{flag} {param.name.upper()}"
            if param.multiple:
                word += " …"
            words.append(word if param.required else f"[{word}]")
    return " ".join(words)
