"""Planning from the board (issue 25): the planning page and its forms, per role, and what they
wrote. Each form is the planner's own declared operation, run as (and audited as) the person."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.models import Event, Goal, Membership, Sprint, Task
from tests.factories import ProjectFactory, UserFactory, member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

ANONYMOUS, VIEWER, MEMBER, ADMIN, OTHER_ADMIN = (
    "anonymous",
    "viewer",
    "member",
    "admin",
    "admin of another project",
)


@pytest.fixture
def world():
    return World()


def client_for(world, who: str) -> Client:
    client = Client()
    if who == ANONYMOUS:
        return client
    if who == OTHER_ADMIN:
        user = member(ProjectFactory(), Membership.Role.ADMIN)
    elif who == ADMIN:
        user = world.admin
    else:
        user = member(world.project, who)
    client.force_login(user)
    return client


def _url(world, rest: str = "") -> str:
    return f"/p/{world.project.slug}/plan/{rest}"


# (who, the goal form's status, whether the goal exists afterwards)
GOAL_MATRIX = [
    (ANONYMOUS, 302, False),  # to the sign-in page
    (VIEWER, 403, False),
    (MEMBER, 403, False),
    (ADMIN, 302, True),  # back to the planning page
    (OTHER_ADMIN, 404, False),
]


@pytest.mark.parametrize(("who", "status", "created"), GOAL_MATRIX)
def test_creating_a_goal_per_role(world, who, status, created):
    response = client_for(world, who).post(
        _url(world, "goal"), {"description": "Ship retries", "spec_ref": "specs/retry.md"}
    )
    assert response.status_code == status
    assert Goal.objects.filter(project=world.project).exists() == created
    if who == ANONYMOUS:
        assert "/login/" in response["Location"]
    if created:
        assert response["Location"] == _url(world)
        event = Event.objects.get(project=world.project, action="goal_created")
        # Audited as the person, not as a planner agent.
        assert (event.actor_kind, event.actor_id) == ("human", world.admin.get_username())


@pytest.mark.parametrize(
    ("who", "status", "forms"),
    [(ANONYMOUS, 302, False), (VIEWER, 200, False), (MEMBER, 200, False), (ADMIN, 200, True),
     (OTHER_ADMIN, 404, False)],
)  # fmt: skip
def test_the_planning_page_per_role(world, who, status, forms):
    response = client_for(world, who).get(_url(world))
    assert response.status_code == status
    if status == 200:
        html = response.content.decode()
        assert "<h1>Plan " in html
        assert ('data-action="goal-create"' in html) == forms


def test_an_admin_plans_a_goal_tasks_with_a_dependency_and_a_sprint(world):
    client = client_for(world, ADMIN)
    assert client.post(_url(world, "goal"), {"description": "G"}).status_code == 302
    for key, extra in [
        ("api", {"priority": "1"}),
        ("ui", {"depends_on": ["api"], "needs_human_approval": "true"}),
        ("docs", {"criticality": "complex"}),
    ]:
        response = client.post(
            _url(world, "tasks"),
            {"key": key, "description": f"Build {key}", "done_when": "tested",
             "spec_ref": f"specs/{key}.md", **extra},
        )  # fmt: skip
        assert response.status_code == 302, response.content.decode()[:2000]
    ui = Task.objects.get(project=world.project, key="ui")
    assert [t.key for t in ui.depends_on.all()] == ["api"]
    assert ui.needs_human_approval is True
    assert Task.objects.get(project=world.project, key="api").priority == 1
    assert Task.objects.get(project=world.project, key="docs").criticality == "complex"
    assert Task.objects.get(project=world.project, key="docs").needs_human_approval is False

    for key in ("api", "ui", "docs"):
        response = client.post(f"/p/{world.project.slug}/tasks/{key}/finalize", {"next": "plan"})
        assert response.status_code == 302
    assert set(Task.objects.filter(project=world.project).values_list("status", flat=True)) == {
        "UNCLAIMED"
    }
    response = client.post(_url(world, "sprint"), {"planned": ["api", "ui"]})
    assert response.status_code == 302
    sprint = Sprint.objects.get(project=world.project)
    assert sprint.status == "IN_PROGRESS"
    assert sorted(t.key for t in sprint.planned.all()) == ["api", "ui"]
    page = client.get(_url(world)).content.decode()
    assert sprint.sprint_id in page and "Start sprint" not in page


def test_a_refused_task_is_the_page_again_with_the_reason(world):
    client = client_for(world, ADMIN)
    client.post(_url(world, "goal"), {"description": "G"})
    response = client.post(
        _url(world, "tasks"),
        {"key": "ui", "description": "UI", "done_when": "ok", "spec_ref": "s.md",
         "depends_on": ["missing"]},
    )  # fmt: skip
    assert response.status_code in (400, 404, 409)
    assert "missing" in response.content.decode()
    assert not Task.objects.filter(project=world.project, key="ui").exists()


def test_a_member_cannot_finalize_or_start_a_sprint(world):
    world.draft("T-1")
    client = client_for(world, MEMBER)
    assert client.post(f"/p/{world.project.slug}/tasks/T-1/finalize").status_code == 403
    assert client.post(_url(world, "sprint"), {"planned": ["T-1"]}).status_code == 403
    assert world.task("T-1").status == "DRAFT"
    assert not Sprint.objects.filter(project=world.project).exists()


def test_a_user_of_no_project_gets_404():
    world = World()
    client = Client()
    client.force_login(UserFactory())
    assert client.get(f"/p/{world.project.slug}/plan/").status_code == 404
