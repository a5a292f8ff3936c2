"""manage.py liza_demo [--slug demo]: a demo project with live leases, a login and an agent key."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from boards.liza_files import LizaImportError
from boards.liza_files.demo import ADMIN_PASSWORD, demo_build


class Command(BaseCommand):
    help = (
        "Create the demo project from seed 002's example blackboard (timestamps moved to now), "
        "the admin login and a fresh agent key. Safe to run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", default="demo", help="slug of the demo project")

    def handle(self, *args, **options) -> None:
        try:
            demo = demo_build(slug=options["slug"], now=timezone.now())
        except LizaImportError as exc:
            for message in exc.messages:
                self.stderr.write(message)
            raise CommandError("the demo blackboard could not be imported") from exc
        self.stdout.write(f'Liza Board demo project "{demo.project.slug}": {demo.tasks} tasks')
        if demo.imported:
            self.stdout.write("Imported from seed 002's example, timestamps moved to now.")
        else:
            self.stdout.write("The project already existed and was kept as it is.")
        self.stdout.write(f"Admin login: {demo.admin.get_username()} / {ADMIN_PASSWORD}")
        self.stdout.write(f"Agent key ({demo.agent.agent_id}): {demo.agent_key}")
