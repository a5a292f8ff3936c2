"""Agents migration 0010's backfill of `Agent.left_at`: an agent whose last registration event
or departure in the log is a departure is marked left at that event's time, as `agent_leave`
would have; every other agent is left alone (never left, or registered again since, or never
registered at all). Migration 0011's of `Agent.generation`: each agent's registrations in its
project's log, 0 for one never registered."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from agents.models import Agent
from agents.services import agent_create, agent_leave, agent_register
from boards.coordination.models.records import Event
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

BACKFILL = importlib.import_module("agents.migrations.0010_agent_left_at").BACKFILL
GENERATIONS = importlib.import_module("agents.migrations.0011_agent_generation").BACKFILL


def test_the_backfill_marks_the_agents_whose_last_word_was_leaving():
    world = World()
    other = World()  # the same ids in another project: its log is its own
    agent_leave(project=world.project, agent=world.agent("coder-1"), now=world.tick())
    agent_leave(project=world.project, agent=world.agent("coder-2"), now=world.tick())
    agent_register(project=world.project, agent_id="coder-2", role="coder", now=world.tick())
    created = agent_create(project=world.project, actor=world.admin, role="coder", now=world.tick())
    agent_leave(project=other.project, agent=other.agent("coder-2"), now=other.tick())
    left = Event.objects.get(project=world.project, actor_id="coder-1", action="deregistered")
    Agent.objects.update(left_at=None)  # as the column is added: empty

    with connection.cursor() as cursor:
        cursor.execute(BACKFILL)

    marked = set(Agent.objects.exclude(left_at=None).values_list("project_id", "agent_id"))
    assert marked == {(world.project.pk, "coder-1"), (other.project.pk, "coder-2")}
    assert world.agent("coder-1").left_at == left.timestamp
    assert Agent.objects.get(pk=created.pk).left_at is None


def test_the_generation_backfill_counts_each_agents_registrations():
    """What `agent_register` would have counted: coder-2 registered, left and registered again
    (2); the same id of another project counts its own (1); an agent an admin created that
    never registered stays 0."""
    world = World()
    other = World()
    agent_leave(project=world.project, agent=world.agent("coder-2"), now=world.tick())
    agent_register(project=world.project, agent_id="coder-2", role="coder", now=world.tick())
    created = agent_create(project=world.project, actor=world.admin, role="coder", now=world.tick())
    Agent.objects.update(generation=0)  # as the column is added: its default

    with connection.cursor() as cursor:
        cursor.execute(GENERATIONS)

    assert (world.agent("coder-1").generation, world.agent("coder-2").generation) == (1, 2)
    assert other.agent("coder-2").generation == 1
    assert Agent.objects.get(pk=created.pk).generation == 0
