"""The members page (issue 25): project admins invite accounts by username or e-mail with a
role (and a member's planner right), through the declared `membership_invite` operation."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.coordination.models.projects import Membership, Project
from boards.coordination.models.records import Event
from tests.factories import ProjectFactory, UserFactory, member

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory()


def client_for(project, who: str) -> Client:
    client = Client()
    if who == "anonymous":
        return client
    if who == "other admin":
        client.force_login(member(ProjectFactory(), "admin"))
    else:
        client.force_login(member(project, who))
    return client


MATRIX = [
    ("anonymous", 302, False),
    ("viewer", 403, False),
    ("member", 403, False),
    ("admin", 302, True),
    ("other admin", 404, False),
]


@pytest.mark.parametrize(("who", "status", "invited"), MATRIX)
def test_inviting_per_role(project, who, status, invited):
    guest = UserFactory(email="Guest@Example.org")
    response = client_for(project, who).post(
        f"/p/{project.slug}/members/invite",
        {"next": "members", "who": "guest@example.org", "role": "member", "can_plan": "true"},
    )
    assert response.status_code == status
    row = Membership.objects.filter(project=project, user=guest).first()
    assert (row is not None) == invited
    if invited:
        assert response["Location"] == f"/p/{project.slug}/members"
        assert (row.role, row.can_plan) == ("member", True)
        event = Event.objects.get(
            project=project, action="membership_set", data__user=guest.get_username()
        )
        assert event.actor_kind == "human" and event.data["can_plan"] is True


@pytest.mark.parametrize(
    ("who", "status"),
    [("anonymous", 302), ("viewer", 403), ("member", 403), ("admin", 200), ("other admin", 404)],
)
def test_the_members_page_per_role(project, who, status):
    response = client_for(project, who).get(f"/p/{project.slug}/members")
    assert response.status_code == status
    if status == 200:
        assert 'data-action="member-invite"' in response.content.decode()


def test_an_admin_changes_a_role_by_username(project):
    client = client_for(project, "admin")
    guest = member(project, "member")
    response = client.post(
        f"/p/{project.slug}/members/invite",
        {"next": "members", "who": guest.get_username(), "role": "viewer"},
    )
    assert response.status_code == 302
    assert Membership.objects.get(project=project, user=guest).role == "viewer"
    page = client.get(f"/p/{project.slug}/members").content.decode()
    assert guest.get_username() in page


@pytest.mark.parametrize(
    ("post", "says"),
    [
        ({"who": "nobody", "role": "member"}, "no single active account"),
        ({"who": "", "role": "member"}, "who"),
        ({"who": "GUEST", "role": "owner"}, "role"),
        ({"who": "GUEST", "role": "viewer", "can_plan": "true"}, "planner right is for members"),
    ],
)
def test_bad_invitations_are_the_page_again_with_the_reason(project, post, says):
    guest = UserFactory()
    post = {**post, "who": post["who"].replace("GUEST", guest.get_username())}
    response = client_for(project, "admin").post(
        f"/p/{project.slug}/members/invite", {"next": "members", **post}
    )
    assert response.status_code == 400
    assert says in response.content.decode()
    assert not Membership.objects.filter(project=project, user=guest).exists()


def test_an_e_mail_shared_by_two_accounts_is_refused(project):
    UserFactory(email="twin@example.org")
    UserFactory(email="TWIN@example.org")
    response = client_for(project, "admin").post(
        f"/p/{project.slug}/members/invite",
        {"next": "members", "who": "twin@example.org", "role": "viewer"},
    )
    assert response.status_code == 400
    assert Membership.objects.filter(project=project).count() == 1  # the admin only


# -- a new project from the board (issue 25): site staff only --------------------------------


@pytest.mark.parametrize(
    ("who", "status"),
    [("anonymous", 302), ("admin of a project", 403), ("staff", 302)],
)
def test_creating_a_project_per_role(project, who, status):
    client = Client()
    if who == "staff":
        user = UserFactory(is_staff=True)
        client.force_login(user)
    elif who != "anonymous":
        client.force_login(member(project, "admin"))
    response = client.post("/projects/new", {"slug": "fresh", "name": "Fresh start"})
    assert response.status_code == status
    created = Project.objects.filter(slug="fresh").first()
    assert (created is not None) == (who == "staff")
    if created:
        assert response["Location"] == "/p/fresh/plan/"
        assert created.name == "Fresh start"
        event = Event.objects.get(project=created, action="project_created")
        assert (event.actor_kind, event.actor_id) == ("human", user.get_username())
        assert client.get("/p/fresh/plan/").status_code == 200
        assert "New project" in client.get("/").content.decode()


@pytest.mark.parametrize(
    ("post", "says"),
    [
        ({"slug": "", "name": "x"}, "slug"),
        ({"slug": "has space", "name": "x"}, "slug"),
        ({"slug": "taken", "name": "x"}, "already exists"),
        ({"slug": "ok", "name": "n" * 201}, "name"),
    ],
)
def test_a_bad_project_is_the_form_again_with_the_reason(post, says):
    ProjectFactory(slug="taken")
    client = Client()
    client.force_login(UserFactory(is_staff=True))
    before = Project.objects.count()
    response = client.post("/projects/new", post)
    assert response.status_code == 400
    assert says in response.content.decode()
    assert Project.objects.count() == before
