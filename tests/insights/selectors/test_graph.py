"""The dependency graph's layout and critical path (boards.insights.selectors.graph), on hand-built
graphs whose answers are worked out in the comments, then on rows from the database."""

from __future__ import annotations

import time

import pytest

from boards import protocol as p
from boards.insights.selectors.graph import GraphTask, dependency_graph, layout
from tests.board.web.helpers import bulk_tasks
from tests.lifecycle import World

S = p.TaskStatus


def tasks(**statuses: str) -> list[GraphTask]:
    return [GraphTask(key=key.replace("_", "-"), status=status) for key, status in statuses.items()]


def by_key(graph):
    return {n.key: n for n in graph.nodes}


def test_layers_follow_the_longest_chain_of_dependencies():
    # a <- b <- d, a <- c <- d, and e alone: d waits on both b and c, which wait on a.
    graph = layout(
        tasks(a=S.MERGED, b=S.CLAIMED, c=S.UNCLAIMED, d=S.DRAFT, e=S.UNCLAIMED),
        [("b", "a"), ("c", "a"), ("d", "b"), ("d", "c")],
    )
    nodes = by_key(graph)
    assert {k: n.layer for k, n in nodes.items()} == {"a": 0, "e": 0, "b": 1, "c": 1, "d": 2}
    # Every edge points rightwards.
    assert all(e.source.x < e.target.x for e in graph.edges)
    # No two boxes share a place.
    assert len({(n.x, n.y) for n in graph.nodes}) == 5
    assert nodes["d"].depends_on == ["b", "c"]


def test_the_critical_path_is_the_longest_chain_of_unfinished_tasks():
    # Chains of remaining work: x1 -> x2 -> x3 -> x4 (4 tasks) beats y1 -> y2 -> y3 (3), and
    # m0 is merged: it is no remaining work, so the y chain does not count it.
    graph = layout(
        tasks(
            m0=S.MERGED,
            y1=S.CLAIMED,
            y2=S.UNCLAIMED,
            y3=S.DRAFT,
            x1=S.BLOCKED,
            x2=S.UNCLAIMED,
            x3=S.UNCLAIMED,
            x4=S.DRAFT,
        ),
        [("y1", "m0"), ("y2", "y1"), ("y3", "y2"), ("x2", "x1"), ("x3", "x2"), ("x4", "x3")],
    )
    assert graph.critical_path == ["x1", "x2", "x3", "x4"]
    nodes = by_key(graph)
    assert {k for k, n in nodes.items() if n.critical} == {"x1", "x2", "x3", "x4"}
    assert {(e.source.key, e.target.key) for e in graph.edges if e.critical} == {
        ("x1", "x2"),
        ("x2", "x3"),
        ("x3", "x4"),
    }


def test_a_merged_task_in_the_middle_cuts_the_chain():
    # a -> b(merged) -> c -> d: the remaining chain is c -> d (2), not a..d.
    graph = layout(
        tasks(a=S.UNCLAIMED, b=S.MERGED, c=S.UNCLAIMED, d=S.DRAFT),
        [("b", "a"), ("c", "b"), ("d", "c")],
    )
    assert graph.critical_path == ["c", "d"]


def test_ties_go_to_the_smaller_key_and_nothing_left_means_no_path():
    graph = layout(tasks(b=S.UNCLAIMED, a=S.UNCLAIMED), [])
    assert graph.critical_path == ["a"]
    done = layout(tasks(a=S.MERGED, b=S.ABANDONED, c=S.SUPERSEDED), [("b", "a")])
    assert done.critical_path == []
    assert not any(n.critical for n in done.nodes)


