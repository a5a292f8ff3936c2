"""manage.py liza_purge_idempotency: forget the Idempotency-Key answers older than 24 hours.

Each agent's expired keys are already dropped when it next sends a key; this catches the
agents that stopped. Safe to run at any time (from cron, say, daily).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.utils import timezone

from agents.services import idempotent_requests_purge


class Command(BaseCommand):
    help = "Delete the stored answers to Idempotency-Key requests older than 24 hours."

    def handle(self, *args, **options) -> None:
        deleted = idempotent_requests_purge(now=timezone.now())
        self.stdout.write(f"{deleted} expired idempotency record(s) deleted")
