"""The Liza Board client: typed calls over HTTP and the `liza` command line.

It speaks only HTTP (an import-linter contract forbids it Django, DRF and the server's own
packages), so an agent's machine can run it with nothing of the server installed.
"""

from agents.client.errors import EXIT, LizaError, Redirected, Unreachable
from agents.client.http import Client

__all__ = ["EXIT", "Client", "LizaError", "Redirected", "Unreachable"]
