"""manage.py liza_watch [--once] [--project SLUG]: the watcher (SPEC §9), a thin loop around
boards.watch.services.watch.watch_sweep, and the escalation webhook's sender
(boards.watch.services.webhooks.webhook_deliver_due) after the sweeps commit."""

from __future__ import annotations

import faulthandler
import signal
import threading
from datetime import datetime, timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from agents.client.wakeup import Wakeup
from boards import protocol as p
from boards.coordination.selectors.access import config_of
from boards.errors import contention
from boards.interop.exporting import project_violations
from boards.operations.base import run_again_on_lost_race
from boards.watch.selectors.watch import projects_to_watch
from boards.watch.services.watch import watch_sweep
from boards.watch.services.webhooks import WebhookSender, webhook_deliver_due

INVARIANTS_EVERY = timedelta(minutes=1)
DELIVER_EVERY = 1.0  # seconds between two looks for due webhook deliveries


class Command(BaseCommand):
    help = (
        "Sweep every project (or --project ones) each watch_interval seconds: dead leases, "
        "stale review claims, sprint deadlines and finished sprints, alerts, and once a minute "
        "the invariants (INVALID STATE alerts); escalation webhook deliveries from a thread of "
        "their own. --once: one sweep and its deliveries, then exit. Safe to run several at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="sweep once and exit")
        parser.add_argument(
            "--project", action="append", default=[], help="only this project (repeatable)"
        )

    def handle(self, *args, **options) -> None:
        slugs = options["project"]
        if slugs:
            known = {project.slug for project in projects_to_watch(slugs=slugs)}
            missing = sorted(set(slugs) - known)
            if missing:
                raise CommandError(f"no such project: {', '.join(missing)}")
        stop = Wakeup()  # set by the signal handlers: no lock (agents.client.wakeup)
        if not options["once"]:
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
            # `kill -USR1 <pid>`: every thread's stack on stderr, for a watcher that seems stuck.
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        if not options["once"]:
            # Webhook deliveries on a thread of their own: a slow receiver (up to
            # LIZA_WEBHOOK_TIMEOUT per attempt) never delays a sweep.
            sender = threading.Thread(
                target=self._deliver_loop, args=(stop, slugs), name="liza-webhooks", daemon=True
            )
            sender.start()
        due: dict[int, datetime] = {}
        checked: dict[int, datetime] = {}  # when each project's invariants are next checked
        while not stop.is_set():
            swept = actions = 0
            visited = False
            # Due again one interval after this round began, not after each project's own
            # sweep: projects swept together stay together (one wake-up and one heartbeat line
            # per interval) instead of drifting apart by the time each sweep takes.
            round_began = timezone.now()
            for project in projects_to_watch(slugs=slugs):
                now = timezone.now()
                if not options["once"] and due.get(project.pk, now) > now:
                    continue
                visited = True
                interval = timedelta(seconds=config_of(project).watch_interval)
                due[project.pk] = round_began + interval
                # The invariants (liza_validate's rules) cost an export of the project: checked
                # once a minute per project, not every sweep.
                violations = None
                if options["once"] or checked.get(project.pk, now) <= now:
                    violations, _ = project_violations(project)
                    checked[project.pk] = now + INVARIANTS_EVERY
                try:
                    # One transaction: lost to another (a deadlock's victim), it is run again.
                    sweep = run_again_on_lost_race(
                        lambda project=project, now=now, violations=violations: watch_sweep(
                            project=project, now=now, violations=violations
                        )
                    )
                except DatabaseError as exc:
                    if (busy := contention(exc)) is None:
                        raise
                    # Rows busy with other requests all along: nothing of it was written, and
                    # the project is swept again next round; the watcher goes on.
                    due[project.pk] = now
                    self._log(f"{project.slug}: busy ({busy}), swept again", error=True)
                    continue
                if sweep.skipped:
                    self._log(f"{project.slug}: skipped, another watcher is sweeping it")
                    continue
                swept += 1
                actions += len(sweep.actions)
                for line in [*sweep.actions, *sweep.alerts]:
                    self._log(f"{project.slug}: {line}")
                for line in sweep.errors:
                    self._log(f"{project.slug}: refused: {line}", error=True)
            if visited:  # one heartbeat per round of sweeps, not per idle wake-up
                self._log(f"heartbeat: {swept} project(s) swept, {actions} action(s)")
            if options["once"]:
                self._deliver(slugs)  # what this sweep queued, now that it has committed
                return
            # A long-running process: drop a connection the database closed while we slept.
            close_old_connections()
            wake = min(due.values(), default=timezone.now() + timedelta(seconds=10))
            stop.wait(max(0.5, (wake - timezone.now()).total_seconds()))
        if not options["once"]:
            sender.join(timeout=30)
        self._log("stopped")

    def _deliver(self, slugs) -> None:
        for sent in webhook_deliver_due(now=timezone.now(), slugs=slugs):
            self._log(sent.line(), error=sent.outcome != "delivered")

    def _deliver_loop(self, stop: Wakeup, slugs) -> None:
        # One sender for the process: its pool, in-flight attempts and breakers last across
        # rounds, and a round never waits for a receiver (boards.watch.services.webhooks).
        sender = WebhookSender()
        try:
            while not stop.is_set():
                try:
                    for sent in sender.round(now=timezone.now(), slugs=slugs):
                        self._log(sent.line(), error=sent.outcome != "delivered")
                except Exception as exc:  # the database went away: log, retry next round
                    self._log(f"webhook deliveries: {type(exc).__name__}: {exc}", error=True)
                close_old_connections()
                stop.wait(DELIVER_EVERY)
            for sent in sender.drain():  # each ends within LIZA_WEBHOOK_TIMEOUT
                self._log(sent.line(), error=sent.outcome != "delivered")
        except Exception as exc:
            self._log(f"webhook deliveries: {type(exc).__name__}: {exc}", error=True)
        finally:
            sender.close()
            connection.close()  # this thread's own connection

    def _log(self, message: str, *, error: bool = False) -> None:
        line = f"[{p.format_timestamp(timezone.now())}] liza_watch {message}"
        (self.stderr if error else self.stdout).write(line)
        (self.stderr if error else self.stdout).flush()
