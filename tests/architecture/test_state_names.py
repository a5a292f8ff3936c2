"""States and event types are enums defined once (boards.protocol), not string literals.

The first release spelled state names ~290 times across the code; a misspelt "CLAIMD" in one of
them is a rule that silently never fires. Outside the protocol's state machines
(boards/protocol/states.py), the migrations and the seed-format reader/writer (which speak the
file format's own words), a state name appears only as `TaskStatus.CLAIMED` & co. The test walks
the source (AST string constants, docstrings excepted) and counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

from boards import protocol as p

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("boards", "agents", "liza_site")
ALLOWED = (
    # The state machines themselves (boards.protocol.states) name the states.
    "boards/protocol/states.py",
    # The seed format's reader, writer and validator: they translate state.yaml's own words.
    "boards/interop/",
    # The HTTP client's one copy of the wire's words (it may not import boards.protocol);
    # tests/agents/client/test_wire.py checks it against the protocol.
    "agents/client/wire.py",
)
STATE_NAMES = {*p.TASK_STATES, *p.AGENT_STATES, *p.GOAL_STATES, *p.SPRINT_STATES}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def bare_state_names(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in STATE_NAMES
        and id(node) not in docs
    ]


def test_the_count_sees_a_bare_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""CLAIMED in a docstring is prose."""\nx = "CLAIMED"\ny = "claimed"\n')
    assert bare_state_names(sample) == [(2, "CLAIMED")]


def test_no_bare_state_name_outside_the_protocol_module():
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or relative.startswith(ALLOWED):
                continue
            found += [f"{relative}:{line}: {name!r}" for line, name in bare_state_names(path)]
    assert found == [], f"{len(found)} bare state names:\n" + "\n".join(found)
