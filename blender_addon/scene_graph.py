"""Scene -> robot: read a robot collection into a :class:`~.robot_records.RobotRecord`.

A robot is a collection:

* **bodies** — mesh objects (not marked "Not a Body"), and the bones of
  armatures in the collection;
* **joints** — objects with a Rigid Body Constraint joining two bodies
  (HINGE revolute about the constraint object's local Z, SLIDER prismatic
  along local X, PISTON cylindrical along local X, POINT spherical, FIXED;
  GENERIC by its locked axes, see :func:`.robot_records.generic_joint_kind`);
  the constraint object's origin is the anchor;
* **frames** — Empties parented to a body, as named targets for the retarget.

The robot's initial configuration is its **rest pose**: how it stands without
looprig's animation (see :func:`.rest.rest_pose`). Lengths are converted to metres
with the scene's unit scale. This module only reads; it calls no operators.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import armature
from . import robot_records as rr
from .mesh_mass import object_mass, object_mesh
from .motor_feedback import COLOR_KEY
from .rest import rest_pose
from .robot_model import build_robot, matrix_matches, rigid_part
from .scene_data import (
    EXACT_KEY,
    MESHES_KEY,
    idprop_to_python,
    panel_actuator,
    robot_name,
    to_metres,
    unit_scale,
)

LOCK_TOLERANCE = 1e-9
#: A loop joint whose pivot lies farther than this [m] outside a body's mesh is reported.
PIVOT_TOLERANCE = 1e-4


def _sorted(records: list) -> list:
    """Records in file order (imported ones), then by name."""
    return sorted(records, key=lambda r: (r.order, r.name))


# --------------------------------------------------------------------------- classification
def is_constraint(ob) -> bool:
    return ob.rigid_body_constraint is not None


def is_empty_body(ob) -> bool:
    """An Empty a file import made a body (a massless link without geometry)."""
    return ob.type == "EMPTY" and "mass" in (ob.get(EXACT_KEY) or {})


def is_body_object(ob) -> bool:
    """A mesh (or an imported Empty body) that is a body: not a constraint, not ignored, not
    carried by a bone or skinned."""
    if not (ob.type == "MESH" or is_empty_body(ob)) or ob.looprig_body.ignore or is_constraint(ob):
        return False
    if ob.parent is not None and ob.parent_type == "BONE":
        return False  # part of that bone's body
    return not any(m.type == "ARMATURE" and m.object is not None for m in ob.modifiers)


def robot_objects(collection) -> dict[str, list]:
    """The robot's objects by role: ``bodies``, ``constraints``, ``frames``, ``armatures``."""
    objects = sorted(collection.all_objects, key=lambda o: o.name)
    bodies = [o for o in objects if is_body_object(o)]
    armatures = [o for o in objects if o.type == "ARMATURE" and not o.looprig_body.ignore]
    body_set = set(bodies) | set(armatures)
    frames = [
        o
        for o in objects
        if o.type == "EMPTY"
        and not is_constraint(o)
        and o not in body_set
        and o.parent is not None
        and o.parent in body_set
    ]
    return {
        "bodies": bodies,
        "constraints": [o for o in objects if is_constraint(o)],
        "frames": frames,
        "armatures": armatures,
    }


def animated_objects(collection) -> list:
    """Every object of the robot whose transform looprig may key: bodies, armatures and
    joint objects (those not parented to a body are keyed to follow it)."""
    roles = robot_objects(collection)
    return roles["bodies"] + roles["armatures"] + roles["constraints"]


#: Rigid Body Constraint types whose joint may carry a motor (GENERIC: with one free axis).
MOTOR_TYPES = ("HINGE", "SLIDER", "PISTON", *rr.GENERIC_TYPES)


def motor_candidates(collection) -> list[tuple[str, object]]:
    """(joint name, owner of its ``looprig_joint`` settings) of every joint of the robot that
    may carry a motor: constraint objects, then pose bones (``<armature>:<bone>.joint``)."""
    roles = robot_objects(collection)
    out = [
        (robot_name(ob)[0], ob) for ob in roles["constraints"] if ob.rigid_body_constraint.type in MOTOR_TYPES
    ]
    for arm in roles["armatures"]:
        out += [(armature.bone_joint_name(arm, pb.name), pb) for pb in arm.pose.bones]
    return out


