"""Reading and writing the `.liza/` YAML files themselves (seed 002 "Location", "Files")."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from boards.protocol import format_timestamp

from .schema import LIZA_DIR, STATE_FILE


class LizaImportError(Exception):
    """An import that cannot go ahead; `messages` says why, one line each."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))


class LizaFileError(LizaImportError):
    """The files cannot be stored sensibly, whatever `--lenient` says (missing, not YAML, ...)."""


def liza_dir(path: str | Path) -> Path:
    """The `.liza` directory for `path`: `<path>/.liza`, or `path` itself when it is one."""
    path = Path(path)
    if (path / LIZA_DIR).is_dir():
        return path / LIZA_DIR
    if path.is_dir() and (path.name == LIZA_DIR or (path / STATE_FILE).exists()):
        return path
    if not path.exists():
        raise LizaFileError([f"{path}: no such directory"])
    raise LizaFileError([f"{path}: no {LIZA_DIR}/ directory here (nor a {STATE_FILE})"])


def load_yaml_file(path: Path, problems: list[str]) -> Any:
    """The parsed document, or None with a line in `problems` (never raises for bad input)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(f"{path}: missing")
        return None
    except UnicodeDecodeError:
        problems.append(f"{path}: not UTF-8 text")
        return None
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or exc})")
        return None
    return load_yaml_text(text, str(path), problems)


def load_yaml_text(text: str, name: str, problems: list[str]) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(filter(None, [exc.context, exc.problem])) or "syntax error"
        problems.append(f"{name}: not valid YAML: {where}{what}")
    except yaml.YAMLError as exc:
        problems.append(f"{name}: not valid YAML: {exc}")
    except RecursionError:
        problems.append(f"{name}: not valid YAML: nested too deeply")
    return None


class _LizaDumper(yaml.SafeDumper):
    """Block style, sequences indented under their key like seed 002's examples."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_datetime(dumper: yaml.SafeDumper, value: datetime) -> yaml.ScalarNode:
    # Seed 002 "Timestamp Format": `2025-01-17T14:00:00Z`, plain, so YAML reads it back as a
    # timestamp exactly as the seed's own files are read.
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", format_timestamp(value))


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Multi-line text (alignment summaries) as literal blocks, like the seed writes them.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LizaDumper.add_representer(datetime, _represent_datetime)
_LizaDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """Safe YAML, block style, unicode, keys in the given order, timestamps as plain `...Z`."""
    return yaml.dump(
        data,
        Dumper=_LizaDumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
    )
