"""Which people may call a service, declared once on it (`authority.people`, `agents_only`):
`require_role` enforces the declaration its attempt names, a stricter `human=` only tightens it,
and a service that declares nothing cannot be refused by a guess (SPEC §3; issue 22 §3)."""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Membership
from boards.coordination.services import authority
from boards.coordination.services.audit import Attempt
from boards.coordination.services.authority import (
    ADMIN,
    MEMBER,
    PLAN,
    agents_only,
    people,
    require_role,
)
from boards.errors import Forbidden
from tests.factories import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def declarations(monkeypatch):
    """A copy of the table for this test's throwaway services."""
    monkeypatch.setattr(authority, "PEOPLE", dict(authority.PEOPLE))


def _allowed(world, service, person, **human) -> bool:
    attempt = Attempt(world.project, person, service.__name__, world.tick())
    try:
        require_role(attempt, agent_roles=(), **human)
    except Forbidden:
        return False
    return True


def _people(world) -> dict[str, object]:
    planner = member(world.project, Membership.Role.MEMBER)
    Membership.objects.filter(project=world.project, user=planner).update(can_plan=True)
    return {
        "viewer": member(world.project, Membership.Role.VIEWER),
        "member": member(world.project, Membership.Role.MEMBER),
        "planner": planner,
        "admin": world.admin,
    }


@pytest.mark.parametrize(
    ("declared", "admitted"),
    [
        (Membership.Role.VIEWER, {"viewer", "member", "planner", "admin"}),
        (MEMBER, {"member", "planner", "admin"}),
        (PLAN, {"planner", "admin"}),
        (ADMIN, {"admin"}),
        (None, set()),
    ],
)
def test_require_role_admits_exactly_the_declared_people(world, declarations, declared, admitted):
    def some_service() -> None: ...

    people(declared)(some_service)
    assert some_service.people == declared
    who = _people(world)
    assert {name for name, person in who.items() if _allowed(world, some_service, person)} == (
        admitted
    )


def test_a_stricter_role_for_what_the_input_asks_tightens_the_declaration(world, declarations):
    @people(MEMBER)
    def some_triage() -> None: ...

    who = _people(world)
    assert _allowed(world, some_triage, who["member"])
    assert not _allowed(world, some_triage, who["member"], human=ADMIN)
    assert _allowed(world, some_triage, who["admin"], human=ADMIN)


def test_an_agents_only_service_refuses_every_person(world, declarations):
    @agents_only
    def some_claim() -> None: ...

    assert some_claim.people is None
    assert not any(_allowed(world, some_claim, p) for p in _people(world).values())


def test_a_service_that_declares_nothing_is_not_refused_by_a_guess(world, declarations):
    attempt = Attempt(world.project, world.admin, "never_declared", world.tick())
    with pytest.raises(LookupError, match="never_declared"):
        require_role(attempt, agent_roles=())


def test_two_services_of_one_name_must_declare_the_same_people(declarations):
    def sprint_abort() -> None: ...

    assert authority.PEOPLE["sprint_abort"] == ADMIN  # sprints' and stops' sprint_abort
    people(ADMIN)(sprint_abort)
    with pytest.raises(ValueError, match="sprint_abort"):
        people(MEMBER)(sprint_abort)
