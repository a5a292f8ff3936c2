"""No 500 from any input to the board's pages (SPEC §6; the security review's finding 4).

Every route of boards/urls.py, the sign-in pages included, is driven with hostile path parts,
query parameters and form fields — NUL bytes, non-ASCII digits (`²` passes `isdigit()` and
fails `int()`), 30-digit numbers past every integer column, 20,000-character text, surrogate
escapes, markup — as a project admin, who passes every role check and so reaches the deepest
code of each view. The routes are read from the URL configuration, so a new page is fuzzed
without anyone adding it here, and the form fields from the operations' own inputs plus the
names the board's forms use. Any answer of 500 or more fails the test.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver

from boards.coordination.models.records import Alert
from boards.operations import OPERATIONS
from tests.board.web.helpers import sprint_world

pytestmark = pytest.mark.django_db

HOSTILE = (
    "\x00",
    "a\x00b",
    "²",
    "٣",  # an Arabic-Indic three: isdigit() too
    "9" * 30,
    "-1",
    "1e400",
    "NaN",
    "x" * 20_000,
    "\ud800",  # a lone surrogate
    "<script>alert(1)</script>",
    "../../etc/passwd",
    " ",
)
# Names the board's forms post that differ from the operations' inputs.
FORM_NAMES = {
    "answer",
    "next",
    "task",
    "enabled",
    "label",
    "role",
    "security_reviewer",
    "new_key",
    "new_description",
    "new_done_when",
    "new_spec_ref",
    "new_priority",
    "username",
    "password",
}
# In a URL path a value is one segment: these are the ones a view meets there.
PATH_HOSTILE = ("\x00", "²", "9" * 30, "x" * 300, "\ud800", "%00", "..")
QUERY_NAMES = (
    "q", "goal", "sprint", "agent", "priority", "status", "criticality", "open", "task", "archived",
    "action", "before", "after", "focus", "all",
)  # fmt: skip


def _form_names() -> set[str]:
    names = set(FORM_NAMES)
    for op in OPERATIONS.values():
        if op.input is not None:
            names |= set(op.input().fields)
    return names


def _routes() -> list[URLPattern]:
    """Every page route of the site, the admin and the API excepted (their own suites fuzz
    them: tests/admin, tests/contract)."""
    found = []

    def walk(patterns, prefix=""):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if route.startswith(("admin/", "api/")):
                continue
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, route)
            else:
                found.append((route, pattern))

    walk(get_resolver().url_patterns)
    # The admin's sign-in page takes anyone's input too (the rest of the admin is staff's).
    found.append(("admin/login/", None))
    return found


ROUTES = _routes()


def _path(route: str, values: dict[str, str]) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)


@pytest.fixture
def world():
    world = sprint_world()
    world.claimed("T-1")
    world.unclaimed("T-2")
    Alert.objects.create(
        project=world.project, type=Alert.Type.STALLED, task=world.task("T-1"), subject="T-1",
        message="T-1 stalled", created=world.now,
    )  # fmt: skip
    return world


def _admin(world) -> Client:
    # The deepest path through every view: an admin passes every role check.
    client = Client()
    client.force_login(world.admin)
    return client


def _variants(route: str, world, hostile: str) -> list[str]:
    """The route's path with each of its parts hostile in turn (the others real, so the part
    under test is the one a view has to cope with)."""
    real = {
        "slug": world.project.slug,
        "key": "T-1",
        "sprint_id": world.project.sprints.first().sprint_id,
        "goal_id": world.project.goals.first().goal_id,
        "agent_id": "coder-1",
        "disc_id": "disc-1",
        "prefix": "abcdef123456",
        "alert_id": str(Alert.objects.filter(project=world.project).first().pk),
    }
    params = re.findall(r"<(?:\w+:)?(\w+)>", route)
    if not params:
        return [_path(route, {})]
    return [_path(route, {**real, name: quote(hostile)}) for name in params]


def quote(value: str) -> str:
    return urllib.parse.quote(value.encode("utf-8", "surrogatepass"), safe="")


def test_every_page_route_is_fuzzed():
    """The routes come from the URL configuration: the board's pages and forms are all here."""
    names = {pattern.name for _, pattern in ROUTES if pattern is not None}
    assert {"board", "board-fragment", "task-drawer", "settings", "agent-create"} <= names
    assert {"task-release", "sprint-deadline", "discovery-triage", "agent-key-revoke"} <= names
    assert len(ROUTES) >= 35


FORM = "application/x-www-form-urlencoded"


def _encoded(data: dict[str, object]) -> str:
    """`data` as a raw query string: the test client cannot encode a lone surrogate itself, so
    the bytes a hostile browser would send are written here (lists as repeated fields)."""
    pairs = []
    for name, value in data.items():
        for item in value if isinstance(value, list) else [value]:
            pairs.append(f"{quote(name)}={quote(str(item))}")
    return "&".join(pairs)


def _fails(response, what: str, failures: list[str]) -> None:
    if response.status_code >= 500:
        failures.append(f"{what} → {response.status_code}")


@pytest.mark.parametrize("hostile", PATH_HOSTILE, ids=repr)
def test_no_route_answers_500_to_a_hostile_path_part(world, hostile):
    client, failures = _admin(world), []
    for route, _ in ROUTES:
        for path in _variants(route, world, hostile):
            _fails(client.get(path), f"GET {path[:90]}", failures)
            _fails(client.post(path, {"reason": "r"}), f"POST {path[:90]}", failures)
    assert failures == [], "\n".join(failures[:40])


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: repr(h[:12]))
def test_no_route_answers_500_to_hostile_queries_or_forms(world, hostile):
    client, failures = _admin(world), []
    query = {name: hostile for name in QUERY_NAMES}
    form = {name: hostile for name in sorted(_form_names())}
    form["questions"] = [hostile, hostile]
    for route, _ in ROUTES:
        path = (
            _variants(route, world, "")[0]
            if "<" not in route
            else _path(
                route,
                {
                    "slug": world.project.slug,
                    "key": "T-2",
                    "sprint_id": world.project.sprints.first().sprint_id,
                    "goal_id": world.project.goals.first().goal_id,
                    "agent_id": "coder-2",
                    "disc_id": "disc-1",
                    "prefix": "abcdef123456",
                    "alert_id": str(Alert.objects.filter(project=world.project).first().pk),
                },
            )
        )
        what = f"{path} {hostile[:12]!r}"
        _fails(client.get(f"{path}?{_encoded(query)}"), f"GET {what}", failures)
        _fails(client.post(path, _encoded(form), content_type=FORM), f"POST {what}", failures)
        converting = {**form, "decision": "convert", "next": "inbox"}
        _fails(
            client.post(path, _encoded(converting), content_type=FORM),
            f"POST convert {what}",
            failures,
        )
    assert failures == [], "\n".join(failures[:40])
