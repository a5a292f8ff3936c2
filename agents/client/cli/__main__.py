"""`python -m agents.client.cli`: `liza` (the supervisor runs the agent's `liza` commands so)."""

import sys

from agents.client.cli import run

sys.exit(run())
