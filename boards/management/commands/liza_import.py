"""manage.py liza_import PATH --project SLUG [--name NAME] [--lenient] (SPEC §8)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from django.utils import timezone

from agents.models import Agent
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.interop.importing import LizaImportRefused, import_project
from boards.interop.neighbours import SOURCES, import_foreign
from boards.interop.reading import read_liza_dir, with_paths
from boards.interop.yaml_io import LizaFileError, LizaImportError, liza_dir


class Command(BaseCommand):
    help = (
        "Import a file-based Liza blackboard (<PATH>/.liza/state.yaml and log.yaml) as a new "
        "project. Refuses a state that breaks an invariant unless --lenient."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path",
            help="a directory holding .liza/, or the .liza directory; with --from, the file",
        )
        parser.add_argument(
            "--from",
            dest="source",
            choices=SOURCES,
            help="import a codeagent-wrapper AGENT_STATE.json (seed 001) or a Logist "
            "job_manifest.json (seed 004) instead; states mapped as docs/liza-files.md says",
        )
        parser.add_argument(
            "--re-execute",
            action="store_true",
            help="with --from: a run in progress is imported UNCLAIMED instead of BLOCKED",
        )
        parser.add_argument("--project", required=True, help="slug of the new project")
        parser.add_argument("--name", default="", help="project name (default: the slug)")
        parser.add_argument(
            "--lenient",
            action="store_true",
            help=(
                "import even if the state breaks invariants (listed as INVALID lines) and read "
                "what the original Liza's scripts leave out with defaults (WARNING lines)"
            ),
        )

    def handle(self, *args, **options) -> None:
        slug = options["project"]
        try:
            if options["source"]:
                if options["lenient"]:
                    raise CommandError("--lenient applies to .liza/ files, not with --from")
                result = import_foreign(
                    source=options["source"],
                    path=options["path"],
                    slug=slug,
                    name=options["name"],
                    now=timezone.now(),
                    re_execute=options["re_execute"],
                )
            else:
                state, log = read_liza_dir(options["path"], lenient=options["lenient"])
                result = import_project(
                    slug=slug,
                    name=options["name"],
                    state=state,
                    log=log,
                    lenient=options["lenient"],
                    now=timezone.now(),
                )
        except LizaImportRefused as exc:
            for violation in exc.violations:
                self.stderr.write(f"INVALID: {violation}")
            raise CommandError(
                f"import refused: {len(exc.violations)} invariant violation(s), nothing was "
                "written (--lenient imports anyway)"
            ) from exc
        except LizaFileError as exc:
            self._fail(exc.messages, f"cannot import {options['path']}: nothing was written")
        except LizaImportError as exc:
            self._fail(exc.messages, "import failed: nothing was written")
        except DatabaseError as exc:  # a check missed by the reader: still no traceback
            self._fail([str(exc).strip()], "import failed: nothing was written")
        project = result.project
        counts = (
            Task.objects.filter(project=project).count(),
            Agent.objects.filter(project=project).count(),
            Event.objects.filter(project=project).count(),
        )
        self.stdout.write(
            f"Imported {counts[0]} tasks, {counts[1]} agents, {counts[2]} events "
            f"into project {project.slug}"
        )
        warnings = result.warnings
        if warnings and not options["source"]:
            warnings = with_paths(warnings, liza_dir(options["path"]))
        for warning in warnings:
            self.stdout.write(f"WARNING: {warning}")
        for violation in result.violations:
            self.stdout.write(f"INVALID: {violation}")

    def _fail(self, messages: list[str], summary: str) -> None:
        for message in messages:
            self.stderr.write(message)
        raise CommandError(summary)
