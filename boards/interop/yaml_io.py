"""Reading and writing the `.liza/` YAML files themselves (seed 002 "Location", "Files").

Import is an admin operation on any file, so reading is bounded before anything is parsed
(docs/liza-files.md "Limits"): only regular files are opened (no symlink, FIFO or device),
at most MAX_FILE_BYTES are read, and a pass over the parser's events refuses, with the line,
documents nested deeper than MAX_DEPTH, more than MAX_ALIASES alias uses, an alias inside its
own anchor, more than MAX_NODES nodes once aliases are expanded, a duplicate mapping key and a
scalar longer than MAX_SCALAR_CHARS (the services' own cap on a text field). Only then is the
document built, by libyaml's safe loader.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from boards.protocol import format_timestamp

from .schema import LIZA_DIR, STATE_FILE

# The limits (docs/liza-files.md "Limits"). A busy blackboard's log of a few thousand events
# is well under a megabyte; the services cap any one text at 10,000 characters
# (boards.coordination.services.cleaning.clean_text), so no file they write holds a longer scalar.
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_SCALAR_CHARS = 10_000
MAX_NODES = 250_000  # counting every alias at every use
MAX_ALIASES = 1_000
MAX_DEPTH = 64

_READ_FLAGS = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
)


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


# ---------------------------------------------------------------------------------------------
# reading, bounded
# ---------------------------------------------------------------------------------------------

_FILE_TYPES = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def read_regular_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes.

    Opened without following a symbolic link and without blocking (a FIFO would otherwise wait
    for a writer forever); the type and size are judged on the open descriptor, and no more
    than `limit` + 1 bytes are ever read, so a file that grows meanwhile is still refused.
    Raises OSError, or ValueError saying what the file is instead.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno is not None and os.path.islink(path):
            raise ValueError("is a symbolic link; only regular files are read") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _FILE_TYPES.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise ValueError(f"is {kind}; only regular files are read")
        if info.st_size > limit:
            raise ValueError(f"is {info.st_size} bytes; the limit is {limit}")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ValueError(f"is more than {limit} bytes; the limit is {limit}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_yaml_file(path: Path, problems: list[str]) -> Any:
    """The parsed document, or None with a line in `problems` (never raises for bad input)."""
    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        problems.append(f"{path}: missing")
        return None
    except ValueError as exc:
        problems.append(f"{path}: {exc}")
        return None
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or exc})")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 text (byte {exc.start + 1})")
        return None
    return load_yaml_text(text, str(path), problems)


def load_yaml_text(text: str, name: str, problems: list[str]) -> Any:
    """`text` parsed within the limits, or None with a line in `problems`."""
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        problems.append(f"{name}: more than {MAX_FILE_BYTES} bytes; the limit is {MAX_FILE_BYTES}")
        return None
    try:
        refusal = _check_events(text)
        if refusal is not None:
            problems.append(f"{name}: {refusal}")
            return None
        return yaml.load(text, Loader=_Loader)  # a SafeConstructor loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(filter(None, [exc.context, exc.problem])) or "syntax error"
        if "maximum nesting depth" in what:
            # libyaml from PyYAML 6.0.4 on has its own depth limit, which its look-ahead can
            # reach before _check_events sees the 65th level: one wording for both.
            problems.append(
                f"{name}: {_where(mark)}nested more than {MAX_DEPTH} levels deep; "
                f"the limit is {MAX_DEPTH}"
            )
            return None
        problems.append(f"{name}: not valid YAML: {_where(mark)}{what}")
    except yaml.YAMLError as exc:
        problems.append(f"{name}: not valid YAML: {exc}")
    except RecursionError:  # MAX_DEPTH should make this unreachable; never a traceback
        problems.append(f"{name}: not valid YAML: nested too deeply")
    return None


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


class _Constructor(yaml.constructor.SafeConstructor):
    """SafeConstructor whose value errors (a month 13, an integer of 5,000 digits) name the
    line instead of escaping as a bare ValueError."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"cannot read this {node.tag.rsplit(':', 1)[-1]}: {exc}",
                node.start_mark,
            ) from exc


if yaml.__with_libyaml__:

    class _Loader(yaml.cyaml.CParser, _Constructor, yaml.resolver.Resolver):
        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

else:  # pragma: no cover - libyaml ships with PyYAML's wheels; same limits, slower

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        yaml.composer.Composer,
        _Constructor,
        yaml.resolver.Resolver,
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Constructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


@dataclass
class _Open:
    """A mapping or sequence whose end event has not come yet."""

    mapping: bool
    anchor: str | None
    first: int  # the expanded node count when it opened
    keys: set[str] = field(default_factory=set)
    expect_key: bool = True


def _check_events(text: str) -> str | None:
    """Why `text` is refused before any object is built, or None (see the module docstring).

    One pass over libyaml's events, which holds only the open collections: depth, alias uses,
    recursive aliases, expanded size, duplicate keys and scalar lengths are all judged there.
    """
    expanded = aliases = 0
    sizes: dict[str, int] = {}  # anchor → expanded size of the node it names
    open_: list[_Open] = []
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionEndEvent):
            node = open_.pop()
            if node.anchor is not None:
                sizes[node.anchor] = expanded - node.first
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        where = _where(event.start_mark)
        parent = open_[-1] if open_ else None
        is_key = parent is not None and parent.mapping and parent.expect_key
        if parent is not None and parent.mapping:
            parent.expect_key = not parent.expect_key
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                return f"{where}more than {MAX_ALIASES} aliases (*name); the limit is {MAX_ALIASES}"
            if any(node.anchor == event.anchor for node in open_):
                return f"{where}the alias *{event.anchor} is inside its own anchor (recursive)"
            if is_key:
                return f"{where}an alias cannot be a mapping key"
            expanded += sizes.get(event.anchor, 1)  # an undefined alias: the loader says so
        elif isinstance(event, yaml.ScalarEvent):
            if len(event.value) > MAX_SCALAR_CHARS:
                return (
                    f"{where}a value of {len(event.value)} characters; "
                    f"the limit is {MAX_SCALAR_CHARS}"
                )
            expanded += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            if is_key:
                if event.value in parent.keys:
                    return f"{where}duplicate key {event.value!r}"
                parent.keys.add(event.value)
        else:  # a mapping or a sequence opens
            if is_key:
                return f"{where}a mapping key must be a plain value, not a collection"
            expanded += 1
            open_.append(
                _Open(isinstance(event, yaml.MappingStartEvent), event.anchor, expanded - 1)
            )
            if len(open_) > MAX_DEPTH:
                return f"{where}nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}"
        if expanded > MAX_NODES:
            return (
                f"{where}more than {MAX_NODES} values once aliases are expanded; "
                f"the limit is {MAX_NODES}"
            )
    return None


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


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


def write_files(directory: Path, texts: dict[str, str]) -> list[Path]:
    """Write each `name: text` into `directory`, replacing whatever was there.

    Each file is written beside its target and renamed over it, so a symbolic link planted at
    the target is replaced, never followed, and a failed write leaves the old file whole.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in texts.items():
        target = directory / name
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        written.append(target)
    return written
