"""Hostile and malformed files (import is an admin operation on any file).

Every file of the corpus below gets a clear error naming the file and the place (line or key),
a non-zero exit, nothing written, in under 2 s and bounded memory, from `liza_import` (strict
and lenient) and from `liza_validate --file`. The limits are in docs/liza-files.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.coordination.services.tasks import task_claim
from boards.interop.yaml_io import (
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_SCALAR_CHARS,
)
from tests.interop.test_importing import base_state, row_counts, task

pytestmark = pytest.mark.django_db

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECONDS = 2.0
PEAK_BYTES = 64 * 1024 * 1024


def _dump(state: dict) -> str:
    return yaml.safe_dump(state, sort_keys=False)


def _spoiled(spoil: Callable[[dict], None]) -> str:
    state = base_state()
    spoil(state)
    return _dump(state)


def _with_text(marker: str, replacement: str) -> str:
    """The base state's text with `marker` (a unique line of it) replaced: for what a dict
    cannot express (aliases, duplicate keys, tags)."""
    text = _dump(base_state())
    assert text.count(marker) == 1, marker
    return text.replace(marker, replacement)


def _billion_laughs() -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "version: 1\n" + "\n".join(lines) + "\n"


def _many_aliases() -> str:
    return "version: 1\nx: &x a\ny: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"


def _int_id(state: dict) -> None:
    task(state, "t-1")["id"] = 7
    task(state, "t-2")["depends_on"] = [7]
    state["sprint"]["scope"]["planned"] = [7, "t-2"]


def _lone_dependency(state: dict) -> None:
    task(state, "t-2")["depends_on"] = "t-1"


def _worktree(path: str) -> Callable[[dict], None]:
    def spoil(state: dict) -> None:
        task(state, "t-1")["worktree"] = path

    return spoil


def _unknown_section(state: dict) -> None:
    state["tasks_archive"] = []


def _huge_description(state: dict) -> None:
    task(state, "t-1")["description"] = "x" * (MAX_SCALAR_CHARS + 1)


@dataclass(frozen=True)
class Hostile:
    state: str  # the text of state.yaml
    says: str  # the error names the file (prefix added by the test) and the place
    lenient_reads: bool = False  # --lenient imports it, with a WARNING saying how


# state.yaml contents; each message follows "<dir>/.liza/state.yaml: ".
CORPUS: dict[str, Hostile] = {
    "alias bomb": Hostile(
        _billion_laughs(), f"more than {MAX_NODES} values once aliases are expanded"
    ),
    "self-referencing alias": Hostile(
        "version: 1\ntasks: &a [*a]\n",
        "line 2, column 12: the alias *a is inside its own anchor (recursive)",
    ),
    "too many aliases": Hostile(_many_aliases(), f"more than {MAX_ALIASES} aliases"),
    "deep nesting": Hostile(
        "tasks: " + "[" * 100_000 + "]" * 100_000 + "\n",
        # Where it stops depends on libyaml's look-ahead (PyYAML 6.0.4 added its own limit).
        f"nested more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}",
    ),
    "duplicate task key": Hostile(
        _with_text("  description: First\n", "  description: First\n  status: MERGED\n"),
        "line 11, column 3: duplicate key 'status'",
    ),
    "duplicate section": Hostile(_dump(base_state()) + "tasks: []\n", "duplicate key 'tasks'"),
    "collection as a key": Hostile(
        "version: 1\n? [a, b]\n: c\n", "line 2, column 3: a mapping key must be a plain value"
    ),
    "50 kB description": Hostile(
        _spoiled(_huge_description),
        f"a value of {MAX_SCALAR_CHARS + 1} characters; the limit is {MAX_SCALAR_CHARS}",
    ),
    "5000-digit integer": Hostile(
        _with_text("  priority: 1\n", "  priority: " + "9" * 5000 + "\n"),
        "line 11, column 13: cannot read this int",
    ),
    "impossible date": Hostile(
        _with_text("  created: '2025-01-17T14:05:00Z'\n", "  created: 2025-13-45T14:05:00Z\n"),
        "cannot read this timestamp: month must be in 1..12",
    ),
    "python object tag": Hostile(
        "version: !!python/object/apply:os.system ['true']\n",
        "line 1, column 10: could not determine a constructor",
    ),
    "not UTF-8": Hostile("goal: caf\udce9\n", "not UTF-8 text (byte 10)"),
    "integer task id": Hostile(
        _spoiled(_int_id), "task #1: id: expected an id as text, found 7 (write it in quotes)"
    ),
    "lone dependency": Hostile(
        _spoiled(_lone_dependency),
        "task t-2: depends_on: expected a list of ids, found 't-1'",
        lenient_reads=True,
    ),
    "worktree climbing out": Hostile(
        _spoiled(_worktree("../../../../etc")),
        "task t-1: worktree: '../../../../etc' leaves the project",
    ),
    "absolute worktree": Hostile(
        _spoiled(_worktree("/etc/passwd")), "task t-1: worktree: '/etc/passwd' is absolute"
    ),
    "unknown section": Hostile(
        _spoiled(_unknown_section), "tasks_archive: not a section of seed 002's state.yaml"
    ),
}


def _write(root: Path, state: str) -> Path:
    liza = root / ".liza"
    liza.mkdir(parents=True)
    (liza / "state.yaml").write_bytes(state.encode("utf-8", "surrogateescape"))
    (liza / "log.yaml").write_text("[]\n", encoding="utf-8")
    return liza / "state.yaml"


def _timed(manage, *args, **options):
    tracemalloc.start()
    started = time.monotonic()
    try:
        run = manage(*args, **options)
    finally:
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < SECONDS, f"took {elapsed:.2f} s"
    assert peak < PEAK_BYTES, f"peaked at {peak} bytes"
    return run


def test_the_corpus_base_state_imports(manage, tmp_path):
    _write(tmp_path, _dump(base_state()))
    assert manage("liza_import", str(tmp_path), project="base").code == 0


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
@pytest.mark.parametrize("case", list(CORPUS))
def test_a_hostile_state_is_refused_clearly_fast_and_bounded(manage, tmp_path, case, lenient):
    hostile = CORPUS[case]
    path = _write(tmp_path, hostile.state)

    run = _timed(manage, "liza_import", str(tmp_path), project="bad", lenient=lenient)

    assert f"{path}: " in run.err + run.out and hostile.says in run.err + run.out, run.err
    assert "Traceback" not in run.err
    if lenient and hostile.lenient_reads:  # never silently: one WARNING line says how
        assert run.code == 0
        assert f"WARNING: {path}: {hostile.says}" in run.out
        return
    assert run.code == 1 and run.out == ""
    assert set(row_counts().values()) == {0}


@pytest.mark.parametrize("case", list(CORPUS)[:12])  # the ones no dict can hold
def test_liza_validate_reports_a_hostile_file_as_invalid(manage, tmp_path, case):
    hostile = CORPUS[case]
    path = _write(tmp_path, hostile.state)

    run = _timed(manage, "liza_validate", file=str(path))

    assert run.code == 1
    assert run.out_lines[0].startswith(f"INVALID: {path}: ") and hostile.says in run.out


# -- what the file is, before what it says --------------------------------------------------


def _symlink_to(target: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.symlink_to(target)

    return make


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _sparse_50_mb(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)


NOT_REGULAR: dict[str, tuple[Callable[[Path], None], str]] = {
    "symlink to /dev/zero": (_symlink_to("/dev/zero"), "is a symbolic link"),
    "symlink to a regular file": (_symlink_to("/etc/hostname"), "is a symbolic link"),
    "FIFO": (_fifo, "is a FIFO; only regular files are read"),
    "directory": (_directory, "is a directory; only regular files are read"),
    "50 MB file": (_sparse_50_mb, f"is 52428800 bytes; the limit is {MAX_FILE_BYTES}"),
}


@pytest.mark.parametrize("name", ["state.yaml", "log.yaml"])
@pytest.mark.parametrize("case", list(NOT_REGULAR))
def test_only_regular_files_of_bounded_size_are_read(manage, tmp_path, case, name):
    make, says = NOT_REGULAR[case]
    _write(tmp_path, _dump(base_state()))
    path = tmp_path / ".liza" / name
    path.unlink()
    make(path)

    run = _timed(manage, "liza_import", str(tmp_path), project="bad", lenient=True)

    assert run.code == 1
    assert f"{path}: {says}" in run.err, run.err
    assert set(row_counts().values()) == {0}


def test_liza_validate_does_not_hang_on_a_fifo(manage, tmp_path):
    path = tmp_path / "state.yaml"
    os.mkfifo(path)

    run = _timed(manage, "liza_validate", file=str(path))

    assert (run.code, run.out_lines) == (
        1,
        [f"INVALID: {path}: is a FIFO; only regular files are read"],
    )


# -- export never follows what it finds where it writes -----------------------------------


def test_export_replaces_a_planted_symlink_instead_of_writing_through_it(
    manage, tmp_path, valid_dir
):
    manage("liza_import", str(valid_dir), project="seed")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    (tmp_path / "out" / ".liza").mkdir(parents=True)
    (tmp_path / "out" / ".liza" / "state.yaml").symlink_to(victim)

    run = manage("liza_export", str(tmp_path / "out"), project="seed")

    assert run.code == 0, run.err
    assert victim.read_text(encoding="utf-8") == "keep me\n"
    state = tmp_path / "out" / ".liza" / "state.yaml"
    assert not state.is_symlink() and state.read_text(encoding="utf-8").startswith("version: 1")


# -- a fresh clone ------------------------------------------------------------------------------


def test_manage_py_check_works_on_a_fresh_clone_without_var():
    # var/ is git-ignored, so a clone has none: the settings name the embedded cluster's address
    # without needing it (or its folder) to exist.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["LIZA_EMBEDDED_PG_DIR"] = "/nonexistent/liza-clone/var/postgres"

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert not Path("/nonexistent").exists()


@pytest.mark.parametrize("worktree", ["../../../../etc", "/etc/passwd"])
def test_a_worktree_outside_the_project_is_never_exported(manage, world, tmp_path, worktree):
    # The services take the worktree an agent gives at claim; whatever got in, export does not
    # write it back out (the original's scripts create and delete worktree directories).
    goal = goal_create(
        project=world.project, actor=world.planner, description="x", now=world.tick()
    )
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.unclaimed("t-1")
    task_claim(
        task=world.task("t-1"),
        agent=world.coder,
        now=world.tick(),
        worktree=worktree,
        base_commit="base0001",
    )

    run = manage("liza_export", str(tmp_path / "out"), project=world.project.slug)

    assert run.code == 1
    assert (
        f"INVALID: t-1: Task worktree must be a relative path inside the project ('{worktree}'"
        in run.err
    )
    assert not (tmp_path / "out").exists()
