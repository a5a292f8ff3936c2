"""manage.py liza_validate [--project SLUG | --file state.yaml] [--now ISO] (SPEC §8).

Prints `VALID` (exit 0) or one `INVALID: <violation>` line per violation (exit 1), like the
original liza-validate.sh.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from boards.liza_files import export_refusals, export_state
from boards.liza_files.yaml_io import load_yaml_file
from boards.models import Project
from boards.protocol import parse_timestamp
from boards.validation import NOT_YET_EXPORTABLE, validate_state


class Command(BaseCommand):
    help = "Check a project, or a state.yaml file, against every invariant of seeds 000 and 002."

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--project", help="slug of a project to validate")
        source.add_argument("--file", help="a state.yaml to validate")
        parser.add_argument(
            "--now",
            help="judge leases at this ISO 8601 time (default: the state's latest heartbeat)",
        )

    def handle(self, *args, **options) -> None:
        now = _parse_now(options["now"])
        not_yet: list[str] = []
        if options["project"]:
            state = self._project_state(options["project"])
            # A live project with no goal or sprint yet is young, not broken: say so instead.
            not_yet, _ = export_refusals(state)
        else:
            state = self._file_state(Path(options["file"]))
        young = {f"{section} is missing" for section in NOT_YET_EXPORTABLE} if not_yet else set()
        violations = [
            v
            for v in validate_state(state, now=now)
            if not (v.rule == "required_fields" and v.detail in young)
        ]
        if not violations:
            self.stdout.write("VALID")
            for why in not_yet:
                self.stdout.write(
                    f"NOT EXPORTABLE YET: {why} (the original Liza needs a goal and a sprint)"
                )
            return
        for violation in violations:
            self.stdout.write(f"INVALID: {violation}")
        sys.exit(1)

    def _project_state(self, slug: str) -> dict[str, Any]:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"no project {slug!r}")
        return export_state(project)

    def _file_state(self, path: Path) -> Any:
        if not path.exists():
            raise CommandError(f"{path}: no such file")
        problems: list[str] = []
        state = load_yaml_file(path, problems)
        if problems:
            # Unreadable or not YAML is itself an invalid blackboard, said the validator's way.
            for problem in problems:
                self.stdout.write(f"INVALID: {problem}")
            sys.exit(1)
        return state


def _parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise CommandError(f"--now {value!r} is not an ISO 8601 timestamp") from exc
