"""`liza`: the agent protocol (SPEC §6) from a shell.

Configured by flags or the environment (LIZA_URL, LIZA_PROJECT, LIZA_KEY or LIZA_KEY_FILE).
Prints a short human summary, or the server's JSON with `--json`. The exit code is the
protocol's (the server's `details.exit`); `liza work` and `liza claim` add their own (group.py).

The package: `group` (the click group `main`, its shared options and helpers, `liza work`'s exit
codes), `commands` (the hand-written commands), `supervise` (`liza supervise`, `liza agents`,
`liza demo-team`) and `generated` (every other operation, from the contract). Importing the
package registers every command on `main`, in that order.
"""

# generated imports the hand-written commands first: every command is on `main` after this.
from agents.client.cli import generated  # noqa: F401
from agents.client.cli.group import (
    ROLE_COMPLETE,
    WAIT,
    WORK_AVAILABLE,
    State,
    main,
    read_key_file,
)

__all__ = ["ROLE_COMPLETE", "WAIT", "WORK_AVAILABLE", "State", "main", "read_key_file", "run"]


def run() -> None:
    main(prog_name="liza")
