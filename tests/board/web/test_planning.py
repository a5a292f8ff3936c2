"""Planning from the board (issue 25): the planning page and its forms, per role, and what they
wrote. Each form is the planner's own declared operation, run as (and audited as) the person."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.board.web.pages import SETTINGS_FIELDS, _setting_text
from boards.coordination.models.projects import Goal, Membership, Project, Sprint
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services import goals, projects, sprints
from boards.errors import ProtocolValidationError
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


# -- editing (issue 25 item 1): each form a declared operation, the same matrix -------------

EDIT_MATRIX = [
    (ANONYMOUS, 302, False),
    (VIEWER, 403, False),
    (MEMBER, 403, False),
    (ADMIN, 302, True),
    (OTHER_ADMIN, 404, False),
]


def _task_url(world, key: str, rest: str) -> str:
    return f"/p/{world.project.slug}/tasks/{key}/{rest}"


def _full_edit(**fields) -> dict:
    """What the edit form posts: every field, the picker and the checkbox marked as shown."""
    return {"next": "plan", "depends_on_shown": "1", "needs_human_approval_shown": "1",
            "description": "Clearer", "done_when": "green", "spec_ref": "s.md",
            "criticality": "standard", "priority": "3", **fields}  # fmt: skip


@pytest.mark.parametrize(("who", "status", "changed"), EDIT_MATRIX)
def test_editing_a_task_per_role(world, who, status, changed):
    world.draft("T-1")
    world.draft("T-0")
    response = client_for(world, who).post(
        _task_url(world, "T-1", "edit"),
        _full_edit(depends_on=["T-0"], needs_human_approval="true", priority="2"),
    )
    assert response.status_code == status
    task = world.task("T-1")
    assert (task.description == "Clearer") == changed
    if changed:
        assert response["Location"] == _url(world)
        assert task.priority == 2 and task.needs_human_approval is True
        assert [d.key for d in task.depends_on.all()] == ["T-0"]
        event = Event.objects.get(project=world.project, action="edited")
        assert (event.actor_kind, event.actor_id) == ("human", world.admin.get_username())


def test_the_edit_form_clears_dependencies_and_the_gate(world):
    world.draft("T-0")
    world.draft("T-1", depends_on=["T-0"], needs_human_approval=True)
    response = client_for(world, ADMIN).post(_task_url(world, "T-1", "edit"), _full_edit())
    assert response.status_code == 302
    task = world.task("T-1")
    assert list(task.depends_on.all()) == [] and task.needs_human_approval is False


def test_a_priority_button_changes_only_the_priority(world):
    world.draft("T-0")
    world.draft("T-1", depends_on=["T-0"], needs_human_approval=True)
    client = client_for(world, ADMIN)
    page = client.get(_url(world)).content.decode()
    assert 'aria-label="Raise T-1 to P2"' in page and 'aria-label="Lower T-1 to P4"' in page
    response = client.post(_task_url(world, "T-1", "edit"), {"next": "plan", "priority": "2"})
    assert response.status_code == 302
    task = world.task("T-1")
    assert task.priority == 2
    assert [d.key for d in task.depends_on.all()] == ["T-0"] and task.needs_human_approval


@pytest.mark.parametrize(
    ("post", "status", "says"),
    [
        ({"priority": "0"}, 400, "priority"),
        ({"priority": "high"}, 400, "priority"),
        ({"description": "  "}, 400, "description"),
        ({"criticality": "urgent"}, 400, "criticality"),
        ({"depends_on": ["T-1"]}, 400, "itself"),
        ({"depends_on": ["nope"]}, 400, "nope"),
        ({"description": "x\x00y"}, 400, "description"),
    ],
)
def test_bad_input_is_the_page_again_with_the_reason(world, post, status, says):
    world.draft("T-1")
    response = client_for(world, ADMIN).post(_task_url(world, "T-1", "edit"), _full_edit(**post))
    assert response.status_code == status
    assert says in response.content.decode()
    task = world.task("T-1")
    # Nothing half-written: the valid fields sent with the bad one did not change either.
    assert task.description == "Implement T-1" and task.priority == 3


def test_a_claimed_task_refuses_a_new_contract_with_a_clear_409(world):
    world.claimed("T-1")
    response = client_for(world, ADMIN).post(
        _task_url(world, "T-1", "edit"), {"next": "plan", "description": "Other work"}
    )
    assert response.status_code == 409
    assert "rescope" in response.content.decode()
    assert world.task("T-1").description == "Implement T-1"


def test_editing_a_missing_task_is_404(world):
    assert (
        client_for(world, ADMIN)
        .post(_task_url(world, "nope", "edit"), {"priority": "1"})
        .status_code
        == 404
    )


@pytest.mark.parametrize(("who", "status", "changed"), EDIT_MATRIX)
def test_editing_the_goal_per_role(world, who, status, changed):
    goal = goals_create(world)
    response = client_for(world, who).post(
        f"/p/{world.project.slug}/goals/{goal.goal_id}/edit",
        {"next": "plan", "description": "Ship it safely", "spec_ref": "specs/g.md"},
    )
    assert response.status_code == status
    goal.refresh_from_db()
    assert (goal.description == "Ship it safely") == changed
    if changed:
        assert goal.spec_ref == "specs/g.md"


def test_a_blank_goal_is_refused_by_name(world):
    goal = goals_create(world)
    response = client_for(world, ADMIN).post(
        f"/p/{world.project.slug}/goals/{goal.goal_id}/edit", {"next": "plan", "description": ""}
    )
    assert response.status_code == 400 and "description" in response.content.decode()
    goal.refresh_from_db()
    assert goal.description == "G"


@pytest.mark.parametrize(("who", "status", "changed"), EDIT_MATRIX)
def test_closing_a_sprint_per_role(world, who, status, changed):
    goals_create(world)
    sprint = sprints.sprint_create(project=world.project, actor=world.admin, now=world.tick())
    response = client_for(world, who).post(
        f"/p/{world.project.slug}/sprints/{sprint.sprint_id}/complete", {"next": "plan"}
    )
    assert response.status_code == status
    sprint.refresh_from_db()
    assert (sprint.status == "COMPLETED") == changed


def test_a_sprint_with_open_work_does_not_close(world):
    goals_create(world)
    world.unclaimed("T-1")
    sprint = sprints.sprint_create(
        project=world.project, actor=world.admin, now=world.tick(), planned=["T-1"]
    )
    client = client_for(world, ADMIN)
    assert "Close the sprint" in client.get(_url(world)).content.decode()
    response = client.post(
        f"/p/{world.project.slug}/sprints/{sprint.sprint_id}/complete", {"next": "plan"}
    )
    assert response.status_code == 409 and "T-1" in response.content.decode()
    sprint.refresh_from_db()
    assert sprint.status == "IN_PROGRESS"


def goals_create(world) -> Goal:
    return goals.goal_create(
        project=world.project, actor=world.admin, description="G", now=world.tick()
    )


# -- the planner right (issue 25): members may plan when an admin gives it -----------------


def _planner_member(world, *, can_plan: bool = True):
    user = member(world.project, Membership.Role.MEMBER)
    projects.membership_set(
        project=world.project,
        user=user,
        role=Membership.Role.MEMBER,
        can_plan=can_plan,
        actor=world.admin,
        now=world.tick(),
    )
    client = Client()
    client.force_login(user)
    return user, client


def test_a_member_with_the_planner_right_plans_as_themselves(world):
    user, client = _planner_member(world)
    assert 'data-action="goal-create"' in client.get(_url(world)).content.decode()
    assert client.post(_url(world, "goal"), {"description": "G"}).status_code == 302
    assert (
        client.post(
            _url(world, "tasks"),
            {"key": "T-1", "description": "D", "done_when": "ok", "spec_ref": "s.md"},
        ).status_code
        == 302
    )
    assert client.post(_task_url(world, "T-1", "edit"), {"priority": "1"}).status_code == 302
    assert client.post(_task_url(world, "T-1", "finalize"), {"next": "plan"}).status_code == 302
    assert client.post(_url(world, "sprint"), {"planned": ["T-1"]}).status_code == 302
    task = world.task("T-1")
    assert (task.status, task.priority) == ("UNCLAIMED", 1)
    actors = set(
        Event.objects.filter(project=world.project, actor_kind="human")
        .exclude(action="membership_set")
        .values_list("actor_id", flat=True)
    )
    assert actors == {user.get_username()}
    # Planning is not oversight: the right gives no admin action.
    assert client.post(f"/p/{world.project.slug}/pause", {"reason": "mine"}).status_code == 403


def test_the_planner_right_taken_back_refuses_again(world):
    user, client = _planner_member(world)
    projects.membership_set(
        project=world.project, user=user, role=Membership.Role.MEMBER, can_plan=False,
        actor=world.admin, now=world.tick(),
    )  # fmt: skip
    assert client.post(_url(world, "goal"), {"description": "G"}).status_code == 403
    assert not Goal.objects.filter(project=world.project).exists()


def test_a_viewer_cannot_hold_the_planner_right(world):
    user = member(world.project, Membership.Role.VIEWER)
    with pytest.raises(ProtocolValidationError, match="members"):
        projects.membership_set(
            project=world.project, user=user, role=Membership.Role.VIEWER, can_plan=True,
            actor=world.admin, now=world.tick(),
        )  # fmt: skip
    assert not Membership.objects.get(project=world.project, user=user).can_plan


# -- links to the code host (issue 25 item 2): repo_url on the settings page, links in the drawer


def _settings_form(project, **changes) -> dict:
    """The settings form as the page fills it, with `changes`."""
    config = config_of(Project.objects.get(pk=project.pk))
    form = {name: _setting_text(config, name) for name in SETTINGS_FIELDS}
    form.pop("webhook_secret")
    return {**form, **changes}


def test_repo_url_is_validated_at_save_and_links_the_drawer(world):
    client = client_for(world, ADMIN)
    settings = f"/p/{world.project.slug}/settings"
    for bad in ("javascript:alert(1)", "https://x.io/{sha}"):
        response = client.post(settings, _settings_form(world.project, repo_url=bad))
        assert response.status_code == 400, bad
        assert 'data-field="repo_url"' in response.content.decode()
    assert Project.objects.get(pk=world.project.pk).config.repo_url == ""

    world.merged("T-1")
    drawer = f"/p/{world.project.slug}/tasks/T-1/"
    html = client.get(drawer).content.decode()
    assert "code-link" not in html and "<code>merge001</code>" in html

    saved = client.post(
        settings, _settings_form(world.project, repo_url="https://github.com/acme/shop")
    )
    assert saved.status_code == 302
    event = Event.objects.get(project=world.project, action="config_updated")
    assert event.data["changes"]["repo_url"]["new"] == "https://github.com/acme/shop"
    html = client.get(drawer).content.decode()
    assert 'href="https://github.com/acme/shop/commit/merge001"' in html
    assert 'href="https://github.com/acme/shop/commit/c0ffee01"' in html
    assert 'href="https://github.com/acme/shop/tree/task/T-1"' in html
