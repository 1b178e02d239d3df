"""Checks of a robot read from a scene, each a :class:`~.robot_records.Problem` naming the object
to click: loops of fixed joints, bodies not connected, joints whose anchors are apart, and
what the mobility analysis says (no bpy)."""

from __future__ import annotations

import numpy as np
from looprig.core.model.parts import (
    JointKind,
)
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components, shortest_path

from .robot_records import (
    INFO,
    WARNING,
    JointRecord,
    Problem,
    RobotRecord,
)


# --------------------------------------------------------------------------- graph checks
def _graph(names: list[str], edges: list[tuple[str, str]]):
    """Undirected sparse adjacency of ``names`` with ``edges`` (pairs of names)."""
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a, _ in edges]
    cols = [index[b] for _, b in edges]
    return coo_array((np.ones(len(edges)), (rows, cols)), shape=(len(names),) * 2).tocsr(), index


def fixed_joint_cycles(joints: list[JointRecord]) -> list[list[JointRecord]]:
    """Cycles made only of fixed joints: each is a list of the fixed joints closing a loop
    (the joint that closes it, then the path of earlier fixed joints between its bodies)."""
    fixed = [j for j in joints if j.kind == JointKind.FIXED and j.parent and j.child]
    names = sorted({b for j in fixed for b in (j.parent, j.child)})
    tree: list[JointRecord] = []
    cycles = []
    for j in fixed:
        graph, index = _graph(names, [(t.parent, t.child) for t in tree])
        _, predecessors = shortest_path(
            graph, directed=False, unweighted=True, indices=index[j.parent], return_predecessors=True
        )
        node = index[j.child]
        if predecessors[node] < 0:
            tree.append(j)
            continue
        by_ends = {frozenset((index[t.parent], index[t.child])): t for t in tree}
        path = []
        while node != index[j.parent]:
            previous = predecessors[node]
            path.append(by_ends[frozenset((previous, node))])
            node = previous
        cycles.append([j, *reversed(path)])
    return cycles


def unconnected_components(record: RobotRecord) -> list[list[str]]:
    """Groups of body names joined to no grounded body (each sorted), by joint edges."""
    names = [b.name for b in record.bodies]
    known = set(names)
    edges = [
        (j.parent, j.child) for j in record.joints if j.kind is not None and {j.parent, j.child} <= known
    ]
    graph, index = _graph(names, edges)
    _, labels = connected_components(graph, directed=False)
    grounded = {labels[index[b.name]] for b in record.bodies if b.grounded}
    groups: dict[int, list[str]] = {}
    for n in names:
        if labels[index[n]] not in grounded:
            groups.setdefault(labels[index[n]], []).append(n)
    return [sorted(g) for g in groups.values()]


def joint_gaps(record: RobotRecord, tolerance: float = 1e-5) -> list[Problem]:
    """WARNINGs for imported joints whose two bodies no longer meet at the joint at rest.

    A file import keeps each joint's anchor and each body's world matrix (``exact``). Each
    body carries the anchor along as it is moved; when the points it carries from the
    parent and from the child lie more than ``tolerance`` [m] apart, a body moved away
    from the joint (a closure that no longer closes), and the robot would be built with
    the joint where its constraint object now stands.
    """
    bodies = {b.name: b for b in record.bodies}
    out = []
    for j in record.joints:
        exact = j.exact or {}
        ends = [bodies.get(j.parent), bodies.get(j.child)]
        if j.kind is None or "anchor" not in exact or any(b is None or not b.exact for b in ends):
            continue
        anchor = np.append(np.asarray(exact["anchor"], float), 1.0)
        points = [
            np.asarray(b.T_world_object, float)
            @ np.linalg.solve(np.asarray(b.exact["matrix_world"], float).reshape(4, 4), anchor)
            for b in ends
        ]
        gap = float(np.linalg.norm(points[0][:3] - points[1][:3]))
        if gap > tolerance:
            parent, child = ends
            out.append(
                Problem(
                    WARNING,
                    f"joint {j.name!r} does not meet at rest: the anchor carried by {parent.object_name!r} "
                    f"and by {child.object_name!r} are {gap * 1000:.3g} mm apart (a body moved since "
                    "the import); move it back, or the joint is built where its constraint object stands",
                    j.object_name,
                    j.bone_name,
                )
            )
    return out


def mobility_problems(mobility, record: RobotRecord) -> list[Problem]:
    """INFO lines with the mobility, WARNINGs for an immobile or under-actuated robot."""
    out = [
        Problem(
            INFO,
            f"{mobility.dof} DOF (Grübler count {mobility.grubler}), {mobility.loops} loop(s), "
            f"{mobility.redundant_constraints} redundant constraint(s), {mobility.actuators} actuator(s)",
        )
    ]
    if mobility.redundant_constraints:
        out.append(
            Problem(
                INFO,
                f"{mobility.redundant_constraints} redundant constraint row(s): expected for planar "
                "loops built from spatial joints, the solver handles them",
            )
        )
    if mobility.dof == 0:
        out.append(Problem(WARNING, "the robot cannot move (0 DOF): check the joint types and axes"))
    elif mobility.actuators == 0:
        out.append(
            Problem(WARNING, "no actuated joint: tick 'Actuated' on the constraints that carry motors")
        )
    elif mobility.dof_with_actuators > 0:
        out.append(
            Problem(
                WARNING,
                f"under-actuated: {mobility.dof_with_actuators} DOF remain with every actuator "
                "locked (the solver still works; the motors cannot hold that motion)",
            )
        )
    return out


def where_named_in(message: str, record: RobotRecord) -> dict:
    """The object (and bone) of the body, joint or frame whose quoted name comes first in a
    message (``joint 'j': its actuator's name 'k' ...`` points at j's object)."""
    found = [
        (message.find(repr(item.name)), item)
        for item in [*record.joints, *record.bodies, *record.frames]
        if repr(item.name) in message
    ]
    if not found:
        return {}
    item = min(found, key=lambda pair: pair[0])[1]
    return dict(object_name=item.object_name, bone_name=getattr(item, "bone_name", ""))
