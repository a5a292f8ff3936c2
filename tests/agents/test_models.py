"""Seed 000 "Agent State Machine" on the model: every (from, to) pair for every role.

An edge of protocol.AGENT_EDGES succeeds for the role it names (or every role) and raises
TransitionNotAllowed for the others; every other pair raises TransitionNotAllowed for every
transition method that leads into the target, and the row stays as it was. Role-specific
states (WORKING/WAITING coder only, REVIEWING code reviewer only) follow.
"""

from __future__ import annotations

from collections import deque

import pytest
from django_fsm import TransitionNotAllowed

from agents.models import Agent
from boards import protocol as p
from tests.factories import ProjectFactory, register

pytestmark = pytest.mark.django_db

AGENT_IDS = {"planner": "planner-1", "coder": "coder-1", "code_reviewer": "code-reviewer-1"}

# Seed 000's table plus the one edge beyond it: re-registration restarts the id at STARTING
# from any state ("HANDOFF → agent terminates, supervisor restarts fresh").
MODEL_EDGES: dict[tuple[str, str], tuple[str, str | None]] = {
    **p.AGENT_EDGES,
    **{(source, "STARTING"): ("restart", None) for source in p.AGENT_RESTART_SOURCES},
}


def _allowed(role: str | None, actual: str) -> bool:
    return role is None or role == actual


def _paths(role: str) -> dict[str, list[str]]:
    """Shortest method path from STARTING to every state `role` can reach in seed 000's table."""
    paths: dict[str, list[str]] = {"STARTING": []}
    queue = deque(["STARTING"])
    while queue:
        state = queue.popleft()
        for (frm, to), (method, only) in MODEL_EDGES.items():
            if frm == state and to not in paths and _allowed(only, role):
                paths[to] = [*paths[state], method]
                queue.append(to)
    return paths


PATHS = {role: _paths(role) for role in p.AGENT_ROLES}


def _transitions_into(target: str) -> list[str]:
    field = Agent._meta.get_field("status")
    return sorted({t.name for t in field.get_all_transitions(Agent) if t.target == target})


def _snapshot(agent: Agent) -> dict:
    fresh = Agent.objects.get(pk=agent.pk)
    return {f.attname: getattr(fresh, f.attname) for f in Agent._meta.concrete_fields}


def _agent_in(role: str, status: str) -> Agent:
    """A registered agent of `role`, driven to `status` by its transition methods and saved."""
    agent = register(ProjectFactory(), AGENT_IDS[role])
    for method in PATHS[role][status]:
        getattr(agent, method)()
        agent.save()
    agent = Agent.objects.get(pk=agent.pk)
    assert agent.status == status
    return agent


def test_role_specific_states():
    """Seed 000: WORKING and WAITING are coder only, REVIEWING code reviewer only."""
    assert set(PATHS["planner"]) == {"STARTING", "IDLE"}
    assert set(PATHS["coder"]) == {"STARTING", "IDLE", "WORKING", "WAITING", "HANDOFF"}
    assert set(PATHS["code_reviewer"]) == {"STARTING", "IDLE", "REVIEWING", "HANDOFF"}


def test_model_has_exactly_the_table():
    field = Agent._meta.get_field("status")
    model = {(t.source, t.target): t.name for t in field.get_all_transitions(Agent)}
    assert model == {pair: method for pair, (method, _) in MODEL_EDGES.items()}


def _explore(role: str) -> set[str]:
    """States an unsaved agent of `role` really reaches by calling every method (model truth)."""
    field = Agent._meta.get_field("status")
    methods = sorted({t.name for t in field.get_all_transitions(Agent)} - {"restart"})
    seen = {"STARTING"}
    queue = deque([["STARTING", []]])
    while queue:
        _, path = queue.popleft()
        for method in methods:
            agent = Agent(role=role, agent_id=AGENT_IDS[role])
            for step in [*path, method]:
                try:
                    getattr(agent, step)()
                except TransitionNotAllowed:
                    break
            else:
                if agent.status not in seen:
                    seen.add(agent.status)
                    queue.append([agent.status, [*path, method]])
    return seen


@pytest.mark.parametrize("role", p.AGENT_ROLES)
def test_model_enforces_role_specific_states(role):
    assert _explore(role) == set(PATHS[role])


EDGE_CASES = [
    (frm, to, method, only, role)
    for (frm, to), (method, only) in MODEL_EDGES.items()
    for role in p.AGENT_ROLES
    if frm in PATHS[role]
]


@pytest.mark.parametrize(
    ("frm", "to", "method", "only", "role"),
    EDGE_CASES,
    ids=[f"{frm}->{to}-{role}" for frm, to, _, _, role in EDGE_CASES],
)
def test_edge_succeeds_only_for_its_role(frm, to, method, only, role):
    agent = _agent_in(role, frm)
    before = _snapshot(agent)
    if _allowed(only, role):
        getattr(agent, method)()
        agent.save()
        after = _snapshot(agent)
        assert after["status"] == to
        assert {k: v for k, v in after.items() if k != "status"} == {
            k: v for k, v in before.items() if k != "status"
        }
    else:
        with pytest.raises(TransitionNotAllowed):
            getattr(agent, method)()
        assert agent.status == frm
        assert _snapshot(agent) == before


NON_EDGES = [
    (frm, to, role)
    for frm in p.AGENT_STATES
    for to in p.AGENT_STATES
    if (frm, to) not in MODEL_EDGES
    for role in p.AGENT_ROLES
    if frm in PATHS[role]
]


def test_every_pair_is_covered():
    pairs = {(frm, to) for frm, to, _, _, _ in EDGE_CASES} | {(f, t) for f, t, _ in NON_EDGES}
    assert pairs == {(f, t) for f in p.AGENT_STATES for t in p.AGENT_STATES}


@pytest.mark.parametrize(
    ("frm", "to", "role"), NON_EDGES, ids=[f"{f}->{t}-{r}" for f, t, r in NON_EDGES]
)
def test_non_edge_fails_for_every_method(frm, to, role):
    agent = _agent_in(role, frm)
    before = _snapshot(agent)
    methods = _transitions_into(to)
    assert methods, f"no transition leads into {to}"
    for method in methods:
        with pytest.raises(TransitionNotAllowed):
            getattr(agent, method)()
        assert agent.status == frm
    agent.save()  # even saving the instance afterwards changes nothing
    assert _snapshot(agent) == before