def robot_frame_names(collection) -> list[str]:
    """Names a retarget target can point at: bodies, frames, then bones; each once."""
    roles = robot_objects(collection)
    names = [robot_name(o)[0] for o in roles["bodies"]] + [robot_name(o)[0] for o in roles["frames"]]
    for arm in roles["armatures"]:
        names += [armature.bone_body_name(arm, b.name) for b in arm.data.bones]
    return list(dict.fromkeys(names))  # a file's frame may carry its body's name


# --------------------------------------------------------------------------- bodies
def read_body(ob, depsgraph, s: float) -> rr.BodyRecord:
    """A mesh object as a body: mass, CoM and inertia from its settings and mesh.

    A body as a file import left it (its custom mass and the world matrix the import
    kept, see :func:`.robot_model.matrix_matches`) takes the file's mass properties, so
    its mesh is not measured: the first Check after opening a file costs no mesh pass.
    """
    settings = ob.looprig_body
    T = to_metres(ob.matrix_world, s)
    source = settings.mass_source
    if source == "AUTO":
        source = "RIGID_BODY" if ob.rigid_body is not None else "DENSITY"
    exact = idprop_to_python(ob.get(EXACT_KEY)) or None
    if exact is not None and source != "CUSTOM":
        exact = None  # an import sets a custom mass; any other source is an edit
    if ob.type == "MESH" and not (exact and matrix_matches(T, exact.get("matrix_world"))):
        volume, com, inertia_unit = object_mass(ob, depsgraph, T)
    else:  # an Empty body, or a body as imported: its mass and inertia are the file's
        volume, com, inertia_unit = 0.0, None, None  # (measuring its mesh would go unused)
    if source == "RIGID_BODY":
        mass = float(ob.rigid_body.mass)
    elif source == "CUSTOM":
        mass = float(settings.mass)
    else:
        mass = settings.density * volume if volume > 0 else None
    grounded = bool(settings.grounded) or (ob.rigid_body is not None and ob.rigid_body.type == "PASSIVE")
    T_object_mesh = None
    if exact is not None and exact.get("T_object_mesh") is not None:
        T_object_mesh = np.asarray(exact["T_object_mesh"], float).reshape(4, 4)
    name, order = robot_name(ob)
    record = rr.BodyRecord(
        color=body_color(ob),
        name=name,
        object_name=ob.name,
        T_world_object=T,
        mass=mass,
        grounded=grounded,
        com_world=com if volume > 0 else None,
        inertia_world=inertia_unit * (mass / volume) if (volume > 0 and mass) else None,
        mesh=bpy.path.abspath(settings.mesh_path) if settings.mesh_path else None,
        T_object_mesh=T_object_mesh,
        exact=exact,
        mesh_refs=list(idprop_to_python(ob.get(MESHES_KEY)) or []),
    )
    record.order = order
    return record


def body_color(ob) -> tuple[float, float, float, float] | None:
    """A body object's display colour: the file's while the object keeps the colour the import
    gave it (None if the file had none), else the object colour once set (before looprig's
    tint); None for an object left white."""
    shown = np.asarray(ob[COLOR_KEY] if COLOR_KEY in ob.keys() else ob.color, float)
    exact = ob.get(EXACT_KEY) or {}
    if "object_color" in exact and np.allclose(shown, exact["object_color"], atol=1e-6):
        color = exact.get("color")
        return None if color is None else tuple(float(c) for c in color)
    return None if np.allclose(shown, 1.0) else tuple(float(c) for c in shown)


# --------------------------------------------------------------------------- joints
def _locked(c, prefix: str, axis: str) -> bool:
    use = getattr(c, f"use_limit_{prefix}_{axis}")
    lower = getattr(c, f"limit_{prefix}_{axis}_lower")
    upper = getattr(c, f"limit_{prefix}_{axis}_upper")
    return bool(use) and abs(upper - lower) <= LOCK_TOLERANCE