def test_a_cycle_is_drawn_after_the_rest_and_never_crashes():
    # a -> b -> c -> b: b and c wait on each other; a is fine, d depends on c.
    graph = layout(
        tasks(a=S.UNCLAIMED, b=S.DRAFT, c=S.DRAFT, d=S.DRAFT),
        [("b", "a"), ("c", "b"), ("b", "c"), ("d", "c")],
    )
    assert graph.cycle == ["b", "c", "d"]  # d can never start either
    nodes = by_key(graph)
    assert nodes["a"].layer == 0 and all(nodes[k].layer >= 1 for k in "bcd")
    assert graph.critical_path == ["a"]
    assert {(e.source.key, e.target.key) for e in graph.edges if e.in_cycle} == {
        ("b", "c"),
        ("c", "b"),
        ("c", "d"),
    }
    assert all(e.path.startswith("M") for e in graph.edges)


def test_unknown_keys_duplicates_and_self_loops_are_ignored():
    graph = layout(
        tasks(a=S.UNCLAIMED, b=S.DRAFT), [("b", "a"), ("b", "a"), ("a", "a"), ("b", "z")]
    )
    assert [(e.source.key, e.target.key) for e in graph.edges] == [("a", "b")]
    assert graph.cycle == []


def test_tasks_without_dependencies_are_a_grid_not_a_column():
    """Issue 25: 30 tasks and no edge were one column 1,938 px high; now rows of six."""
    graph = layout([GraphTask(key=f"t-{i:02d}", status=S.UNCLAIMED) for i in range(30)], [])
    assert {n.layer for n in graph.nodes} == set(range(6))
    assert {n.row for n in graph.nodes} == set(range(5))
    assert len({(n.x, n.y) for n in graph.nodes}) == 30
    assert graph.height < 400 and graph.width < 1400, (graph.width, graph.height)


def test_with_a_few_edges_the_lone_tasks_go_in_rows_under_the_chain():
    # a <- b, and ten tasks alone: the chain on top, the ten in rows of six under it.
    alone = {f"z{i}": S.UNCLAIMED for i in range(10)}
    graph = layout(tasks(a=S.UNCLAIMED, b=S.DRAFT, **alone), [("b", "a")])
    nodes = by_key(graph)
    assert (nodes["a"].layer, nodes["a"].row, nodes["b"].layer, nodes["b"].row) == (0, 0, 1, 0)
    lone = [nodes[k] for k in alone]
    assert {n.row for n in lone} == {1, 2} and max(n.layer for n in lone) == 5
    assert len({(n.x, n.y) for n in graph.nodes}) == 12
    assert all(e.source.x < e.target.x for e in graph.edges)


def test_an_empty_graph():
    graph = layout([], [])
    assert graph.nodes == [] and graph.edges == [] and graph.critical_path == []
    assert graph.width > 0 and graph.height > 0


@pytest.mark.django_db
def test_from_the_database_a_goal_with_an_outside_dependency():
    world = World()
    from boards.coordination.services.goals import goal_create

    goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    world.merged("t-1")
    world.unclaimed("t-2", depends_on=["t-1"])
    world.unclaimed("t-3", depends_on=["t-2"])
    goal = world.project.goals.get()
    graph = dependency_graph(project=world.project, goal=goal)
    nodes = by_key(graph)
    assert set(nodes) == {"t-1", "t-2", "t-3"}
    assert nodes["t-1"].status == S.MERGED
    assert graph.critical_path == ["t-2", "t-3"]
    # Another project's tasks never appear, whatever their keys.
    other = World()
    other.unclaimed("t-9")
    assert "t-9" not in by_key(dependency_graph(project=world.project))


@pytest.mark.django_db
def test_six_hundred_chained_tasks_lay_out_quickly(world):
    bulk_tasks(world, 600, [S.UNCLAIMED, S.DRAFT, S.CLAIMED, S.MERGED])
    started = time.perf_counter()
    graph = dependency_graph(project=world.project)
    elapsed = time.perf_counter() - started
    assert len([n for n in graph.nodes if n.key.startswith("bulk-")]) == 600
    assert len(graph.edges) >= 599
    # Every fourth task is merged: the longest unfinished chain is three tasks.
    assert len(graph.critical_path) == 3
    assert elapsed < 2.0, elapsed
