"""manage.py liza_trim_runs: empty the output of runs that ended more than N days ago (issue
24: old output trimmed by age; each run's output is already cut to its last 200 lines as it
is written). The runs themselves stay: state, reason, duration. Safe to run at any time (from
cron, say, daily)."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand
from django.utils import timezone

from agents.services import RUN_OUTPUT_DAYS, runs_output_trim


class Command(BaseCommand):
    help = "Empty the output of runs that ended more than --days (LIZA_RUN_OUTPUT_DAYS) ago."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            default=int(os.environ.get("LIZA_RUN_OUTPUT_DAYS") or RUN_OUTPUT_DAYS),
            help=f"keep the output of runs ended fewer days ago (default {RUN_OUTPUT_DAYS})",
        )

    def handle(self, *args, days: int, **options) -> None:
        trimmed = runs_output_trim(now=timezone.now(), days=max(0, days))
        self.stdout.write(f"{trimmed} run output(s) older than {days} day(s) emptied")
