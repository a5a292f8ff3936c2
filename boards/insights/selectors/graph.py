"""The dependency graph of a goal or a sprint (issue #13): tasks as nodes, `depends_on` as
edges, a layered layout and the critical path, all computed here so the page is plain SVG.

Layout: a node's layer is the length of the longest chain of dependencies below it (a task
with none is in layer 0), so every edge points rightwards; within a layer nodes are ordered by
the mean row of their dependencies (one barycentre pass, enough to keep chains straight), then
by priority and key. O(nodes + edges): a goal of thousands of tasks lays out in milliseconds.

Critical path: the longest chain of *remaining* work — non-terminal tasks linked by
`depends_on` — counted in tasks (docs/decisions.md "Dependency graph"). A terminal dependency
(MERGED, or SUPERSEDED/ABANDONED) is no remaining work, so a chain stops at it.

Cycles cannot be saved (boards.interop.validation refuses them), but rows written by an import or by
hand must never crash the page: nodes that Kahn's algorithm cannot order are placed after the
others, their edges are marked, and the critical path ignores them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from boards import protocol as p
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.tasks import Task

# Geometry of the SVG, in user units (px at 100 %).
NODE_W, NODE_H = 168, 46
GAP_X, GAP_Y = 56, 14
MARGIN = 16
# Tasks with no edge at all are laid out as a grid under the connected ones, at least this many
# per row (issue 25: a project without dependencies was one 1,938 px column of boxes).
GRID_COLUMNS = 6


@dataclass(frozen=True)
class GraphTask:
    """What the layout needs of a task (built from rows, or by hand in tests)."""

    key: str
    status: str
    description: str = ""
    priority: int = 3
    assigned_to: str = ""
    outside: bool = False  # a dependency from outside the chosen goal or sprint


@dataclass
class Node:
    task: GraphTask
    layer: int = 0
    row: int = 0
    critical: bool = False
    in_cycle: bool = False
    depends_on: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.task.key

    @property
    def status(self) -> str:
        return self.task.status

    @property
    def terminal(self) -> bool:
        return self.task.status in p.TERMINAL_TASK_STATES

    @property
    def x(self) -> int:
        return MARGIN + self.layer * (NODE_W + GAP_X)

    @property
    def y(self) -> int:
        return MARGIN + self.row * (NODE_H + GAP_Y)

    @property
    def label(self) -> str:
        """The first line of the description, short enough for the box."""
        line = self.task.description.strip().splitlines()[0] if self.task.description else ""
        return line if len(line) <= 24 else line[:23] + "…"


@dataclass(frozen=True)
class Edge:
    """`target` depends on `source`: drawn from the dependency to the dependant."""

    source: Node
    target: Node
    critical: bool
    in_cycle: bool

    @property
    def path(self) -> str:
        """A cubic curve from the source's right side to the target's left side."""
        x1, y1 = self.source.x + NODE_W, self.source.y + NODE_H // 2
        x2, y2 = self.target.x, self.target.y + NODE_H // 2
        if x2 <= x1:  # a cycle's back edge: loop below the boxes
            low = max(self.source.y, self.target.y) + NODE_H + GAP_Y
            return f"M{x1},{y1} C{x1 + 40},{low} {x2 - 40},{low} {x2},{y2}"
        mid = (x1 + x2) // 2
        return f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"


@dataclass(frozen=True)
class Graph:
    nodes: list[Node]
    edges: list[Edge]
    critical_path: list[str]  # keys, first dependency first
    cycle: list[str]  # keys of tasks caught in a dependency cycle (should be empty)
    width: int
    height: int

    @property
    def by_status(self) -> list[tuple[str, int]]:
        counts: dict[str, int] = defaultdict(int)
        for node in self.nodes:
            counts[node.status] += 1
        return [(s, counts[s]) for s in p.TASK_STATES if counts[s]]


def layout(tasks: Iterable[GraphTask], depends: Iterable[tuple[str, str]]) -> Graph:
    """Lay out `tasks`; `depends` holds (task, dependency) key pairs. Pairs naming a task not
    in `tasks` are ignored, as are duplicates and self-loops (drawn as nothing)."""
    nodes = {t.key: Node(task=t) for t in tasks}
    preds: dict[str, list[str]] = defaultdict(list)  # dependant -> its dependencies
    succs: dict[str, list[str]] = defaultdict(list)  # dependency -> its dependants
    pairs = sorted({(a, b) for a, b in depends if a in nodes and b in nodes and a != b})
    for task, dependency in pairs:
        preds[task].append(dependency)
        succs[dependency].append(task)
        nodes[task].depends_on.append(dependency)

    # Kahn's algorithm: the topological order, and each node's layer on the way.
    waiting = {key: len(preds[key]) for key in nodes}
    queue = deque(sorted(key for key, n in waiting.items() if n == 0))
    order: list[str] = []
    while queue:
        key = queue.popleft()
        order.append(key)
        for nxt in succs[key]:
            nodes[nxt].layer = max(nodes[nxt].layer, nodes[key].layer + 1)
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                queue.append(nxt)
    ordered = set(order)
    cycle = sorted(key for key in nodes if key not in ordered)
    if cycle:
        # Never crash on a cycle: its nodes go one layer past the rest, in key order.
        after = 1 + max((nodes[k].layer for k in order), default=-1)
        for i, key in enumerate(cycle):
            nodes[key].in_cycle = True
            nodes[key].layer = after + i // 20  # a long cycle wraps into further layers

    # Rows: by the mean row of the dependencies already placed, then priority, then key.
    layers: dict[int, list[Node]] = defaultdict(list)
    for node in nodes.values():
        layers[node.layer].append(node)

    def weight(node: Node) -> tuple[float, int, str]:
        rows = [nodes[d].row for d in preds[node.key] if nodes[d].layer < node.layer]
        mean = sum(rows) / len(rows) if rows else float("inf")
        return (mean, node.task.priority, node.key)

    alone = {key for key in nodes if not preds[key] and not succs[key] and not nodes[key].in_cycle}
    connected = alone != set(nodes)
    for number in sorted(layers):
        row = 0
        for node in sorted(layers[number], key=weight):
            if node.key in alone and connected:
                continue  # placed in the grid below
            node.row = row
            row += 1
    if alone and (connected or len(alone) > 1):
        _grid(nodes, sorted((nodes[k] for k in alone), key=weight), connected=connected)

    path = _critical_path(nodes, order, preds)
    on_path = set(itertools.pairwise(path))
    for key in path:
        nodes[key].critical = True
    edges = [
        Edge(
            source=nodes[dependency],
            target=nodes[task],
            critical=(dependency, task) in on_path,
            in_cycle=nodes[task].in_cycle and nodes[dependency].in_cycle,
        )
        for task, dependency in pairs
    ]
    placed = sorted(nodes.values(), key=lambda n: (n.layer, n.row))
    width = 2 * MARGIN + (1 + max((n.layer for n in placed), default=-1)) * (NODE_W + GAP_X)
    rows = 1 + max((n.row for n in placed), default=-1)
    height = 2 * MARGIN + rows * (NODE_H + GAP_Y) + (NODE_H if cycle else 0)
    return Graph(
        nodes=placed,
        edges=edges,
        critical_path=path,
        cycle=cycle,
        width=max(width - GAP_X, 2 * MARGIN),
        height=max(height - GAP_Y, 2 * MARGIN),
    )


def _grid(nodes: dict[str, Node], alone: list[Node], *, connected: bool) -> None:
    """Tasks without any edge, in rows of at least GRID_COLUMNS (as wide as the connected part
    when it is wider), under the connected part."""
    linked = [n for n in nodes.values() if n not in alone]
    layers = 1 + max((n.layer for n in linked), default=-1)
    top = 1 + max((n.row for n in linked), default=-1) if connected else 0
    columns = max(GRID_COLUMNS, layers)
    for i, node in enumerate(alone):
        node.layer, node.row = i % columns, top + i // columns


def _critical_path(
    nodes: dict[str, Node], order: list[str], preds: dict[str, list[str]]
) -> list[str]:
    """The longest chain of non-terminal tasks, in topological order (ties: the smaller key,
    so the answer does not depend on row order). Nodes in a cycle are left out."""
    length: dict[str, int] = {}
    best_pred: dict[str, str | None] = {}
    for key in order:
        if nodes[key].terminal:
            continue
        best, via = 0, None
        for dependency in sorted(preds[key]):
            if dependency in length and length[dependency] > best:
                best, via = length[dependency], dependency
        length[key], best_pred[key] = best + 1, via
    if not length:
        return []
    end = min(length, key=lambda k: (-length[k], k))
    path = [end]
    while (prev := best_pred[path[-1]]) is not None:
        path.append(prev)
    return path[::-1]


# -- from the database --------------------------------------------------------------------------


def _graph_tasks(rows: Iterable[Task], *, outside: bool = False) -> list[GraphTask]:
    return [
        GraphTask(
            key=t.key,
            status=t.status,
            description=t.description,
            priority=t.priority,
            assigned_to=t.assigned_to,
            outside=outside,
        )
        for t in rows
    ]


FIELDS = ("id", "key", "status", "description", "priority", "assigned_to")


def dependency_graph(*, project: Project, goal: Goal | None = None, sprint: Sprint | None = None):
    """The graph of a goal's tasks, a sprint's (planned and stretch), or the whole project's.

    Dependencies from outside the scope are shown too (marked `outside`): they hold the scope's
    work back as much as its own. Three queries whatever the size.
    """
    scope = Task.objects.filter(project=project)
    if sprint is not None:
        scope = scope.filter(pk__in=sprint.planned.values("pk")) | scope.filter(
            pk__in=sprint.stretch.values("pk")
        )
    elif goal is not None:
        scope = scope.filter(goal=goal)
    inside = {t.id: t for t in scope.only(*FIELDS)}
    Deps = Task.depends_on.through
    pairs = list(
        Deps.objects.filter(from_task_id__in=list(inside)).values_list("from_task_id", "to_task_id")
    )
    missing = {dep for _, dep in pairs if dep not in inside}
    outside = {t.id: t for t in Task.objects.filter(project=project, pk__in=missing).only(*FIELDS)}
    keys = {pk: t.key for pk, t in (inside | outside).items()}
    return layout(
        _graph_tasks(inside.values()) + _graph_tasks(outside.values(), outside=True),
        [(keys[a], keys[b]) for a, b in pairs if a in keys and b in keys],
    )
