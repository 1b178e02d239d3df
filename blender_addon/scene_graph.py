"""Scene -> robot: read a robot collection into a :class:`~.robot_model.RobotRecord`.

A robot is a collection:

* **bodies** — mesh objects (not marked "Not a Body"), and the bones of
  armatures in the collection;
* **joints** — objects with a Rigid Body Constraint joining two bodies
  (HINGE revolute about the constraint object's local Z, SLIDER prismatic
  along local X, PISTON cylindrical along local X, POINT spherical, FIXED;
  GENERIC by its locked axes, see :func:`.robot_model.generic_joint_kind`);
  the constraint object's origin is the anchor;
* **frames** — Empties parented to a body, as named targets for the retarget.

The robot's initial configuration is its **rest pose**: how it stands without
looprig's animation (see :func:`rest_pose`). Lengths are converted to metres
with the scene's unit scale. This module only reads; it calls no operators.
"""

from __future__ import annotations

import contextlib
import math

import bpy
import numpy as np
from mathutils import Matrix

from . import robot_model as rm
from .robot_model import ActuatorRecord, BodyRecord, FrameRecord, JointRecord, Problem, RobotRecord

#: ID property with the float64 values a file import wrote on an object.
EXACT_KEY = "looprig_exact"
#: ID property listing a body's mesh files (path, T_object_mesh, role, rgba) from an import.
MESHES_KEY = "looprig_meshes"
#: ID property marking a placeholder mesh (a body without geometry in its file).
PLACEHOLDER_KEY = "looprig_placeholder"
#: ID property with the name a file gave an object's body, joint or frame, the object name it
#: got (Blender renames clashes and cuts names at 63 bytes) and its position in the file.
NAME_KEY = "looprig_name"
#: ID property with an object's transform channels before looprig animated it.
REST_KEY = "looprig_rest"
#: Custom property on actions that looprig writes (value: the robot collection's name).
ACTION_KEY = "looprig_robot"
LOCK_TOLERANCE = 1e-9


# --------------------------------------------------------------------------- helpers
def unit_scale(scene) -> float:
    """Metres per Blender unit."""
    s = float(scene.unit_settings.scale_length)
    return s if s > 0 else 1.0


def to_metres(T, s: float) -> np.ndarray:
    """(4, 4) matrix in Blender units -> metres (linear block and translation scaled)."""
    out = np.array(T, dtype=float)
    out[:3, :] *= s
    return out


def idprop_to_python(value):
    """ID property values (groups, arrays) as plain dicts, lists and numbers."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def is_looprig_action(action) -> bool:
    return action is not None and ACTION_KEY in action.keys()


def looprig_animated(ob) -> bool:
    ad = ob.animation_data
    return ad is not None and is_looprig_action(ad.action)


def robot_name(ob) -> tuple[str, int]:
    """The body, joint or frame name of an object and its order in the robot.

    The name a file import gave it while the object keeps the name it got then; else
    the object's name (sorted after the imported ones).
    """
    named = ob.get(NAME_KEY)
    if named is not None and named.get("object") == ob.name:
        return str(named["name"]), int(named.get("index", 0))
    return ob.name, 1 << 30


def _sorted(records: list) -> list:
    """Records in file order (imported ones), then by name."""
    return sorted(records, key=lambda r: (r.order, r.name))


def _hardware_id(text: str):
    text = text.strip()
    if not text:
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def _limit(value: float) -> float:
    return float(value) if value > 0 else math.inf


def actuator_record(settings, kind: str | None) -> ActuatorRecord | None:
    """The actuator of a joint's ``looprig_joint`` settings (None when not actuated)."""
    if not settings.actuated:
        return None
    motion = settings.motion
    if kind == "prismatic":
        motion = "displacement"
    elif kind == "revolute":
        motion = "angle"
    lower, upper = -math.inf, math.inf
    if settings.use_range:
        if motion == "angle":
            lower, upper = settings.lower_angle, settings.upper_angle
        else:
            lower, upper = settings.lower_length, settings.upper_length
    return ActuatorRecord(
        motion=motion,
        lower=float(lower),
        upper=float(upper),
        velocity_limit=_limit(settings.velocity_limit),
        acceleration_limit=_limit(settings.acceleration_limit),
        hardware_id=_hardware_id(settings.hardware_id),
        zero_offset_ticks=int(settings.zero_offset_ticks),
        direction=int(settings.direction),
        metres_per_revolution=settings.metres_per_revolution or None,
    )


# --------------------------------------------------------------------------- classification
def is_constraint(ob) -> bool:
    return ob.rigid_body_constraint is not None