def read_constraint(ob, body_names: dict[str, str], s: float) -> rr.JointRecord | None:
    """A Rigid Body Constraint object as a joint; ``problem`` set when it is none.

    body_names: body name of each body object's name.
    Returns None for a disabled constraint (left out on purpose).
    """
    c = ob.rigid_body_constraint
    T = to_metres(ob.matrix_world, s)
    R = rigid_part(T)[:3, :3]
    name, order = robot_name(ob)
    record = rr.JointRecord(name, ob.name, None, None, None, T)
    record.order = order
    if not c.enabled:
        return None
    ends = []
    for label, other in (("Object 1", c.object1), ("Object 2", c.object2)):
        if other is None:
            record.problem = (
                f"{c.type} constraint has no {label}: pick the two bodies it joins "
                "(Physics properties > Rigid Body Constraint > Objects)"
            )
            return record
        if other.name not in body_names:
            record.problem = (
                f"{label} {other.name!r} is not a body of this robot: bodies are mesh objects "
                "in the robot collection"
            )
            return record
        ends.append(body_names[other.name])
    if ends[0] == ends[1]:
        record.problem = f"joins {ends[0]!r} to itself; pick two different bodies"
        return record
    record.parent, record.child = ends
    kind, axis, secondary = None, 2, None
    if c.type in rr.CONSTRAINT_KINDS:
        kind = rr.CONSTRAINT_KINDS[c.type]
        axis = 0 if c.type in ("SLIDER", "PISTON") else 2
    elif c.type in rr.GENERIC_TYPES:
        found = rr.generic_joint_kind(
            tuple(_locked(c, "lin", a) for a in "xyz"), tuple(_locked(c, "ang", a) for a in "xyz")
        )
        if isinstance(found, str):
            record.problem = found
            return record
        kind, axis, secondary = found
    else:
        record.problem = (
            f"{c.type} constraints drive bodies and do not join them; use HINGE, SLIDER, PISTON, "
            "POINT, FIXED or GENERIC, and tick 'Actuated' in the looprig joint settings for a motor"
        )
        return record
    record.kind = kind.value
    record.axis = R[:, axis].copy()
    record.secondary_axis = None if secondary is None else R[:, secondary].copy()
    record.actuator = panel_actuator(ob.looprig_joint, kind.value)
    if record.actuator is not None and kind.value not in ("revolute", "prismatic", "cylindrical"):
        record.problem = (
            f"a {kind.value} joint cannot carry a motor; actuated joints must be HINGE, SLIDER or "
            "PISTON (or a GENERIC with one free axis)"
        )
    record.exact = idprop_to_python(ob.get(EXACT_KEY)) or None
    return record


# --------------------------------------------------------------------------- robot
def read_robot(context, collection) -> rr.RobotRecord:
    """Read the robot in ``collection`` (at its rest pose) into plain records."""
    scene = context.scene
    s = unit_scale(scene)
    roles = robot_objects(collection)
    record = rr.RobotRecord(collection.name)
    with rest_pose(context, animated_objects(collection)):
        depsgraph = context.evaluated_depsgraph_get()
        for ob in roles["bodies"]:
            record.bodies.append(read_body(ob, depsgraph, s))
        for arm in roles["armatures"]:
            armature.read_armature(arm, record, depsgraph, s)
        body_names = {b.object_name: b.name for b in record.bodies if not b.bone_name}
        for ob in roles["constraints"]:
            joint = read_constraint(ob, body_names, s)
            if joint is None:
                record.problems.append(rr.Problem(rr.INFO, "constraint disabled: left out", ob.name))
            else:
                record.joints.append(joint)
        for ob in roles["frames"]:
            if ob.parent.type == "ARMATURE":
                body = armature.frame_body(ob)
                if body is None:
                    continue
            else:
                body = body_names.get(ob.parent.name, ob.parent.name)
            exact = idprop_to_python(ob.get(EXACT_KEY)) or None
            name, order = robot_name(ob)
            frame = rr.FrameRecord(name, ob.name, body, to_metres(ob.matrix_world, s), exact)
            frame.order = order
            record.frames.append(frame)
        record.bodies, record.joints, record.frames = (
            _sorted(record.bodies),
            _sorted(record.joints),
            _sorted(record.frames),
        )
        record.problems += pivot_gaps(record, collection, depsgraph, s)
    return record


