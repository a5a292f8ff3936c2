"""The insights and agent pages (issue #13): who may read them, what they draw, the CSVs, and
the links that lead to them. The figures themselves are tested in
tests/insights/selectors/test_insights.py; here, that page, table, chart and CSV agree."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from agents.services import agent_key_issue, agent_leave, run_finish, run_start
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.goals import goal_create
from boards.insights.web.insights import human_duration
from tests.board.web.helpers import MEMBER_PAGE_MATRIX
from tests.factories import ProjectFactory, UserFactory, member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

PAGES = [
    "/p/{slug}/insights/",
    "/p/{slug}/insights/?format=csv&chart=agents",
    "/p/{slug}/agents/coder-1/",
]


@pytest.fixture
def world(db):
    world = World(now=timezone.now() - timezone.timedelta(hours=1))
    goal_create(project=world.project, actor=world.planner, description="Pages", now=world.now)
    world.merged("T-1")
    world.rejected("T-2")
    world.blocked("T-3", coder="coder-2")
    return world


@pytest.fixture
def frozen(world):
    """One moment for the page and its CSVs: ongoing stays are counted up to now."""
    with time_machine.travel(world.now + timedelta(minutes=5), tick=False):
        yield


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def agent_client(agent) -> Client:
    _, plain = agent_key_issue(actor=SYSTEM, agent=agent, now=timezone.now(), label="t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {plain}")


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize(("who", "status"), MEMBER_PAGE_MATRIX)
def test_role_matrix(world, path, who, status):
    other = World()
    client = {
        "anonymous": Client,
        "viewer": lambda: client_for(member(world.project, "viewer")),
        "member": lambda: client_for(member(world.project, "member")),
        "admin": lambda: client_for(world.admin),
        "admin of another project": lambda: client_for(other.admin),
        "no membership": lambda: client_for(UserFactory()),
        "agent of this project": lambda: agent_client(world.coder),
        "agent of another project": lambda: agent_client(other.coder),
    }[who]()
    response = client.get(path.format(slug=world.project.slug))
    assert response.status_code == status
    if status == 302:
        assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_a_missing_project_or_agent_is_a_404(world, path):
    client = client_for(world.admin)
    assert client.get(path.format(slug="no-such-project")).status_code == 404
    assert client.get(f"/p/{world.project.slug}/agents/coder-9/").status_code == 404
    assert client.get(f"/p/{world.project.slug}/agents/%00/").status_code == 404
    # Another project's agent of the same name is not this project's.
    stranger = ProjectFactory()
    assert client.get(f"/p/{stranger.slug}/agents/coder-1/").status_code == 404


def parse_csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def table_cells(html: str, name: str) -> list[list[str]]:
    """The `data-value` of each cell of the table `name`, row by row."""
    table = re.search(rf'<table class="figures" id="table-{name}".*?</table>', html, re.S).group(0)
    body = table.split("<tbody>")[1]
    return [re.findall(r'data-value="([^"]*)"', row) for row in body.split("</tr>") if "<td" in row]


CHARTS = [
    "cfd",
    "time_in_state",
    "slowest",
    "throughput",
    "lead_cycle",
    "review_rounds",
    "agents",
    "alerts",
]


@pytest.mark.parametrize("chart", CHARTS)
def test_each_csv_holds_its_tables_numbers(world, frozen, chart):
    client = client_for(member(world.project, "viewer"))
    url = f"/p/{world.project.slug}/insights/"
    html = client.get(url).content.decode()
    response = client.get(url, {"format": "csv", "chart": chart})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert f'filename="{world.project.slug}-{chart}-' in response["Content-Disposition"]
    header, *rows = parse_csv(response)
    assert rows == table_cells(html, chart)
    assert len(header) == len(rows[0]) if rows else True
    assert f'href="?format=csv&amp;chart={chart}"' in html
    # A chosen period goes with the CSV link.
    chosen = client.get(url, {"from": "2026-01-01", "sprint": ""}).content.decode()
    assert f'href="?from=2026-01-01&amp;format=csv&amp;chart={chart}"' in chosen


def test_the_csvs_hold_the_figures(world):
    client = client_for(world.admin)
    url = f"/p/{world.project.slug}/insights/"

    def rows(chart):
        return parse_csv(client.get(url, {"format": "csv", "chart": chart}))

    agents = {row[0]: dict(zip(rows("agents")[0], row, strict=True)) for row in rows("agents")[1:]}
    assert agents["coder-1"]["claims"] == "2"  # T-1 and T-2
    assert agents["coder-1"]["verdicts received"] == "2"
    assert agents["coder-1"]["approval rate %"] == "50.0"
    assert agents["coder-2"]["blocks"] == "1"
    assert agents["code-reviewer-1"]["verdicts given"] == "2"
    assert agents["code-reviewer-1"]["rubber stamp"] == "no"
    assert agents["planner-1"]["approval rate %"] == ""  # no verdicts: empty, not 0
    throughput = rows("throughput")
    assert throughput[0] == ["day", "merged"]
    assert sum(int(n) for _, n in throughput[1:]) == 1
    assert rows("review_rounds") == [["rounds", "approvals"], ["1", "1"]]
    lead = rows("lead_cycle")
    assert [row[:2] for row in lead] == [
        ["measure", "tasks"],
        ["lead time", "1"],
        ["cycle time", "1"],
    ]
    last = rows("cfd")[-1]
    header = rows("cfd")[0]
    counts = dict(zip(header[1:], map(int, last[1:]), strict=True))
    assert {s: n for s, n in counts.items() if n} == {"MERGED": 1, "REJECTED": 1, "BLOCKED": 1}


@pytest.mark.parametrize(
    "query",
    [
        {"format": "csv", "chart": "nope"},
        {"format": "csv", "chart": "agents", "from": "yesterday"},
        {"format": "csv", "chart": "agents", "sprint": "sprint-99"},
    ],
)
def test_a_bad_csv_request_is_a_400_with_the_reason(world, query):
    response = client_for(world.admin).get(f"/p/{world.project.slug}/insights/", query)
    assert response.status_code == 400
    assert response.content.decode().split(":")[0] in {"chart", "from", "sprint"}


@pytest.mark.parametrize(
    "query",
    [
        {"from": "2026-13-01"},
        {"to": "x"},
        {"sprint": "\x00"},
        {"to": "0001-01-01"},
        {"from": "0001-01-01", "to": "0001-01-02"},
        {"from": "2026-02-02", "to": "2026-02-01"},
    ],
)
def test_a_bad_period_shows_the_defaults_with_a_400(world, query):
    response = client_for(world.admin).get(f"/p/{world.project.slug}/insights/", query)
    assert response.status_code == 400
    assert 'role="alert">Refused:' in response.content.decode()


def test_the_charts_draw_their_tables(world):
    html = client_for(world.admin).get(f"/p/{world.project.slug}/insights/").content.decode()
    # One bar per day in the throughput chart, with the table's values.
    throughput = table_cells(html, "throughput")
    svg = re.search(r'<svg class="chart-svg" id="svg-throughput".*?</svg>', html, re.S).group(0)
    assert re.findall(r'data-value="([^"]*)"', svg) == [row[1] for row in throughput]
    # The CFD draws one layer per state that holds a task on some day, bottom-up.
    cfd = re.search(r'<svg class="chart-svg" id="svg-cfd".*?</svg>', html, re.S).group(0)
    layers = re.findall(r'data-series="([A-Z_]+)" data-values="([^"]*)"', cfd)
    assert [state for state, _ in layers] == ["MERGED", "REJECTED", "BLOCKED"]
    assert all(values.split()[-1] == "1" for _, values in layers)
    assert '<title id="cfd-title">Cumulative flow diagram</title>' in cfd


def test_the_board_links_to_insights_and_each_agent_to_its_page(world):
    html = client_for(world.admin).get(f"/p/{world.project.slug}/").content.decode()
    assert f'href="/p/{world.project.slug}/insights/"' in html
    assert '<a class="agent-id" href="agents/coder-1/">coder-1</a>' in html


def test_the_agent_page_shows_task_lease_history_and_figures(world):
    world.claimed("T-4", coder="coder-3")
    client = client_for(member(world.project, "viewer"))
    html = client.get(f"/p/{world.project.slug}/agents/coder-3/").content.decode()
    now = re.search(r'<dl class="agent-now".*?</dl>', html, re.S).group(0)
    assert "T-4" in now and "(CLAIMED)" in now
    assert "task lease</dt><dd>until" in now
    history = re.search(r'<table class="figures" id="agent-history".*?</table>', html, re.S).group(
        0
    )
    assert re.findall(r"<td>(claimed)</td><td>(T-4)</td>", history) == [("claimed", "T-4")]
    figures = table_cells(html, "agents")
    assert len(figures) == 1 and figures[0][0] == "coder-3" and figures[0][2] == "1"
    coder1 = client.get(f"/p/{world.project.slug}/agents/coder-1/").content.decode()
    assert table_cells(coder1, "agents")[0][:4] == ["coder-1", "coder", "2", "2"]


def test_the_agent_page_lists_its_supervisors_runs(world):
    """Issue 12: each spawn reported by `liza supervise` shows on the agent's page (newest
    first, crashes marked, the redacted output) as in the task drawer; another agent's don't."""
    world.claimed("T-4", coder="coder-3")
    coder = world.agent("coder-3")
    crashed = run_start(project=world.project, agent=coder, now=world.tick(), task="T-4")
    run_finish(run=crashed, agent=coder, now=world.tick(), exit_code=3, output="Traceback: boom")
    running = run_start(
        project=world.project, agent=coder, now=world.tick(), task="T-4", restart_reason="crash"
    )
    other = world.agent("coder-1")
    run_start(project=world.project, agent=other, now=world.tick())
    client = client_for(member(world.project, "viewer"))
    html = client.get(f"/p/{world.project.slug}/agents/coder-3/").content.decode()
    runs = re.search(r'<ol class="runs">.*?</ol>', html, re.S).group(0)
    items = re.findall(r'<li class="run run-(\w+)( crashed)?"', runs)
    assert items == [("running", ""), ("finished", " crashed")]  # the restart, then the crash
    assert '<span class="run-reason">crashed (exit 3)</span>' in runs and "Traceback: boom" in runs
    assert "crash" in runs and running.pk != crashed.pk
    idle = client.get(f"/p/{world.project.slug}/agents/coder-2/").content.decode()
    assert '<ol class="runs">' not in idle and "No run reported" in idle


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (12.4, "12s"), (250, "4m 10s"), (7500, "2h 05m"), (273_600, "3d 04h")],
)
def test_durations_read_in_their_two_largest_units(seconds, text):
    assert human_duration(seconds) == text


def test_the_agent_page_says_when_an_agent_left(world):
    """Its session ended (`agent_leave`): "left <time>" where a live agent's state shows."""
    gone = agent_leave(project=world.project, agent=world.agent("coder-3"), now=world.tick())
    client = client_for(member(world.project, "viewer"))

    html = client.get(f"/p/{world.project.slug}/agents/coder-3/").content.decode()
    alive = client.get(f"/p/{world.project.slug}/agents/coder-1/").content.decode()

    heading = re.search(r"<h1>.*?</h1>", html, re.S)[0]
    assert f'left <time datetime="{gone.left_at.isoformat()}">' in heading
    assert f'<span class="badge">{gone.status}</span>' not in heading
    assert "left <time" not in re.search(r"<h1>.*?</h1>", alive, re.S)[0]
