"""The board UI (SPEC §7): signing in and out, the project list, the board, its fragment and
the task drawer, with tenancy checked on every page (SPEC §3: a foreign project is a 404)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.http import QueryDict
from django.test import Client
from django.utils import timezone

from agents.services import agent_leave
from boards.board.selectors.board import BoardFilters
from boards.coordination import outbox as events
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Task
from boards.coordination.services.records import human_note_create
from boards.watch.services.watch import watch_sweep
from tests.board.web.helpers import read_columns, sprint_world
from tests.factories import ProjectFactory, UserFactory, member

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# -- signing in and out -----------------------------------------------------------------------


def test_sign_in_with_the_right_password_then_out():
    UserFactory(username="ada")  # password "pw-for-tests"
    client = Client(enforce_csrf_checks=True)
    page = client.get("/login/")
    assert page.status_code == 200
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/login/",
        {"username": "ada", "password": "pw-for-tests", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200

    token = client.cookies["csrftoken"].value
    response = client.post("/logout/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client.get("/")["Location"].startswith("/login/")


def test_a_wrong_password_stays_on_the_sign_in_page():
    UserFactory(username="ada")
    response = Client().post("/login/", {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert "Wrong username or password." in response.content.decode()
    assert "_auth_user_id" not in Client().session


def test_sign_out_needs_the_csrf_token():
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory())
    assert client.post("/logout/").status_code == 403
    assert client.get("/").status_code == 200  # still signed in


@pytest.mark.parametrize(
    "path", ["/", "/p/{slug}/", "/p/{slug}/fragment", "/p/{slug}/tasks/task-1/"]
)
def test_anonymous_visitors_are_sent_to_sign_in(world, path):
    world.unclaimed("task-1", sprint_scope="planned")
    response = Client().get(path.format(slug=world.project.slug))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


# -- the project list -------------------------------------------------------------------------


def test_the_project_list_shows_only_the_users_memberships():
    mine, also_mine, theirs = (ProjectFactory() for _ in range(3))
    user = member(mine, "viewer")
    member(also_mine, "admin", username=user.username)
    member(theirs, "admin")
    html = client_for(user).get("/").content.decode()
    slugs = set(re.findall(r'href="/p/([\w-]+)/"', html))
    assert slugs == {mine.slug, also_mine.slug}
    assert f'<code>{mine.slug}</code> <span class="role">viewer</span>' in html
    assert f'<code>{also_mine.slug}</code> <span class="role">admin</span>' in html


def test_a_user_without_memberships_sees_none_and_staff_see_all():
    ProjectFactory(), ProjectFactory()
    html = client_for(UserFactory()).get("/").content.decode()
    assert "You are not a member of any project yet." in html
    assert 'href="/p/' not in html
    staff_html = client_for(UserFactory(is_staff=True)).get("/").content.decode()
    slugs = set(re.findall(r'href="/p/([\w-]+)/"', staff_html))
    assert slugs == set(Project.objects.values_list("slug", flat=True))


def _project_row(html: str, slug: str) -> str:
    return re.search(rf'<tr class="project-row" data-slug="{slug}">(.*?)</tr>', html, re.S).group(1)


def test_the_project_list_shows_each_projects_numbers_in_constant_queries(
    django_assert_max_num_queries,
):
    """Issue 25: each project with its tasks by state, blocked count, last activity and agents
    running — the same few queries for one project or five."""
    from agents.services import run_start
    from tests.lifecycle import World

    busy = World(now=timezone.now() - timedelta(minutes=5))
    busy.unclaimed("T-1")
    busy.unclaimed("T-2")
    busy.blocked("T-3")
    run_start(project=busy.project, agent=busy.agent("coder-2"), now=busy.tick())
    quiet = ProjectFactory()
    user = member(busy.project, "viewer")
    member(quiet, "member", username=user.username)
    client = client_for(user)
    client.get("/")  # the session and the templates, once

    with django_assert_max_num_queries(8) as counted:
        html = client.get("/").content.decode()
    row = _project_row(html, busy.project.slug)
    assert '<span class="role">viewer</span>' in row
    assert ">2 unclaimed</span>" in row and ">1 blocked</span>" in row
    assert "⚠ 1 blocked</a>" in row
    assert '<td class="agents-running" data-running="1">1</td>' in row
    assert re.search(r'<td class="last-activity"><time datetime="[^"]+"[^>]*>\d', row), row
    empty = _project_row(html, quiet.slug)
    assert "no tasks yet" in empty and 'data-blocked="0"' in empty

    for _ in range(4):
        member(ProjectFactory(), "viewer", username=user.username)
    with django_assert_max_num_queries(len(counted.captured_queries)):
        html = client.get("/").content.decode()
    assert html.count('class="project-row"') == 6


# -- the board: who sees it -------------------------------------------------------------------


BOARD_PAGES = ["/p/{slug}/", "/p/{slug}/fragment", "/p/{slug}/tasks/task-1/"]


@pytest.mark.parametrize("path", BOARD_PAGES)
@pytest.mark.parametrize(
    "who, status",
    [
        ("viewer", 200),
        ("member", 200),
        ("admin", 200),
        ("staff", 200),
        ("admin of another project", 404),
        ("no membership", 404),
        ("inactive admin", 302),  # the session no longer authenticates: sign in again
    ],
)
def test_board_pages_role_matrix(world, path, who, status):
    world.unclaimed("task-1", sprint_scope="planned")
    user = {
        "viewer": lambda: member(world.project, "viewer"),
        "member": lambda: member(world.project, "member"),
        "admin": lambda: world.admin,
        "staff": lambda: UserFactory(is_staff=True),
        "admin of another project": lambda: member(ProjectFactory(), "admin"),
        "no membership": UserFactory,
        "inactive admin": lambda: member(world.project, "admin", is_active=False),
    }[who]()
    client = Client()
    client.force_login(user)
    assert client.get(path.format(slug=world.project.slug)).status_code == status


@pytest.mark.parametrize("path", BOARD_PAGES)
def test_a_missing_project_is_the_same_404(world, path):
    client = client_for(world.admin)
    assert client.get(path.format(slug="no-such-project")).status_code == 404


# -- the board: what it shows -----------------------------------------------------------------


def test_the_board_shows_the_sprint_cards_header_agents_and_alerts(world):
    world.unclaimed("task-dep", sprint_scope="planned")
    world.claimed("task-1", sprint_scope="planned", depends_on=[], priority=1)
    world.unclaimed("task-2", sprint_scope="planned", depends_on=["task-dep"])
    world.under_review("task-3", coder="coder-2", sprint_scope="planned")
    world.draft("task-outside")  # not in the sprint: not on the default board
    Alert.objects.create(
        project=world.project,
        type=Alert.Type.values[0],
        message="Lease expired on task-9",
        created=timezone.now(),
    )
    response = client_for(member(world.project, "viewer")).get(f"/p/{world.project.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    columns = read_columns(html)
    assert list(columns) == [
        "DRAFT",
        "UNCLAIMED",
        "CLAIMED",
        "READY_FOR_REVIEW",
        "REJECTED",
        "APPROVED",
        "INTEGRATION_FAILED",
        "BLOCKED",
        "MERGED",
        "SUPERSEDED",
        "ABANDONED",
    ]
    keys = {s: [c["data-key"] for c in col.cards] for s, col in columns.items()}
    assert keys["UNCLAIMED"] == ["task-dep", "task-2"]
    assert keys["CLAIMED"] == ["task-1"]
    assert keys["READY_FOR_REVIEW"] == ["task-3"]
    assert "task-outside" not in html
    assert columns["UNCLAIMED"].count == 2
    claimed, waiting, reviewed = (_card_html(html, k) for k in ("task-1", "task-2", "task-3"))
    assert 'class="assignee">coder-1<' in claimed
    assert 'class="countdown" data-expires="' in claimed  # the lease countdown
    assert 'class="iteration">1/10<' in claimed
    assert 'class="waiting-keys">task-dep<' in waiting
    assert "code-reviewer-1" in reviewed
    # Header, agent panel, alerts; the socket and the sequence the page continues from.
    assert "Goal goal-1" in html and "sprint-1" in html
    assert 'data-agent="coder-1"' in html and 'data-agent="code-reviewer-3"' in html
    assert "Lease expired on task-9" in html
    assert f'data-ws-path="/ws/p/{world.project.slug}/"' in html
    assert f'data-seq="{events.current_sequence(world.project.pk)}"' in html
    assert "4 tasks" in html


def _card_html(html: str, key: str) -> str:
    match = re.search(
        rf'<article class="card[^"]*" data-key="{re.escape(key)}".*?</article>', html, re.S
    )
    assert match, key
    return match.group(0)


def test_the_fragment_carries_what_a_resync_replaces(world):
    world.claimed("task-1", sprint_scope="planned")
    response = client_for(world.admin).get(f"/p/{world.project.slug}/fragment")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = response.json()
    assert set(data) == {"seq", "columns", "header", "agents"}
    assert data["seq"] == events.current_sequence(world.project.pk)
    assert data["columns"].startswith('<div class="columns" id="columns" data-total="')
    assert [c["data-key"] for c in read_columns(data["columns"])["CLAIMED"].cards] == ["task-1"]
    assert 'id="board-header"' in data["header"]
    assert data["agents"].startswith('<ul class="agents" id="agents">')


def test_the_fragment_applies_the_same_filters_as_the_page(world):
    world.claimed("task-1", sprint_scope="planned")
    world.unclaimed("task-2", sprint_scope="planned")
    data = client_for(world.admin).get(f"/p/{world.project.slug}/fragment?status=UNCLAIMED").json()
    columns = read_columns(data["columns"])
    assert [c["data-key"] for col in columns.values() for c in col.cards] == ["task-2"]


# -- the drawer -------------------------------------------------------------------------------


def test_the_drawer_shows_every_field_history_and_records(world):
    world.unclaimed("task-dep", sprint_scope="planned")
    world.rejected("task-1", sprint_scope="planned")
    human_note_create(
        project=world.project,
        actor=world.admin,
        message="Mind the retry budget",
        now=world.tick(),
        task="task-1",
    )
    response = client_for(member(world.project, "viewer")).get(
        f"/p/{world.project.slug}/tasks/task-1/"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-key="task-1"' in html
    assert "REJECTED" in html
    for text in (
        "coder-1",
        "Needs work",  # rejection_reason
        "c0ffee01",  # review_commit
        "Mind the retry budget",
        "code-reviewer-1 at c0ffee01: REJECTED",
    ):
        assert text in html, text
    # The event timeline, oldest first, and the time spent in each state (seed 003).
    actions = re.findall(r'<span class="action">([\w_]+)</span>', html)
    assert actions[:2] == ["created", "finalized"]
    assert actions.index("claimed") < actions.index("rejected")
    states = re.findall(r"<tr><th title=\"(\w+)\">", html)  # the raw name in the tooltip
    assert states == ["DRAFT", "UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "REJECTED"]


def test_the_drawer_of_another_projects_task_is_a_404(world):
    other = sprint_world(ProjectFactory())
    other.unclaimed("task-secret", sprint_scope="planned")
    world.unclaimed("task-1", sprint_scope="planned")
    client = client_for(world.admin)
    assert client.get(f"/p/{world.project.slug}/tasks/task-secret/").status_code == 404
    assert client.get(f"/p/{world.project.slug}/tasks/no-such-task/").status_code == 404
    # Through the other project's URL the admin is no member: the same 404.
    assert client.get(f"/p/{other.project.slug}/tasks/task-secret/").status_code == 404


# -- filters ----------------------------------------------------------------------------------


@pytest.fixture
def filtered_world(world):
    world.claimed("a-claimed", coder="coder-1", sprint_scope="planned", priority=1)
    world.claimed("b-claimed", coder="coder-2", sprint_scope="planned", priority=2)
    world.unclaimed(
        "c-unclaimed", sprint_scope="planned", priority=1, criticality="security-sensitive"
    )
    world.unclaimed("d-stretch", sprint_scope="stretch", description="Retry with backoff")
    world.merged("e-merged", coder="coder-3", sprint_scope="planned")
    world.unclaimed("f-outside")
    return world


@pytest.mark.parametrize(
    "query, expected",
    [
        ("", {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"}),
        ("?status=CLAIMED", {"a-claimed", "b-claimed"}),
        (
            "?status=CLAIMED&status=UNCLAIMED",
            {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"},
        ),
        ("?agent=coder-2", {"b-claimed"}),
        ("?priority=1", {"a-claimed", "c-unclaimed"}),
        ("?criticality=security-sensitive", {"c-unclaimed"}),
        ("?q=backoff", {"d-stretch"}),
        ("?q=B-CLAIM", {"b-claimed"}),
        ("?goal=goal-1", {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"}),
        ("?goal=goal-9", set()),
        ("?sprint=all", {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch", "f-outside"}),
        (
            "?sprint=sprint-1&open=MERGED",
            {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch", "e-merged"},
        ),
        (
            "?sprint=all&open=MERGED",
            {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch", "e-merged", "f-outside"},
        ),
        # Nonsense is refused by the shared filter (400 with the board, unfiltered by it), never
        # a 500: NUL bytes, non-ASCII digits and 30-digit numbers included.
        (
            "?priority=9&status=NOPE&criticality=x&open=CLAIMED",
            {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"},
        ),
        (
            "?q=%00&goal=%00&sprint=%00&agent=%00",
            {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"},
        ),
        ("?priority=%C2%B2", {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"}),
        ("?priority=" + "9" * 30, {"a-claimed", "b-claimed", "c-unclaimed", "d-stretch"}),
    ],
)
def test_board_filters(filtered_world, query, expected):
    response = client_for(filtered_world.admin).get(f"/p/{filtered_world.project.slug}/{query}")
    refused = BoardFilters.from_query(QueryDict(query.lstrip("?"))).errors
    assert response.status_code == (400 if refused else 200)
    if refused:
        assert "refused" in response.content.decode()
    columns = read_columns(response.content.decode())
    shown = {c["data-key"] for col in columns.values() for c in col.cards}
    assert shown == expected


def test_terminal_columns_are_collapsed_with_their_count_until_opened(filtered_world):
    client = client_for(filtered_world.admin)
    url = f"/p/{filtered_world.project.slug}/"
    merged = read_columns(client.get(url).content.decode())["MERGED"]
    assert merged.collapsed and merged.count == 1 and merged.cards == []
    opened = read_columns(client.get(url + "?open=MERGED").content.decode())["MERGED"]
    assert not opened.collapsed
    assert [c["data-key"] for c in opened.cards] == ["e-merged"]


def test_the_header_says_when_the_watcher_last_swept_and_warns_when_it_is_silent(world):
    client = client_for(world.admin)

    def header() -> str:
        return client.get(f"/p/{world.project.slug}/fragment").json()["header"]

    def banner(html: str) -> str:
        return re.search(r'<p class="banner warn watcher-silent"[^>]*>', html).group(0)

    html = header()  # no watcher has ever run
    assert "never seen" in html and "no watcher has swept this project yet" in html
    assert " hidden" not in banner(html)

    watch_sweep(project=world.project, now=timezone.now())
    html = header()
    assert re.search(r"last seen \d s ago", html)
    assert " hidden" in banner(html)

    Project.objects.filter(pk=world.project.pk).update(
        last_swept=timezone.now() - timedelta(seconds=31)
    )
    html = header()
    assert "last seen 3" in html and "no sweep for more than 30 s" in html
    assert " hidden" not in banner(html)


def test_open_alerts_show_in_the_header_by_level_and_on_their_card(world):
    world.claimed("task-1", sprint_scope="planned")
    world.unclaimed("task-2", sprint_scope="planned")
    now = timezone.now()
    task = world.task("task-1")
    for level, subject in (("critical", "a"), ("warning", "b"), ("warning", "c")):
        Alert.objects.create(
            project=world.project, type=Alert.Type.LEASE_EXPIRED, level=level, task=task,
            subject=subject, message="m", created=now,
        )  # fmt: skip
    Alert.objects.create(  # resolved: counted nowhere
        project=world.project, type=Alert.Type.BLOCKED, level="critical", message="m",
        created=now, resolved_at=now,
    )  # fmt: skip
    html = client_for(world.admin).get(f"/p/{world.project.slug}/").content.decode()
    header = html[html.index('id="board-header"') : html.index('id="watcher-status"')]
    levels = re.findall(r'alert-badge level-(\w+)" href="[^"]+#alerts">(\d+) \1<', header)
    assert levels == [("critical", "1"), ("warning", "2")]  # most severe first
    assert "3 alerts (critical)" in _card_html(html, "task-1")
    assert "alert" not in _card_html(html, "task-2")


def test_tasks_ended_longer_ago_than_archive_after_days_leave_the_default_board(world):
    world.unclaimed("task-open", sprint_scope="planned")  # keeps the sprint open
    world.merged("task-old", sprint_scope="planned")
    world.merged("task-new", sprint_scope="planned")
    now = timezone.now()
    Task.objects.filter(project=world.project, key="task-old").update(
        updated=now - timedelta(days=31)
    )
    Task.objects.filter(project=world.project, key="task-new").update(
        updated=now - timedelta(days=29)
    )
    client = client_for(world.admin)
    slug = world.project.slug

    def merged(query: str) -> tuple[int, list[str], str]:
        html = client.get(f"/p/{slug}/?open=MERGED{query}").content.decode()
        column = read_columns(html)["MERGED"]
        return column.count, [c["data-key"] for c in column.cards], html

    count, keys, html = merged("")
    assert (count, keys) == (1, ["task-new"])
    assert "1 archived task (ended over 30 days ago) not shown" in html
    count, keys, html = merged("&archived=1")
    assert (count, sorted(keys)) == (2, ["task-new", "task-old"])
    assert "archived tasks shown" in html

    ProjectConfig.objects.filter(project=world.project).update(archive_after_days=0)  # off
    count, keys, html = merged("")
    assert count == 2 and "archived task" not in html


def test_the_drawer_lists_the_supervisors_runs_newest_first(world):
    from agents.services import run_finish, run_start

    world.claimed("task-1", sprint_scope="planned")
    coder = world.agent("coder-1")
    crashed = run_start(project=world.project, agent=coder, now=world.tick(), task="task-1")
    run_finish(
        run=crashed, agent=coder, now=world.tick(), exit_code=1, output="Traceback: KeyError"
    )
    run_start(
        project=world.project,
        agent=coder,
        now=world.tick(),
        task="task-1",
        restart_reason="crash: exit 1",
    )

    html = (
        client_for(member(world.project, "viewer"))
        .get(f"/p/{world.project.slug}/tasks/task-1/")
        .content.decode()
    )

    runs = html[html.index("<h3>Runs</h3>") :]
    assert runs.index("running") < runs.index("crash: exit 1") < runs.index("crashed (exit 1)")
    assert '<li class="run run-finished crashed"' in runs and "Traceback: KeyError" in runs


def test_an_agent_that_left_reads_as_left_on_the_agent_panel(world):
    """Its session ended (`agent_leave`): the panel says "left <time>", not the state it stopped
    in, and shows no heartbeat age or lease countdown as a live agent's."""
    gone = agent_leave(project=world.project, agent=world.agent("coder-2"), now=world.tick())
    html = client_for(world.admin).get(f"/p/{world.project.slug}/").content.decode()

    def row(agent_id: str) -> str:
        found = re.search(rf'<li class="agent [^"]*" data-agent="{agent_id}">.*?</li>', html, re.S)
        return found.group(0)

    left, alive = row("coder-2"), row("coder-1")
    assert re.match(r'<li class="agent status-\w+ departed"', left)
    shown = re.search(r'<span class="badge departed"[^>]*>left <time datetime="([^"]+)">', left)
    assert shown[1] == gone.left_at.isoformat()
    assert f'<span class="badge">{gone.status}</span>' not in left
    assert 'class="age"' not in left and 'class="countdown"' not in left
    alive_status = world.agent("coder-1").status
    assert "departed" not in alive and f'<span class="badge">{alive_status}</span>' in alive
    assert 'class="age"' in alive
