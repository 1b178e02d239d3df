"""Graph counts over bodies (nodes) and joints (edges): connected groups and independent loops."""

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def _component_labels(nodes: Sequence, edges: Iterable[tuple]) -> tuple[list, np.ndarray, int]:
    nodes = list(nodes)
    index = {node: k for k, node in enumerate(nodes)}
    pairs = np.array([(index[a], index[b]) for a, b in edges], dtype=int).reshape(-1, 2)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(nodes),) * 2)
    count, labels = connected_components(graph, directed=False)
    return nodes, labels, count


def connected_groups(nodes: Sequence, edges: Iterable[tuple]) -> list[list]:
    """Connected components of an undirected graph (scipy's ``csgraph``).

    nodes: hashable names; edges: ``(a, b)`` pairs of node names (repeats and
    self-loops allowed). Returns one list per component, nodes in the given
    order, components ordered by their first node.
    """
    nodes, labels, _ = _component_labels(nodes, edges)
    groups: dict[int, list] = {}
    for node, label in zip(nodes, labels, strict=True):
        groups.setdefault(int(label), []).append(node)
    return list(groups.values())


def cycle_rank(nodes: Sequence, edges: Sequence[tuple]) -> int:
    """Independent cycles of an undirected multigraph: ``edges - nodes + components``.

    A repeated edge closes a cycle; a self-loop counts as one too.
    """
    edges = list(edges)
    nodes, _, count = _component_labels(nodes, edges)
    return len(edges) - len(nodes) + count


def on_cycles(edges: Sequence[tuple]) -> list[bool]:
    """Per edge of an undirected multigraph, whether it lies on a cycle (removing it
    leaves its ends connected; a repeated edge and a self-loop do). A union-find over
    the other edges for each edge: the mechanisms' few dozen joints need no more."""
    edges = list(edges)
    return [_connected(edges[:k] + edges[k + 1 :], a, b) for k, (a, b) in enumerate(edges)]


def _connected(edges: list[tuple], a, b) -> bool:
    """Whether nodes a and b are joined by ``edges`` (union-find with path halving)."""
    parent: dict = {}

    def root(x):
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for u, v in edges:
        parent[root(u)] = root(v)
    return root(a) == root(b)


def joined(edges: dict, start, cut) -> set:
    """The nodes joined to ``start`` by ``edges`` (name -> (a, b)) other than the one named
    ``cut``: one search, for a mechanism's few dozen joints (no sparse matrix to build)."""
    neighbours: dict = {}
    for name, (a, b) in edges.items():
        if name != cut:
            neighbours.setdefault(a, []).append(b)
            neighbours.setdefault(b, []).append(a)
    seen, todo = {start}, [start]
    while todo:
        for y in neighbours.get(todo.pop(), ()):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return seen