# --------------------------------------------------------------------------- closures at rest
def loop_joints(record: rr.RobotRecord) -> list[rr.JointRecord]:
    """The joints on a kinematic loop: those whose two bodies stay connected without them."""
    joints = [j for j in record.joints if j.kind is not None and j.parent and j.child]
    out = []
    for j in joints:
        neighbours: dict[str, set[str]] = {}
        for other in joints:
            if other is not j:
                neighbours.setdefault(other.parent, set()).add(other.child)
                neighbours.setdefault(other.child, set()).add(other.parent)
        seen, todo = {j.parent}, [j.parent]
        while todo:
            for n in neighbours.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        if j.child in seen:
            out.append(j)
    return out


def pivot_gaps(record: rr.RobotRecord, collection, depsgraph, s: float) -> list[rr.Problem]:
    """WARNINGs for built-by-hand loop joints whose pivot lies off a body they join, at rest.

    A loop closes where its joints' pivots are: a hinge placed a few millimetres beyond
    where two links meet is a valid joint of another mechanism, not the robot that is
    modelled. Here a revolute or cylindrical joint's axis line must pass through each
    body's mesh (the distance from the pivot to the mesh's convex hull, in the plane
    across the axis) and a spherical joint's pivot lie in it (3-D hull; at least that
    far); farther than :data:`PIVOT_TOLERANCE` is reported with the gap in mm and the
    constraint object. A pivot moved within the bodies' material is a consistent joint
    that nothing in the scene contradicts. Imported joints are checked against what the
    file said instead (:func:`.robot_checks.joint_gaps`); bone bodies are not checked.
    """
    bodies = {b.name: b for b in record.bodies if not b.bone_name}
    objects = collection.all_objects
    out = []
    for j in loop_joints(record):
        if j.exact or j.kind not in ("revolute", "cylindrical", "spherical"):
            continue
        for end in (j.parent, j.child):
            body = bodies.get(end)
            ob = objects.get(body.object_name) if body is not None else None
            if ob is None or ob.type != "MESH":
                continue
            with object_mesh(ob, depsgraph) as mesh:
                local = np.empty(3 * len(mesh.vertices), np.float32)
                mesh.attributes["position"].data.foreach_get("vector", local)
            T = to_metres(ob.matrix_world, s)
            points = local.reshape(-1, 3).astype(float) @ T[:3, :3].T + (T[:3, 3] - j.anchor)  # pivot at 0
            if j.kind == "spherical":
                gap, where = outside_hull(points), "its pivot lies"
            else:
                axis = j.axis / np.linalg.norm(j.axis)
                across = np.linalg.svd(np.eye(3) - np.outer(axis, axis))[0][:, :2]  # (3, 2) plane basis
                gap, where = outside_hull(points @ across), "its axis passes"
            if gap > PIVOT_TOLERANCE:
                out.append(
                    rr.Problem(
                        rr.WARNING,
                        f"joint {j.name!r} does not meet at rest: {where} {gap * 1000:.3g} mm outside "
                        f"{ob.name!r}; move the constraint object to where the links meet (the loop "
                        "closes where it stands)",
                        j.object_name,
                    )
                )
    return out


def outside_hull(points: np.ndarray) -> float:
    """How far the origin lies outside the convex hull of (V, 2) or (V, 3) points [their unit];
    0 inside or for a hull without area (volume). Exact in 2-D; in 3-D the largest facet
    distance (at least that far)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        return 0.0
    if points.shape[1] == 3 or float(np.max(hull.equations[:, -1])) <= 0.0:
        return max(0.0, float(np.max(hull.equations[:, -1])))
    ring = points[hull.vertices]  # counter-clockwise polygon
    a, b = ring, np.roll(ring, -1, axis=0)
    t = np.clip(
        np.einsum("ij,ij->i", -a, b - a) / np.maximum(np.einsum("ij,ij->i", b - a, b - a), 1e-300), 0, 1
    )
    return float(np.min(np.linalg.norm(a + t[:, None] * (b - a), axis=1)))


def read_model(context, collection) -> rr.RobotModel:
    """Read and check the robot in ``collection``; see :func:`.robot_model.build_robot`."""
    return build_robot(read_robot(context, collection))
