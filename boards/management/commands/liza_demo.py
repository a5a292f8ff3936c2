"""manage.py liza_demo [--slug demo] [--team DIR]: a demo project with live leases, a login and an
agent key, and a second project with two weeks of history for the insights page; with
`--team DIR`, an empty project for `liza demo-team` and its five agents' keys."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from boards.demo.flow import FLOW_SLUG, flow_demo_build
from boards.demo.projects import ADMIN_PASSWORD, demo_build, team_build
from boards.interop.yaml_io import LizaImportError


class Command(BaseCommand):
    help = (
        "Create the demo project from seed 002's example blackboard (timestamps moved to now), "
        "the admin login and a fresh agent key, and the project "
        f'"{FLOW_SLUG}": two weeks of flow walked through the services, for the insights page. '
        "Safe to run again. With --team DIR: a new "
        "project for `liza demo-team` (slug `team`, or `team-N` if taken) with an open goal and "
        "no task, its planner, two coders and two reviewers, each key written to "
        "DIR/<agent-id>.key (mode 0600)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", default=None, help="slug of the project (demo / team)")
        parser.add_argument("--team", metavar="DIR", help="create the team project; keys in DIR")

    def handle(self, *args, **options) -> None:
        if options["team"]:
            return self.team(Path(options["team"]), options["slug"] or "team")
        try:
            demo = demo_build(slug=options["slug"] or "demo", now=timezone.now())
        except LizaImportError as exc:
            for message in exc.messages:
                self.stderr.write(message)
            raise CommandError("the demo blackboard could not be imported") from exc
        self.stdout.write(f'Liza Board demo project "{demo.project.slug}": {demo.tasks} tasks')
        if demo.imported:
            self.stdout.write("Imported from seed 002's example, timestamps moved to now.")
        else:
            self.stdout.write("The project already existed and was kept as it is.")
        flow = flow_demo_build(slug=FLOW_SLUG, now=timezone.now(), admin=demo.admin)
        self.stdout.write(
            f'Insights demo project "{flow.project.slug}" ({flow.project.name}): '
            f"{flow.tasks} tasks{'' if flow.built else ', kept as it is'}; "
            f"see /p/{flow.project.slug}/insights/"
        )
        self.stdout.write(f"Admin login: {demo.admin.get_username()} / {ADMIN_PASSWORD}")
        self.stdout.write(f"Agent key ({demo.agent.agent_id}): {demo.agent_key}")

    def team(self, directory: Path, slug: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        team = team_build(slug=slug, now=timezone.now())
        # The previous run's keys would name another project's agents: only this run's stay.
        for old in directory.glob("*.key"):
            old.unlink()
        for agent_id, key in team.keys.items():
            fd = os.open(
                directory / f"{agent_id}.key", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
            )
            with os.fdopen(fd, "w") as handle:
                handle.write(key + "\n")
        (directory / "project").write_text(team.project.slug + "\n")
        self.stdout.write(
            f'Liza Board team project "{team.project.slug}": an open goal, no task yet'
        )
        self.stdout.write(f"Admin login: {team.admin.get_username()} / {ADMIN_PASSWORD}")
        self.stdout.write(f"Agent keys ({', '.join(team.keys)}): {directory}/<agent-id>.key")
