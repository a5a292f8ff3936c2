"""Interop: compatibility with file-based Liza (SPEC §8) — `.liza/state.yaml` and `log.yaml` in
seed 002's schema, read into a project and written back from one — and the importers of
neighbouring tools' files.

- `reading.read_liza_dir` parses the files and rejects what cannot be stored (`LizaFileError`);
- `importing.import_project` stores them as a new project; strict unless `lenient`;
- `exporting.export_state` / `export_log` / `write_liza_dir` write a project back
  (`yaml_io.dump_yaml` formats);
- `validation.validate_state`, the one validator of seeds 000 and 002's invariants, imports no
  Django (it also judges plain files), which is why this package imports nothing by itself.
"""
