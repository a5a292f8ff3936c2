"""manage.py liza_export --project SLUG PATH (SPEC §8)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from boards.coordination.models.projects import Project
from boards.interop.exporting import LizaExportRefused, write_liza_dir
from boards.interop.neighbours import LOGIST, logist_manifests
from boards.interop.yaml_io import write_files


class Command(BaseCommand):
    help = (
        "Write a project as seed 002's <PATH>/.liza/state.yaml and log.yaml, with alerts.log "
        "and, while the circuit breaker is tripped, circuit_breaker_report.md; refused, with "
        "the reasons, when the original Liza's validator would reject the state."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="directory to write .liza/ into")
        parser.add_argument("--project", required=True, help="slug of the project")
        parser.add_argument(
            "--to",
            choices=[LOGIST],
            help="write each task as a Logist <PATH>/<job_id>/job_manifest.json instead",
        )

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        try:
            if options["to"] == LOGIST:
                root = Path(options["path"])
                paths = [
                    path
                    for key, text in logist_manifests(project).items()
                    for path in write_files(root / key, {"job_manifest.json": text})
                ]
            else:
                paths = write_liza_dir(project, options["path"])
        except LizaExportRefused as exc:
            for reason in exc.reasons:
                self.stderr.write(reason)
            what = "not exportable yet" if exc.not_yet else "export refused"
            raise CommandError(
                f"{what}: the original Liza would reject this state; nothing was written"
            ) from exc
        except OSError as exc:
            raise CommandError(f"cannot write {options['path']}: {exc.strerror or exc}") from exc
        for path in paths:
            self.stdout.write(str(path))