def is_body_object(ob) -> bool:
    """A mesh that is a body: not a constraint, not ignored, not carried by a bone or skinned."""
    if ob.type != "MESH" or ob.looprig_body.ignore or is_constraint(ob):
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
        if o.type == "EMPTY" and not is_constraint(o) and o.parent is not None and o.parent in body_set
    ]
    return {
        "bodies": bodies,
        "constraints": [o for o in objects if is_constraint(o)],
        "frames": frames,
        "armatures": armatures,
    }


def animated_objects(collection) -> list:
    """Every object of the robot whose transform looprig may key (bodies and armatures)."""
    roles = robot_objects(collection)
    return roles["bodies"] + roles["armatures"]


def robot_frame_names(collection) -> list[str]:
    """Names a retarget target can point at: bodies, frames, then bones."""
    from . import armature

    roles = robot_objects(collection)
    names = [robot_name(o)[0] for o in roles["bodies"]] + [robot_name(o)[0] for o in roles["frames"]]
    for arm in roles["armatures"]:
        names += [armature.bone_body_name(arm, b.name) for b in arm.data.bones]
    return names


# --------------------------------------------------------------------------- rest pose
@contextlib.contextmanager
def rest_pose(context, objects):
    """Show ``objects`` without looprig's animation while the block runs, then restore.

    Objects animated by a looprig action get their transform channels from
    before the retarget (kept in ``REST_KEY``) and no action; afterwards the
    action and slot come back and the frame is re-evaluated. Nothing changes
    when no object is animated by looprig.
    """
    saved = []
    for ob in objects:
        ad = ob.animation_data
        if ad is None or not is_looprig_action(ad.action) or REST_KEY not in ob.keys():
            continue
        modes = (ob.rotation_mode, {pb.name: pb.rotation_mode for pb in ob.pose.bones} if ob.pose else {})
        saved.append((ob, ad.action, ad.action_slot, modes))
        ad.action = None
        apply_rest(ob)
    if saved:
        context.view_layer.update()
    try:
        yield
    finally:
        for ob, action, slot, (mode, bone_modes) in saved:
            ob.animation_data.action = action
            if slot is not None:
                ob.animation_data.action_slot = slot
            ob.rotation_mode = mode
            for name, bone_mode in bone_modes.items():
                ob.pose.bones[name].rotation_mode = bone_mode
        if saved:
            context.scene.frame_set(context.scene.frame_current, subframe=context.scene.frame_subframe)


def store_rest(ob) -> None:
    """Remember an object's transform channels (and its pose bones') before looprig keys it."""
    if REST_KEY in ob.keys():
        return
    rest = {
        "location": list(ob.location),
        "rotation_mode": ob.rotation_mode,
        "rotation_quaternion": list(ob.rotation_quaternion),
        "rotation_euler": list(ob.rotation_euler),
        "rotation_axis_angle": list(ob.rotation_axis_angle),
        "scale": list(ob.scale),
    }
    if ob.type == "ARMATURE" and ob.pose is not None:
        rest["bones"] = {
            pb.name: {
                "location": list(pb.location),
                "rotation_mode": pb.rotation_mode,
                "rotation_quaternion": list(pb.rotation_quaternion),
                "rotation_euler": list(pb.rotation_euler),
                "scale": list(pb.scale),
                "influence": {c.name: c.influence for c in pb.constraints},
            }
            for pb in ob.pose.bones
        }
    ob[REST_KEY] = rest


def apply_rest(ob) -> None:
    """Set an object's transform channels (and pose bones') back to the stored rest values."""
    rest = idprop_to_python(ob.get(REST_KEY))
    if not rest:
        return
    ob.rotation_mode = rest["rotation_mode"]
    ob.location = rest["location"]
    ob.rotation_quaternion = rest["rotation_quaternion"]
    ob.rotation_euler = rest["rotation_euler"]
    ob.rotation_axis_angle = rest["rotation_axis_angle"]
    ob.scale = rest["scale"]
    for name, b in rest.get("bones", {}).items():
        pb = ob.pose.bones.get(name)
        if pb is None:
            continue
        pb.rotation_mode = b["rotation_mode"]
        pb.location = b["location"]
        pb.rotation_quaternion = b["rotation_quaternion"]
        pb.rotation_euler = b["rotation_euler"]
        pb.scale = b["scale"]
        for name, influence in b.get("influence", {}).items():
            if name in pb.constraints:
                pb.constraints[name].influence = influence


