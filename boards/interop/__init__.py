"""Compatibility with file-based Liza (SPEC §8): `.liza/state.yaml` and `log.yaml` in seed 002's
schema, read into a project and written back from one.

- `read_liza_dir` parses the files and rejects what cannot be stored (`LizaFileError`).
- `import_project` stores them as a new project; strict unless `lenient`.
- `export_state` / `export_log` / `write_liza_dir` write a project back; `dump_yaml` formats.
"""

from .exporting import (
    LizaExportRefused,
    export_log,
    export_refusals,
    export_state,
    project_violations,
    write_liza_dir,
)
from .importing import ImportResult, LizaImportRefused, import_project
from .reading import plan_import, read_liza_dir
from .yaml_io import LizaFileError, LizaImportError, dump_yaml

__all__ = [
    "ImportResult",
    "LizaExportRefused",
    "LizaFileError",
    "LizaImportError",
    "LizaImportRefused",
    "dump_yaml",
    "export_log",
    "export_refusals",
    "export_state",
    "import_project",
    "plan_import",
    "project_violations",
    "read_liza_dir",
    "write_liza_dir",
]
