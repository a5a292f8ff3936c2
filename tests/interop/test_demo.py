"""`liza_demo` and the timestamp shift it relies on."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import RequestFactory
from django.utils import timezone

from agents.models import Agent
from agents.selectors import agent_key_lookup
from boards.board.selectors.board import card_for
from boards.coordination.models.projects import Goal, Membership, Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.demo.flow import flow_demo_build
from boards.demo.projects import DEMO_DIR, shift_timestamps
from boards.insights.selectors.figures import insights_period
from boards.insights.selectors.insights import _flow_sql, insights
from boards.interop.invariants import reference_time
from boards.protocol import GoalStatus
from tests.insights.selectors.insights_oracle import flow_reference
from tests.interop.test_exporting_original_judge import _export


def test_shift_timestamps_moves_every_timestamp_and_nothing_else():
    t = datetime(2025, 1, 17, 14, 0, tzinfo=UTC)
    state = {
        "goal": {"created": t, "alignment_history": [{"timestamp": t, "summary": "s"}]},
        "tasks": [
            {
                "id": "task-7",
                "lease_expires": t,
                "history": [
                    {"time": "2025-01-17T16:20:00Z", "event": "x", "task": "task-1-retry"},
                    {"time": "2025-01-17T16:30:00Z", "note": "2025-01-17T16:30:00Z"},
                ],
            }
        ],
        "sprint": {"timeline": {"started": t, "checkpoint_at": None}},
        "config": {"lease_duration": 300},
    }
    log = [{"timestamp": t, "agent": "coder-1", "detail": "at 2025-01-17T14:00:00Z"}]
    before = copy.deepcopy((state, log))
    delta = timedelta(days=400, seconds=7)

    shifted, shifted_log = shift_timestamps(state, log, delta)

    assert (state, log) == before  # pure: the inputs are untouched
    assert shifted["goal"]["created"] == t + delta
    assert shifted["goal"]["alignment_history"][0]["timestamp"] == t + delta
    assert shifted["tasks"][0]["lease_expires"] == t + delta
    history = shifted["tasks"][0]["history"]
    assert history[0] == {"time": "2026-02-21T16:20:07Z", "event": "x", "task": "task-1-retry"}
    assert history[1]["note"] == "2025-01-17T16:30:00Z"  # not a timestamp key
    assert shifted["sprint"]["timeline"] == {"started": t + delta, "checkpoint_at": None}
    assert shifted["config"] == {"lease_duration": 300}
    assert shifted_log == [
        {"timestamp": t + delta, "agent": "coder-1", "detail": "at 2025-01-17T14:00:00Z"}
    ]


def test_the_demo_blackboard_ships_inside_the_product():
    assert (DEMO_DIR / ".liza" / "state.yaml").is_file()
    assert (DEMO_DIR / ".liza" / "log.yaml").is_file()
    assert "shared" not in DEMO_DIR.parts


KEY_LINE = re.compile(r"^Agent key \(coder-4\): (liza_\S+)$")


def demo_key(run) -> str:
    keys = [m.group(1) for m in map(KEY_LINE.match, run.out_lines) if m]
    assert len(keys) == 1, run.out
    return keys[0]


@pytest.mark.django_db
def test_liza_demo_builds_a_live_project_and_is_idempotent(manage, original_liza, tmp_path):
    first = manage("liza_demo")
    # Each run issues a fresh demo key (an audited `key_issued`); nothing else is written again.
    events_after_first = Event.objects.exclude(action="key_issued").count()
    second = manage("liza_demo")

    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert first.out_lines[0] == 'Liza Board demo project "demo": 10 tasks'
    assert second.out_lines[0] == 'Liza Board demo project "demo": 10 tasks'
    assert "Imported" in first.out_lines[1] and "kept as it is" in second.out_lines[1]
    flow_line = 'Insights demo project "demo-flow" (Demo: two weeks of flow): 32 tasks'
    assert first.out_lines[2] == f"{flow_line}; see /p/demo-flow/insights/"
    assert second.out_lines[2] == f"{flow_line}, kept as it is; see /p/demo-flow/insights/"
    for run in (first, second):
        assert "Admin login: admin / liza-admin" in run.out_lines
    project = Project.objects.get(slug="demo")
    assert Task.objects.filter(project=project).count() == 10
    assert sorted(Project.objects.values_list("slug", flat=True)) == ["demo", "demo-flow"]
    assert Event.objects.exclude(action="key_issued").count() == events_after_first

    # Both printed keys authenticate as coder-4 of the demo project.
    keys = [demo_key(first), demo_key(second)]
    assert keys[0] != keys[1]
    for key in keys:
        found = agent_key_lookup(plain=key)
        assert found is not None
        assert (found.agent.agent_id, found.agent.project) == ("coder-4", project)
    assert Agent.objects.get(project=project, agent_id="coder-4").role == "coder"

    # As the login form does: with the request (django-axes checks lockouts on it).
    sign_in = RequestFactory().post("/login/")
    admin = authenticate(sign_in, username="admin", password="liza-admin")
    assert admin is not None and admin.is_staff and admin.is_superuser
    assert Membership.objects.get(project=project, user=admin).role == "admin"
    flow = Project.objects.get(slug="demo-flow")
    assert Membership.objects.get(project=flow, user=admin).role == "admin"
    # The history passes the validator at the wall clock, as a newcomer's board is read.
    run = manage("liza_validate", project="demo-flow")
    assert (run.code, run.out_lines) == (0, ["VALID"])
    judged = original_liza.validate(_export(flow, tmp_path / "flow"))
    assert judged.returncode == 0 and judged.stdout.strip().endswith("VALID"), judged.stdout


@pytest.mark.django_db
def test_the_demo_leases_are_live_today(manage, flow_demo_skipped):
    manage("liza_demo", slug="today")
    now = timezone.now()

    task7 = Task.objects.get(project__slug="today", key="task-7")
    assert task7.lease_expires > now
    # The whole board passes the validator at the wall clock, not only at its own time.
    run = manage("liza_validate", project="today", now=now.isoformat())
    assert (run.code, run.out_lines) == (0, ["VALID"])


def test_the_demo_reference_time_is_its_latest_heartbeat():
    from boards.interop.reading import read_liza_dir

    state, _ = read_liza_dir(DEMO_DIR)

    assert reference_time(state) == datetime(2025, 1, 17, 16, 52, tzinfo=UTC)


# Times that are meant to lie ahead: leases and deadlines.
AHEAD = ("lease", "deadline", "expires")


@pytest.mark.django_db
def test_nothing_in_the_demo_happened_after_now(manage, flow_demo_skipped):
    """The demo is shifted so that its latest heartbeat is now: everything else it records
    (tasks created and moved, events, anomalies, spec changes, the breaker's check) is in the
    past, so no card reads "in BLOCKED 0:00" and no entry is dated tomorrow."""
    from django.apps import apps
    from django.db.models import DateTimeField

    manage("liza_demo", slug="today")
    now = timezone.now()
    project = Project.objects.get(slug="today")
    future = []
    for model in [*apps.get_app_config("boards").get_models(), Agent]:
        if not any(f.name == "project" for f in model._meta.concrete_fields):
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, DateTimeField) and not any(w in field.name for w in AHEAD):
                rows = model.objects.filter(project=project, **{f"{field.name}__gt": now})
                future += [f"{model.__name__}.{field.name}: {r.pk}" for r in rows]
    assert future == []
    assert Event.objects.filter(project=project).count() > 10  # the check had rows to read
    # The BLOCKED card's age in its state: since it entered BLOCKED (its creation, here).
    blocked = card_for(Task.objects.get(project=project, key="task-6"), config_of(project), now)
    assert blocked.status == "BLOCKED"
    assert datetime.fromisoformat(blocked.entered) < now - timedelta(minutes=30)


@pytest.mark.django_db
def test_the_printed_demo_key_registers_and_claims_over_http(manage, flow_demo_skipped):
    """The README's promise: with the printed key an agent can start working at once."""
    from rest_framework.test import APIClient

    key = demo_key(manage("liza_demo"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    base = "/api/v1/projects/demo"

    registered = client.post(f"{base}/agents/register", {}, format="json")
    assert registered.status_code == 200, registered.json()
    assert registered.json()["agent_id"] == "coder-4"
    claimed = client.post(f"{base}/tasks/claim-next", {"base_commit": "abc1234"}, format="json")
    assert claimed.status_code == 200, claimed.json()
    # The demo's only claimable task: task-4a (UNCLAIMED, no dependencies); task-4b waits on it.
    assert claimed.json()["task"]["key"] == "task-4a"
    assert claimed.json()["task"]["assigned_to"] == "coder-4"


@pytest.mark.django_db
def test_liza_demo_team_writes_five_private_keys_for_a_new_project_with_an_open_goal(
    manage, tmp_path
):
    keys = tmp_path / "keys"
    first = manage("liza_demo", "--team", str(keys))
    second = manage("liza_demo", "--team", str(keys))  # a second run: a new, empty board

    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert 'team project "team"' in first.out and 'team project "team-2"' in second.out
    assert (keys / "project").read_text().strip() == "team-2"
    files = sorted(keys.glob("*.key"))
    assert [f.stem for f in files] == [
        "code-reviewer-1", "code-reviewer-2", "coder-1", "coder-2", "planner-1",
    ]  # fmt: skip
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o600
        key = agent_key_lookup(plain=path.read_text().strip())
        assert key is not None and key.agent.project.slug == "team-2"
        assert key.agent.agent_id == path.stem and key.agent.registered_at is None
    for slug in ("team", "team-2"):
        project = Project.objects.get(slug=slug)
        assert not Task.objects.filter(project=project).exists()
        goal = Goal.objects.get(project=project)
        assert goal.status == GoalStatus.IN_PROGRESS
        assert Membership.objects.filter(project=project, role=Membership.Role.ADMIN).exists()


# -- the flow project: two weeks of history for the insights page ------------------------------

FLOW_NOW = datetime(2026, 3, 20, 18, 30, tzinfo=UTC)


def _flow_figures(slug: str):
    project = Project.objects.get(slug=slug)
    return project, insights(project=project, period=insights_period(now=FLOW_NOW))


@pytest.mark.django_db
def test_the_flow_history_fills_every_insights_chart_the_same_way_twice():
    admin = get_user_model().objects.create_user(username="demo-admin")
    built = [flow_demo_build(slug=slug, now=FLOW_NOW, admin=admin) for slug in ("f1", "f2")]
    assert [(b.built, b.tasks) for b in built] == [(True, 32), (True, 32)]
    project, figures = _flow_figures("f1")

    # Every step was applied by the services (a refusal would have raised and rolled back).
    assert not Event.objects.filter(project=project, outcome=Event.Outcome.REJECTED).exists()
    assert Event.objects.filter(project=project).earliest("timestamp").timestamp >= (
        FLOW_NOW - timedelta(days=14)
    )
    # The cumulative flow has several states on most days; throughput on many days.
    busy_days = [day for day, counts in figures.cfd if sum(1 for n in counts.values() if n) >= 3]
    assert len(busy_days) >= 5, figures.cfd
    seen = {state for _, counts in figures.cfd for state, n in counts.items() if n}
    assert {"UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "MERGED", "BLOCKED"} <= seen
    merged_days = [day for day, n in figures.throughput if n]
    assert len(merged_days) >= 7, figures.throughput
    merged = Task.objects.filter(project=project, status="MERGED").count()
    assert sum(n for _, n in figures.throughput) == merged >= 20
    # Lead and cycle times spread out; some tasks needed more than one review round.
    for spread in (figures.lead_time, figures.cycle_time):
        assert spread.n == merged and spread.p50 < spread.p90 < spread.max
    assert figures.cycle_time.p50 < figures.lead_time.p50
    assert {1, 2} <= set(figures.rounds_to_approval)
    stays = {times.state: times.spread.n for times in figures.time_in_state}
    assert all(stays[s] for s in ("UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "BLOCKED"))
    # Per agent: every coder claimed and had verdicts; every reviewer gave some.
    agents = {a.agent_id: a for a in figures.agents}
    for coder in ("coder-1", "coder-2", "coder-3"):
        assert agents[coder].claims and agents[coder].verdicts_received, agents[coder]
    for reviewer in ("code-reviewer-1", "code-reviewer-2"):
        assert agents[reviewer].approvals_given and agents[reviewer].rejections_given
    assert sum(a.blocks for a in agents.values()) == 2
    assert sum(a.lease_expiries for a in agents.values()) == 1
    assert sum(sum(levels.values()) for _, levels in figures.alerts) >= 3
    # Work still under way at the end, and one task still blocked.
    left = set(Task.objects.filter(project=project).values_list("status", flat=True))
    assert {"BLOCKED", "DRAFT"} <= left and left & {"CLAIMED", "READY_FOR_REVIEW"}, left

    # Seeded: the second build at the same moment gives the same figures.
    _, again = _flow_figures("f2")
    assert again == figures
    # And the product's SQL agrees with the reference walk of the state history.
    period = insights_period(now=FLOW_NOW)
    tasks, python = flow_reference(project, period)
    assert tasks == 32
    assert _flow_sql(project, period) == python