# --------------------------------------------------------------------------- bodies
def mesh_arrays(ob, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) vertices in object coordinates [Blender units] and (T, 3) triangles of the
    evaluated mesh (modifiers applied)."""
    evaluated = ob.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        vertices = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", vertices)
        triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", triangles)
    finally:
        evaluated.to_mesh_clear()
    return vertices.reshape(-1, 3), triangles.reshape(-1, 3)


def read_body(ob, depsgraph, s: float) -> BodyRecord:
    """A mesh object as a body: mass, CoM and inertia from its settings and mesh."""
    settings = ob.looprig_body
    T = to_metres(ob.matrix_world, s)
    vertices, triangles = mesh_arrays(ob, depsgraph)
    world = vertices @ T[:3, :3].T + T[:3, 3]
    volume, com, inertia_unit = rm.mesh_mass_properties(world, triangles, 1.0)
    source = settings.mass_source
    if source == "AUTO":
        source = "RIGID_BODY" if ob.rigid_body is not None else "DENSITY"
    if source == "RIGID_BODY":
        mass = float(ob.rigid_body.mass)
    elif source == "CUSTOM":
        mass = float(settings.mass)
    else:
        mass = settings.density * volume if volume > 0 else None
    exact = idprop_to_python(ob.get(EXACT_KEY)) or None
    if exact is not None and source != "CUSTOM":
        exact = None  # an import sets a custom mass; any other source is an edit
    grounded = bool(settings.grounded) or (ob.rigid_body is not None and ob.rigid_body.type == "PASSIVE")
    T_object_mesh = None
    if exact is not None and exact.get("T_object_mesh") is not None:
        T_object_mesh = np.asarray(exact["T_object_mesh"], float).reshape(4, 4)
    name, order = robot_name(ob)
    record = BodyRecord(
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


# --------------------------------------------------------------------------- joints
def _locked(c, prefix: str, axis: str) -> bool:
    use = getattr(c, f"use_limit_{prefix}_{axis}")
    lower = getattr(c, f"limit_{prefix}_{axis}_lower")
    upper = getattr(c, f"limit_{prefix}_{axis}_upper")
    return bool(use) and abs(upper - lower) <= LOCK_TOLERANCE


def read_constraint(ob, body_names: dict[str, str], s: float) -> JointRecord | None:
    """A Rigid Body Constraint object as a joint; ``problem`` set when it is none.

    body_names: body name of each body object's name.
    Returns None for a disabled constraint (left out on purpose).
    """
    c = ob.rigid_body_constraint
    T = to_metres(ob.matrix_world, s)
    R = rm.rigid_part(T)[:3, :3]
    name, order = robot_name(ob)
    record = JointRecord(name, ob.name, None, None, None, T)
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
    if c.type in rm.CONSTRAINT_KINDS:
        kind = rm.CONSTRAINT_KINDS[c.type]
        axis = 0 if c.type in ("SLIDER", "PISTON") else 2
    elif c.type in rm.GENERIC_TYPES:
        found = rm.generic_joint_kind(
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
    record.actuator = actuator_record(ob.looprig_joint, kind.value)
    if record.actuator is not None and kind.value not in ("revolute", "prismatic", "cylindrical"):
        record.problem = (
            f"a {kind.value} joint cannot carry a motor; actuated joints must be HINGE, SLIDER or "
            "PISTON (or a GENERIC with one free axis)"
        )
    record.exact = idprop_to_python(ob.get(EXACT_KEY)) or None
    return record


# --------------------------------------------------------------------------- robot
def read_robot(context, collection) -> RobotRecord:
    """Read the robot in ``collection`` (at its rest pose) into plain records."""
    from . import armature

    scene = context.scene
    s = unit_scale(scene)
    roles = robot_objects(collection)
    record = RobotRecord(collection.name)
    with rest_pose(context, roles["bodies"] + roles["armatures"]):
        depsgraph = context.evaluated_depsgraph_get()
        for ob in roles["bodies"]:
            record.bodies.append(read_body(ob, depsgraph, s))
        for arm in roles["armatures"]:
            armature.read_armature(arm, record, depsgraph, s)
        body_names = {b.object_name: b.name for b in record.bodies if not b.bone_name}
        for ob in roles["constraints"]:
            joint = read_constraint(ob, body_names, s)
            if joint is None:
                record.problems.append(Problem(rm.INFO, "constraint disabled: left out", ob.name))
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
            frame = FrameRecord(name, ob.name, body, to_metres(ob.matrix_world, s), exact)
            frame.order = order
            record.frames.append(frame)
    record.bodies, record.joints, record.frames = (
        _sorted(record.bodies),
        _sorted(record.joints),
        _sorted(record.frames),
    )
    return record


def read_model(context, collection) -> rm.RobotModel:
    """Read and check the robot in ``collection``; see :func:`.robot_model.build_robot`."""
    return rm.build_robot(read_robot(context, collection))


def object_world_matrix(T_world_object_m: np.ndarray, s: float) -> Matrix:
    """A metre-valued world matrix back in Blender units, as a mathutils Matrix."""
    T = np.array(T_world_object_m, dtype=float)
    T[:3, :] /= s
    return Matrix(T.tolist())
