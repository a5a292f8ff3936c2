"""Services are the only write path (STYLE.md; docs/architecture.md), checked on the source.

The layers themselves are import-linter contracts (pyproject.toml, run by .ci/test); what an
import graph cannot see is a view or an admin class calling `.save()` on a domain row it was
handed. This test walks every module of the product (AST, not text) and fails on a write — a
model's `save`/`delete`, a queryset's `update`/`delete`, `objects.create`, `bulk_*`, a related
manager's `add`/`remove`/`set`/`clear` — outside the places allowed to write.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("boards", "agents", "liza_site")

# Where domain rows are written. The import of a state.yaml is a service too: it writes a
# validated plan in bulk (boards/interop/importing.py).
WRITERS = (
    "boards/coordination/services/",
    "boards/watch/services/",
    "agents/services/",
    "boards/interop/importing.py",
)

# Writes that are not of a domain row, each with its reason.
NOT_DOMAIN = {
    # The demo's Django user (auth, not the Liza domain); its memberships go through services.
    ("boards/demo/projects.py", "admin.save"),
    # A Python set of the mapping keys seen so far (duplicate-key detection), not Agent.keys.
    ("boards/interop/yaml_io.py", "parent.keys.add"),
}

ALWAYS = {"save", "delete", "create", "bulk_create", "bulk_update", "get_or_create"}
ALWAYS |= {"update_or_create"}
QUERYSET_ONLY = {"update"}  # dict.update is everywhere: only on a queryset expression
RELATED_ONLY = {"add", "remove", "set", "clear"}  # set.add too: only on a related manager


def _related_names() -> set[str]:
    """Names of every many-to-many and reverse relation of the product's models."""
    names: set[str] = set()
    for model in apps.get_models():
        if model._meta.app_label not in ("boards", "agents"):
            continue
        for field in model._meta.get_fields():
            if field.many_to_many or field.one_to_many:
                names.add(field.get_accessor_name() if field.auto_created else field.name)
    return names


def _sources() -> list[Path]:
    return sorted(
        path
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def _writes(path: Path, related: set[str]) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, node.func.value
        text = ast.unparse(receiver)
        if text == "super()":
            continue  # a model's own save() calling Django's
        queryset = "objects" in text or isinstance(receiver, ast.Call)
        last = receiver.attr if isinstance(receiver, ast.Attribute) else ""
        if (
            method in ALWAYS
            or (method in QUERYSET_ONLY and queryset)
            or (method in RELATED_ONLY and last in related)
        ):
            found.append((node.lineno, f"{text}.{method}"))
    return found


def test_the_scan_sees_writes():
    """The detector itself: a service module is full of them (a test that cannot fail is a
    defect, so it must find what is there)."""
    related = _related_names()
    assert {"depends_on", "planned", "stretch"} <= related
    found = {
        w for _, w in _writes(ROOT / "boards/coordination/services/tasks/planning.py", related)
    }
    assert any(w.endswith(".depends_on.set") for w in found), found
    assert any(w.endswith("objects.create") for w in found), found


def test_domain_rows_are_written_only_by_services():
    related = _related_names()
    offenders = []
    for path in _sources():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(WRITERS):
            continue
        for line, write in _writes(path, related):
            if (relative, write) not in NOT_DOMAIN:
                offenders.append(f"{relative}:{line}: {write}")
    assert offenders == [], "writes outside the services:\n" + "\n".join(offenders)


@pytest.mark.parametrize("allowed", sorted(NOT_DOMAIN))
def test_every_exception_still_exists(allowed):
    """An exception that no longer matches anything is removed, not left to excuse a new one."""
    relative, write = allowed
    assert write in {w for _, w in _writes(ROOT / relative, _related_names())}
