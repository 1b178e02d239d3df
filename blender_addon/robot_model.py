"""A robot read from a scene, as plain data, and the checks run on it (no bpy).

The scene readers (:mod:`.scene_graph`) turn Blender objects into the plain
records below; :func:`build_robot` turns those into a
:class:`~looprig.core.mechanism.Mechanism` and a list of :class:`Problem`\\ s,
each naming the object to click. Everything here is pure Python and numpy so
it is unit-tested without Blender.

Conventions: metres, radians, kilograms, world z up; 4x4 matrices ``T_a_b``
map b coordinates into a coordinates; quaternions ``(w, x, y, z)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from looprig.cad_import.errors import FileFormatError
from looprig.cad_import.meshes import triangle_mass_properties
from looprig.core import analyse_mobility
from looprig.core.errors import LooprigError
from looprig.core.mechanism import (
    ActuatedMotion,
    Actuator,
    Body,
    Frame,
    Joint,
    JointKind,
    Mechanism,
)
from looprig.core.rotations import quat_from_matrix, quat_to_matrix

ERROR, WARNING, INFO = "ERROR", "WARNING", "INFO"

#: Rigid Body Constraint types and the joint kind each one is.
CONSTRAINT_KINDS = {
    "FIXED": JointKind.FIXED,
    "POINT": JointKind.SPHERICAL,
    "HINGE": JointKind.REVOLUTE,
    "SLIDER": JointKind.PRISMATIC,
    "PISTON": JointKind.CYLINDRICAL,
}
#: GENERIC constraints: the kind follows from which axes are locked.
GENERIC_TYPES = ("GENERIC", "GENERIC_SPRING")
AXES = "xyz"


@dataclass(frozen=True)
class Problem:
    """One finding of a robot check.

    severity: ``"ERROR"`` (the robot cannot be solved), ``"WARNING"`` or
    ``"INFO"``. object_name: the Blender object to select (may be empty);
    bone_name: the bone within it, for armature rigs.
    """

    severity: str
    message: str
    object_name: str = ""
    bone_name: str = ""

    def describe(self) -> str:
        where = self.object_name + (f":{self.bone_name}" if self.bone_name else "")
        return f"{where}: {self.message}" if where else self.message


@dataclass
class BodyRecord:
    """A body read from the scene.

    name: unique body name (an object name, or ``armature:bone``).
    T_world_object: (4, 4) the object's (or bone's) world matrix [m], may scale.
    mass: [kg] or None when it follows from ``volume_properties`` and ``density``.
    com_world: (3,) centre of mass [m] or None for the object origin.
    inertia_world: (3, 3) about the CoM in world axes [kg m^2], or None.
    mesh: display mesh file of the body, with T_object_mesh (4, 4) mapping file
    coordinates into the object's. mesh_refs: every mesh file of the body
    (``{"path", "T_object_mesh" (16,), "role", "rgba"}``), as a file import found them.
    exact: the float64 values a file import wrote, used while the object is
    where the import put it (Blender stores single precision).
    """

    name: str
    object_name: str
    T_world_object: np.ndarray
    mass: float | None
    grounded: bool = False
    com_world: np.ndarray | None = None
    inertia_world: np.ndarray | None = None
    mesh: str | None = None
    T_object_mesh: np.ndarray | None = None
    bone_name: str = ""
    exact: dict | None = None
    mesh_refs: list[dict] = field(default_factory=list)
    order: int = 1 << 30


@dataclass
class ActuatorRecord:
    """Actuator settings as edited in the panel (SI units; 0 velocity/acceleration = none)."""

    motion: str = "angle"
    lower: float = -math.inf
    upper: float = math.inf
    velocity_limit: float = math.inf
    acceleration_limit: float = math.inf
    hardware_id: int | str | None = None
    zero_offset_ticks: int = 2048
    direction: int = 1
    metres_per_revolution: float | None = None


@dataclass
class JointRecord:
    """A joint read from a constraint object (or a bone).

    kind: a :class:`JointKind` value, or None when ``problem`` says why not.
    T_world_joint: (4, 4) the constraint object's world matrix [m]: the anchor
    is its origin, axes its local axes. axis / secondary_axis: world (3,).
    """

    name: str
    object_name: str
    kind: str | None
    parent: str | None
    child: str | None
    T_world_joint: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    secondary_axis: np.ndarray | None = None
    actuator: ActuatorRecord | None = None
    bone_name: str = ""
    problem: str = ""
    exact: dict | None = None
    order: int = 1 << 30

    @property
    def anchor(self) -> np.ndarray:
        return np.asarray(self.T_world_joint, float)[:3, 3]


@dataclass
class FrameRecord:
    """A named frame: an Empty parented to a body (position/orientation world)."""

    name: str
    object_name: str
    body: str
    T_world_frame: np.ndarray
    exact: dict | None = None
    order: int = 1 << 30


@dataclass
class RobotRecord:
    """Everything read from one robot collection."""

    name: str
    bodies: list[BodyRecord] = field(default_factory=list)
    joints: list[JointRecord] = field(default_factory=list)
    frames: list[FrameRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class RobotModel:
    """The outcome of :func:`build_robot`.

    mechanism: None when an ERROR problem prevents it. meshes: per body name, the
    mesh files as (path, T_body_mesh (4, 4), role, rgba). T_body_object: per body
    name, (4, 4) the object's matrix in body coordinates (scale included), to
    turn solved body poses back into object matrices. mobility: the
    :class:`~looprig.core.mobility.MobilityReport` or None.
    """

    record: RobotRecord
    mechanism: Mechanism | None
    problems: list[Problem]
    T_body_object: dict[str, np.ndarray] = field(default_factory=dict)
    mobility: object | None = None
    meshes: dict[str, list[tuple]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mechanism is not None and not any(p.severity == ERROR for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]


# --------------------------------------------------------------------------- geometry
def rigid_part(T: np.ndarray) -> np.ndarray:
    """(4, 4) the rotation (polar factor, scale and shear removed) and translation of T."""
    T = np.asarray(T, dtype=float)
    U, _, Vt = np.linalg.svd(T[:3, :3])
    R = U @ Vt
    if np.linalg.det(R) < 0:  # a mirrored object: keep a right-handed frame
        U[:, -1] *= -1
        R = U @ Vt
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = R, T[:3, 3]
    return out


def pose_matrix(position, orientation) -> np.ndarray:
    """(4, 4) from a position (3,) [m] and a unit quaternion (4,) wxyz."""
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(np.asarray(orientation, float))
    T[:3, 3] = position
    return T


def state_matrices(states: np.ndarray) -> np.ndarray:
    """(..., n, 4, 4) body poses of states (..., n, 7) ``[c, q]``."""
    states = np.asarray(states, dtype=float)
    T = np.zeros(states.shape[:-1] + (4, 4))
    T[..., :3, :3] = quat_to_matrix(states[..., 3:])
    T[..., :3, 3] = states[..., :3]
    T[..., 3, 3] = 1.0
    return T


def states_from_matrices(T_world_body: np.ndarray) -> np.ndarray:
    """(..., n, 7) states of body poses (..., n, 4, 4) (rotation parts orthonormal)."""
    T = np.asarray(T_world_body, dtype=float)
    return np.concatenate([T[..., :3, 3], quat_from_matrix(T[..., :3, :3])], axis=-1)


def continuous_quaternions(q: np.ndarray) -> np.ndarray:
    """(F, 4) quaternions with signs flipped so consecutive ones have a positive dot product
    (the same rotations; keeps interpolated F-curves from taking the long way round)."""
    q = np.array(q, dtype=float)
    for f in range(1, len(q)):
        if np.dot(q[f], q[f - 1]) < 0:
            q[f] = -q[f]
    return q


def mesh_mass_properties(vertices: np.ndarray, triangles: np.ndarray, density: float = 1.0):
    """Volume [m^3], centroid (3,) [m] and inertia (3, 3) about the centroid [kg m^2]
    of the solid of uniform ``density`` [kg/m^3] bounded by a triangle mesh.

    vertices: (V, 3) [m]; triangles: (T, 3) vertex indices, wound either way.
    Computed by trimesh (:func:`looprig.cad_import.meshes.triangle_mass_properties`);
    returns (0, the vertices' mean, zeros) for a surface that encloses no volume.
    """
    v = np.asarray(vertices, dtype=float).reshape(-1, 3)
    empty = (0.0, v.mean(axis=0) if len(v) else np.zeros(3), np.zeros((3, 3)))
    if len(np.asarray(triangles).reshape(-1, 3)) == 0:
        return empty
    try:
        props = triangle_mass_properties(v, triangles, density)
    except FileFormatError:
        return empty
    return props.mass / density, props.com, props.inertia


def generic_joint_kind(
    linear_locked: tuple[bool, bool, bool], angular_locked: tuple[bool, bool, bool]
) -> tuple[JointKind, int, int | None] | str:
    """Joint kind of a GENERIC constraint from its locked axes (local x, y, z).

    Returns ``(kind, axis, secondary)`` with axis indices into the constraint
    object's local axes, or an error message listing the supported patterns.
    """
    L = [i for i in range(3) if not linear_locked[i]]
    A = [i for i in range(3) if not angular_locked[i]]
    if not L and not A:
        return JointKind.FIXED, 2, None
    if not L and len(A) == 1:
        return JointKind.REVOLUTE, A[0], None
    if not L and len(A) == 2:
        return JointKind.UNIVERSAL, A[0], A[1]
    if not L and len(A) == 3:
        return JointKind.SPHERICAL, 2, None
    if len(L) == 1 and not A:
        return JointKind.PRISMATIC, L[0], None
    if len(L) == 1 and A == L:
        return JointKind.CYLINDRICAL, L[0], None
    if len(L) == 3 and not A:
        return JointKind.PARALLEL, 2, None
    if len(L) == 2 and len(A) == 1 and A[0] not in L:
        return JointKind.PLANAR, A[0], None
    if len(L) == 3 and len(A) == 3:
        return JointKind.FREE, 2, None
    free = ", ".join([f"linear {AXES[i]}" for i in L] + [f"angular {AXES[i]}" for i in A])
    return (
        f"GENERIC constraint with free axes ({free}) is no looprig joint; lock axes "
        "(limits with lower = upper) so that the free ones are: one angular (revolute), "
        "two angular (universal), three angular (spherical), one linear (prismatic), "
        "one linear and the same angular (cylindrical), two linear and the third "
        "angular (planar), three linear (parallel), none (fixed) or all (free)"
    )


def exact_value(shown: float, exact, rel: float = 2e-6) -> float:
    """``exact`` (a float64 kept by an import) while ``shown`` (a float32 UI value) still
    equals it to single precision; else ``shown``, the user's edit."""
    if exact is None:
        return float(shown)
    exact = float(exact)
    if math.isinf(exact) or math.isinf(shown):
        return exact if exact == shown else float(shown)
    return exact if abs(float(shown) - exact) <= rel * max(1.0, abs(exact)) else float(shown)


def matrix_matches(T: np.ndarray, T_exact, atol: float = 2e-6) -> bool:
    """True while a float32 matrix from the scene equals the exact one kept by an import."""
    if T_exact is None:
        return False
    T_exact = np.asarray(T_exact, dtype=float).reshape(4, 4)
    scale = max(1.0, float(np.abs(T_exact).max()))
    return bool(np.max(np.abs(np.asarray(T, float) - T_exact)) <= atol * scale)


# --------------------------------------------------------------------------- graph checks
def _union_find(names):
    parent = {n: n for n in names}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    return parent, find


def fixed_joint_cycles(joints: list[JointRecord]) -> list[list[JointRecord]]:
    """Cycles made only of fixed joints: each is a list of the fixed joints closing a loop
    (the joint that closes it, then the tree path between its two bodies)."""
    fixed = [j for j in joints if j.kind == JointKind.FIXED and j.parent and j.child]
    names = {b for j in fixed for b in (j.parent, j.child)}
    parent, find = _union_find(names)
    adjacency: dict[str, list[tuple[str, JointRecord]]] = {n: [] for n in names}
    cycles = []
    for j in fixed:
        ra, rb = find(j.parent), find(j.child)
        if ra == rb:
            path = _tree_path(adjacency, j.parent, j.child)
            cycles.append([j, *path])
        else:
            parent[ra] = rb
            adjacency[j.parent].append((j.child, j))
            adjacency[j.child].append((j.parent, j))
    return cycles


def _tree_path(adjacency, start: str, goal: str) -> list[JointRecord]:
    stack = [(start, [])]
    seen = {start}
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        for other, joint in adjacency[node]:
            if other not in seen:
                seen.add(other)
                stack.append((other, [*path, joint]))
    return []


def unconnected_components(record: RobotRecord) -> list[list[str]]:
    """Groups of body names joined to no grounded body (each sorted), by joint edges."""
    names = [b.name for b in record.bodies]
    parent, find = _union_find(names)
    for j in record.joints:
        if j.kind is not None and j.parent in parent and j.child in parent:
            parent[find(j.parent)] = find(j.child)
    grounded_roots = {find(b.name) for b in record.bodies if b.grounded}
    groups: dict[str, list[str]] = {}
    for n in names:
        root = find(n)
        if root not in grounded_roots:
            groups.setdefault(root, []).append(n)
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


# --------------------------------------------------------------------------- building
def _body(record: BodyRecord, problems: list[Problem]) -> tuple[Body, np.ndarray] | None:
    """The core Body of a record and T_body_object, or None (problem appended)."""
    where = dict(object_name=record.object_name, bone_name=record.bone_name)
    exact = record.exact or {}
    if exact and matrix_matches(record.T_world_object, exact.get("matrix_world")):
        T_world_body = pose_matrix(exact["position"], exact["orientation"])
        T_body_object = np.asarray(exact["T_body_object"], float).reshape(4, 4)
        mass = exact_value(record.mass if record.mass is not None else exact["mass"], exact["mass"])
        inertia = exact.get("inertia")
        inertia = None if inertia is None else np.asarray(inertia, float).reshape(3, 3)
        return (
            Body(
                record.name,
                position=T_world_body[:3, 3],
                orientation=np.asarray(exact["orientation"], float),
                mass=mass,
                inertia=inertia,
                grounded=record.grounded,
                mesh=record.mesh,
                T_body_mesh=np.eye(4)
                if exact.get("T_body_mesh") is None
                else np.asarray(exact["T_body_mesh"], float).reshape(4, 4),
            ),
            T_body_object,
        )
    T_world_object = np.asarray(record.T_world_object, dtype=float)
    if not np.all(np.isfinite(T_world_object)) or abs(np.linalg.det(T_world_object[:3, :3])) < 1e-12:
        problems.append(Problem(ERROR, "object has a degenerate (zero-scale) transform", **where))
        return None
    mass = record.mass
    if mass is None or not np.isfinite(mass) or mass <= 0:
        problems.append(
            Problem(
                ERROR,
                "no mass: give it a rigid body with a mass, a closed mesh and a density, "
                "or a custom mass in the looprig body settings",
                **where,
            )
        )
        return None
    T_world_body = rigid_part(T_world_object)
    if record.com_world is not None:
        T_world_body[:3, 3] = record.com_world
    R = T_world_body[:3, :3]
    inertia = None
    if record.inertia_world is not None:
        inertia = R.T @ np.asarray(record.inertia_world, float) @ R
        inertia = 0.5 * (inertia + inertia.T)
    T_body_object = np.linalg.inv(T_world_body) @ T_world_object
    body = Body(
        record.name,
        position=T_world_body[:3, 3],
        orientation=quat_from_matrix(R),
        mass=float(mass),
        inertia=inertia,
        grounded=record.grounded,
        mesh=record.mesh,
        T_body_mesh=T_body_object @ (np.eye(4) if record.T_object_mesh is None else record.T_object_mesh)
        if record.mesh
        else np.eye(4),
    )
    return body, T_body_object


def _actuator(joint: JointRecord, kind: JointKind) -> Actuator | None:
    a = joint.actuator
    if a is None:
        return None
    motion = ActuatedMotion(a.motion)
    if kind == JointKind.PRISMATIC:
        motion = ActuatedMotion.DISPLACEMENT
    elif kind == JointKind.REVOLUTE:
        motion = ActuatedMotion.ANGLE
    exact = (joint.exact or {}).get("actuator") or {}
    return Actuator(
        motion=motion,
        lower=exact_value(a.lower, exact.get("lower")),
        upper=exact_value(a.upper, exact.get("upper")),
        velocity_limit=exact_value(a.velocity_limit, exact.get("velocity_limit")),
        acceleration_limit=exact_value(a.acceleration_limit, exact.get("acceleration_limit")),
        hardware_id=a.hardware_id,
        zero_offset_ticks=a.zero_offset_ticks,
        direction=a.direction,
        metres_per_revolution=a.metres_per_revolution,
    )


def _joint(joint: JointRecord, problems: list[Problem]) -> Joint | None:
    where = dict(object_name=joint.object_name, bone_name=joint.bone_name)
    kind = JointKind(joint.kind)
    exact = joint.exact or {}
    anchor, axis, secondary = joint.anchor, joint.axis, joint.secondary_axis
    if (
        exact
        and exact.get("kind") == kind.value
        and matrix_matches(joint.T_world_joint, exact.get("matrix_world"))
    ):
        anchor = np.asarray(exact["anchor"], float)
        axis = np.asarray(exact["axis"], float)
        secondary = (
            None if exact.get("secondary_axis") is None else np.asarray(exact["secondary_axis"], float)
        )
    try:
        actuator = _actuator(joint, kind)
        return Joint(
            joint.name,
            kind,
            joint.parent,
            joint.child,
            anchor=anchor,
            axis=axis,
            secondary_axis=secondary,
            actuator=actuator,
        )
    except (LooprigError, ValueError) as error:
        problems.append(Problem(ERROR, str(error), **where))
        return None


def build_robot(record: RobotRecord) -> RobotModel:
    """Check a robot record and build its Mechanism; see the module docstring.

    Problems found (each with the object to click): constraints or bones
    that are no joint (missing or foreign objects, unsupported types), bodies
    without mass, no grounded body, bodies joined to no grounded body, cycles
    of fixed joints, whatever the Mechanism's own validation rejects; then, on
    a valid robot, the mobility (DOF, redundant constraints) as INFO and
    under-actuation or immobility as WARNING.
    """
    problems = list(record.problems)
    for j in record.joints:
        if j.problem:
            problems.append(Problem(ERROR, j.problem, j.object_name, j.bone_name))
    if not record.bodies:
        problems.append(
            Problem(ERROR, f"robot {record.name!r} has no bodies (mesh objects or armature bones)", "")
        )
    elif not any(b.grounded for b in record.bodies):
        first = sorted(record.bodies, key=lambda b: b.name)[0]
        problems.append(
            Problem(
                ERROR,
                f"robot {record.name!r} has no grounded body: mark the base 'Grounded' in the "
                "looprig body settings (or make its rigid body Passive)",
                first.object_name,
                first.bone_name,
            )
        )
    problems.extend(joint_gaps(record))
    for cycle in fixed_joint_cycles(record.joints):
        names = ", ".join(j.name for j in cycle)
        bodies = sorted({b for j in cycle for b in (j.parent, j.child)})
        problems.append(
            Problem(
                ERROR,
                f"fixed joints {names} form a closed loop of welds between bodies "
                f"{', '.join(bodies)}; remove one of them (or join the bodies into one mesh)",
                cycle[0].object_name,
                cycle[0].bone_name,
            )
        )
    bodies_by_name = {b.name: b for b in record.bodies}
    if any(b.grounded for b in record.bodies):
        for group in unconnected_components(record):
            first = bodies_by_name[group[0]]
            problems.append(
                Problem(
                    ERROR,
                    f"not connected to any grounded body: {', '.join(group)}; join "
                    "them with a Rigid Body Constraint or mark one grounded",
                    first.object_name,
                    first.bone_name,
                )
            )
    bodies, T_body_object = [], {}
    for b in record.bodies:
        built = _body(b, problems)
        if built is not None:
            bodies.append(built[0])
            T_body_object[b.name] = built[1]
    joints = []
    for j in record.joints:
        if j.kind is None or j.problem:
            continue
        built = _joint(j, problems)
        if built is not None:
            joints.append(built)
    frames = [_frame(f) for f in record.frames]
    model_meshes = {
        b.name: [
            (
                m["path"],
                T_body_object[b.name] @ np.asarray(m["T_object_mesh"], float).reshape(4, 4),
                m.get("role", "visual"),
                m.get("rgba"),
            )
            for m in b.mesh_refs
        ]
        for b in record.bodies
        if b.mesh_refs and b.name in T_body_object
    }
    model = RobotModel(record, None, problems, T_body_object, meshes=model_meshes)
    if any(p.severity == ERROR for p in problems):
        return model
    try:
        mechanism = Mechanism(bodies, joints, frames, name=record.name)
    except LooprigError as error:
        problems.append(Problem(ERROR, str(error), _object_named_in(str(error), record)))
        return model
    model.mechanism = mechanism
    try:
        mobility = analyse_mobility(mechanism)
    except LooprigError as error:
        problems.append(Problem(WARNING, f"mobility analysis failed: {error}", ""))
        return model
    model.mobility = mobility
    problems.extend(mobility_problems(mobility, record))
    return model


def _frame(f: FrameRecord) -> Frame:
    exact = f.exact or {}
    if exact and matrix_matches(f.T_world_frame, exact.get("matrix_world")):
        return Frame(f.name, f.body, position=exact["position"], orientation=exact["orientation"])
    return Frame(
        f.name,
        f.body,
        position=np.asarray(f.T_world_frame, float)[:3, 3],
        orientation=quat_from_matrix(rigid_part(f.T_world_frame)[:3, :3]),
    )


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


def _object_named_in(message: str, record: RobotRecord) -> str:
    """The object of the first body or joint whose name appears quoted in a message."""
    for item in [*record.joints, *record.bodies, *record.frames]:
        if repr(item.name) in message:
            return item.object_name
    return ""
