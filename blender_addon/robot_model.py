"""The Mechanism built from a robot read from a scene, and its checks (no bpy).

:func:`build_robot` turns the plain records of :mod:`.robot_records` into a
:class:`~looprig.core.model.mechanism.Mechanism` and a list of
:class:`~.robot_records.Problem`\\ s, each naming the object to click; the
geometry helpers below serve the readers and writers. Everything here is pure
Python and numpy so it is unit-tested without Blender.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from looprig.cad_import.errors import FileFormatError
from looprig.cad_import.meshes import triangle_mass_properties
from looprig.cad_import.native_read import coupling_from_dict
from looprig.core import analyse_mobility
from looprig.core.errors import LooprigError
from looprig.core.maths.rotations import nearest_rotation, quat_from_matrix
from looprig.core.maths.rotations import pose_matrix as state_pose_matrix
from looprig.core.model import parts
from looprig.core.model.filevalues import limit_from_file
from looprig.core.model.mechanism import Mechanism

from .robot_checks import (
    fixed_joint_cycles,
    joint_gaps,
    mobility_problems,
    unconnected_components,
    where_named_in,
)
from .robot_records import (
    ERROR,
    WARNING,
    BodyRecord,
    FrameRecord,
    JointRecord,
    Problem,
    RobotModel,
    RobotRecord,
)


# --------------------------------------------------------------------------- geometry
def rigid_part(T: np.ndarray) -> np.ndarray:
    """(..., 4, 4) the rotation (polar factor: scale and shear removed, right-handed) and
    translation of T (..., 4, 4)."""
    T = np.asarray(T, dtype=float)
    out = np.zeros_like(T)
    out[..., :3, :3] = nearest_rotation(T[..., :3, :3])
    out[..., :3, 3] = T[..., :3, 3]
    out[..., 3, 3] = 1.0
    return out


def pose_matrix(position, orientation) -> np.ndarray:
    """(4, 4) from a position (3,) [m] and a unit quaternion (4,) wxyz."""
    return state_pose_matrix(np.concatenate([np.asarray(position, float), np.asarray(orientation, float)]))


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


# --------------------------------------------------------------------------- building
def _body(record: BodyRecord, problems: list[Problem]) -> tuple[parts.Body, np.ndarray] | None:
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
            parts.Body(
                record.name,
                position=T_world_body[:3, 3],
                orientation=np.asarray(exact["orientation"], float),
                mass=mass,
                inertia=inertia,
                grounded=record.grounded,
                color=record.color,
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
    body = parts.Body(
        record.name,
        position=T_world_body[:3, 3],
        orientation=quat_from_matrix(R),
        mass=float(mass),
        inertia=inertia,
        grounded=record.grounded,
        color=record.color,
        mesh=record.mesh,
        T_body_mesh=T_body_object @ (np.eye(4) if record.T_object_mesh is None else record.T_object_mesh)
        if record.mesh
        else np.eye(4),
    )
    return body, T_body_object


def _actuator(joint: JointRecord) -> parts.Actuator | None:
    """The joint's motor as its settings give it (:attr:`JointRecord.actuator`), with what a
    file import recorded on it: the exact limits while the scene's still equal them, the
    servo model, the limits' sources and the rotor inertia."""
    if joint.actuator is None:
        return None
    exact = (joint.exact or {}).get("actuator") or {}
    limits = {
        field: exact_value(getattr(joint.actuator, field), exact.get(field))
        for field in parts.LIMIT_FIELDS.values()
    }
    return replace(
        joint.actuator,
        **limits,
        servo=exact.get("servo"),
        limit_sources=_limit_sources(limits, exact),
        rotor_inertia=float(exact.get("rotor_inertia", 0.0)),
    )


def _limit_sources(limits: dict[str, float], exact: dict) -> tuple[tuple[str, str], ...]:
    """``(limit, source)`` pairs of an imported motor: the import's source of each limit
    still at its imported value (``exact``: the file's values, None unbounded), and
    ``mapping`` (a Blender property) for one edited in the scene; () for a motor no
    import recorded sources for."""
    recorded = exact.get("limit_sources") or {}
    if not recorded:
        return ()
    sources = {}
    for limit, field in parts.LIMIT_FIELDS.items():
        imported = limit_from_file(exact.get(field), -math.inf if limit == "lower" else math.inf)
        if limits[field] == imported:
            if limit in recorded:
                sources[limit] = recorded[limit]
        else:
            sources[limit] = parts.LimitSource.MAPPING.value
    return tuple(sorted(sources.items()))


def _joint(joint: JointRecord, problems: list[Problem]) -> parts.Joint | None:
    where = dict(object_name=joint.object_name, bone_name=joint.bone_name)
    kind = parts.JointKind(joint.kind)
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
        gap = float(exact.get("gap", 0.0))
    else:
        gap = 0.0  # moved in the scene: built where its constraint stands, to the scene's precision
    try:
        return parts.Joint(
            joint.name,
            kind,
            joint.parent,
            joint.child,
            anchor=anchor,
            axis=axis,
            secondary_axis=secondary,
            actuator=_actuator(joint),
            gap=gap,
        )
    except (LooprigError, ValueError) as error:
        problems.append(Problem(ERROR, str(error), **where))
        return None


def _coupling(joint: JointRecord, problems: list[Problem]) -> parts.Coupling | None:
    """The coupling an import recorded on a joint (the joints it follows, as the native
    file writes it), or None (an unreadable one: problem appended)."""
    entry = (joint.exact or {}).get("coupling")
    if entry is None:
        return None
    try:
        return coupling_from_dict(entry, f"joint {joint.name!r}: coupling")
    except FileFormatError as error:
        problems.append(
            Problem(ERROR, f"{error.element}: {error.problem}", joint.object_name, joint.bone_name)
        )
        return None


def build_robot(record: RobotRecord) -> RobotModel:
    """Check a robot record and build its Mechanism; see the module docstring.

    Problems found (each with the object to click): constraints or bones
    that are no joint (missing or foreign objects, unsupported types), bodies
    without mass, no grounded body, bodies joined to no grounded body, cycles
    of fixed joints, an unreadable coupling an import recorded on a joint, whatever
    the Mechanism's own validation rejects (a coupling whose joints are gone); then, on
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
    joints, couplings = [], []
    for j in record.joints:
        if j.kind is None or j.problem:
            continue
        built = _joint(j, problems)
        if built is not None:
            joints.append(built)
            coupling = _coupling(j, problems)
            if coupling is not None:
                couplings.append(((j.exact or {}).get("coupling_index", len(record.joints)), coupling))
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
        mechanism = Mechanism(
            bodies,
            joints,
            frames,
            name=record.name,
            couplings=[c for _, c in sorted(couplings, key=lambda item: item[0])],
        )
    except LooprigError as error:
        problems.append(Problem(ERROR, str(error), **where_named_in(str(error), record)))
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


def _frame(f: FrameRecord) -> parts.Frame:
    exact = f.exact or {}
    if exact and matrix_matches(f.T_world_frame, exact.get("matrix_world")):
        return parts.Frame(f.name, f.body, position=exact["position"], orientation=exact["orientation"])
    return parts.Frame(
        f.name,
        f.body,
        position=np.asarray(f.T_world_frame, float)[:3, 3],
        orientation=quat_from_matrix(rigid_part(f.T_world_frame)[:3, :3]),
    )
