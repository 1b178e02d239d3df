"""Armature rigs as robots: bones are bodies, locks and limits give joints, IK closes loops.

For an armature object in the robot collection:

* the **armature object** is a grounded base body (named like the object);
* every **bone** is a body ``<armature>:<bone>``, posed as in the armature's
  current (un-animated) pose; its mass is the mass of the meshes parented to
  it (volume x density), else its ``looprig_body`` mass;
* each bone joins its parent (a root bone: the base) at its head. The joint
  kind follows from the free axes, in the bone's axes: rotation axes not
  locked (``lock_rotation``, IK locks, a Limit Rotation with min = max) and
  location axes not locked (``lock_location``, connected bones never
  translate) — see :func:`.robot_records.generic_joint_kind`. A revolute bone
  takes its actuator range from a Limit Rotation on its axis unless set;
* an **IK constraint** whose target is a bone of the same armature closes a
  loop: a spherical joint (fixed with "Rotation" on) between the owner's
  tail (head without "Use Tail") and the target bone.

This module reads; :func:`.motion.write_bone_motion` keys the pose bones.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from looprig.core.model.parts import JointKind

from .mesh_mass import object_mass
from .robot_model import rigid_part
from .robot_records import INFO, BodyRecord, JointRecord, Problem, generic_joint_kind
from .scene_data import panel_actuator, to_metres

LOCK_TOLERANCE = 1e-9


def bone_body_name(armature_object, bone_name: str) -> str:
    """The body name of a bone: ``<armature>:<bone>``."""
    return f"{armature_object.name}:{bone_name}"


def bone_joint_name(armature_object, bone_name: str) -> str:
    """The name of the joint a bone makes with its parent: ``<armature>:<bone>.joint``."""
    return f"{bone_body_name(armature_object, bone_name)}.joint"


def frame_body(ob):
    """Body of an Empty parented to a bone (or to the armature object), or None."""
    if ob.parent_type == "BONE" and ob.parent_bone:
        return bone_body_name(ob.parent, ob.parent_bone)
    return ob.parent.name


def _limit_rotation(pb):
    for c in pb.constraints:
        if c.type == "LIMIT_ROTATION" and not c.mute and c.influence > 0:
            return c
    return None


def _locks(pb, bone) -> tuple[tuple[bool, bool, bool], tuple[bool, bool, bool]]:
    """(linear locked, angular locked) per local axis of a pose bone."""
    limit = _limit_rotation(pb)
    angular = []
    for i, a in enumerate("xyz"):
        locked = bool(pb.lock_rotation[i]) or bool(getattr(pb, f"lock_ik_{a}"))
        if limit is not None and getattr(limit, f"use_limit_{a}"):
            locked |= abs(getattr(limit, f"max_{a}") - getattr(limit, f"min_{a}")) <= LOCK_TOLERANCE
        angular.append(locked)
    linear = tuple(bool(bone.use_connect) or bool(pb.lock_location[i]) for i in range(3))
    return linear, tuple(angular)


def _bone_mass(arm, bone_name: str, depsgraph, s: float, settings):
    """Mass [kg], CoM (3,) and world inertia of the meshes parented to a bone (None if none)."""
    total, moment, inertia_parts = 0.0, np.zeros(3), []
    for child in arm.children:
        if child.type != "MESH" or child.parent_type != "BONE" or child.parent_bone != bone_name:
            continue
        density = child.looprig_body.density
        volume, com, inertia_unit = object_mass(child, depsgraph, to_metres(child.matrix_world, s))
        if volume > 0:
            mass = density * volume
            inertia = density * inertia_unit
            total += mass
            moment += mass * com
            inertia_parts.append((mass, com, inertia))
    if total <= 0:
        return None
    com = moment / total
    inertia = np.zeros((3, 3))
    for mass, c, I in inertia_parts:
        d = c - com
        inertia += I + mass * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, inertia


def bone_mesh_objects(arm) -> set[str]:
    """Names of mesh objects that belong to bones (parented to one, or skinned to the rig)."""
    names = {c.name for c in arm.children if c.type == "MESH" and c.parent_type == "BONE"}
    return names


def read_armature(arm, record, depsgraph, s: float) -> None:
    """Add the base body, the bone bodies, their joints and IK closures of ``arm`` to ``record``."""
    T_world_arm = to_metres(arm.matrix_world, s)
    base = arm.name
    base_settings = arm.looprig_body
    record.bodies.append(
        BodyRecord(
            name=base,
            object_name=arm.name,
            T_world_object=rigid_part(T_world_arm),
            mass=base_settings.mass if base_settings.mass > 0 else 1.0,
            grounded=True,
        )
    )
    pose_world = {pb.name: T_world_arm @ np.array(pb.matrix, dtype=float) for pb in arm.pose.bones}
    for pb in arm.pose.bones:
        name = bone_body_name(arm, pb.name)
        T = pose_world[pb.name]
        measured = _bone_mass(arm, pb.name, depsgraph, s, pb.looprig_body)
        settings = pb.looprig_body
        tail = T_world_arm @ np.append(np.array(pb.tail, float), 1.0)
        body = BodyRecord(
            name=name,
            object_name=arm.name,
            T_world_object=T,
            mass=measured[0] if measured and settings.mass_source != "CUSTOM" else float(settings.mass),
            grounded=bool(settings.grounded),
            com_world=measured[1] if measured else 0.5 * (T[:3, 3] + tail[:3]),
            inertia_world=measured[2] if measured else None,
            bone_name=pb.name,
        )
        record.bodies.append(body)
        if settings.grounded and pb.parent is None:
            continue  # a grounded root bone needs no joint to the base
        parent = bone_body_name(arm, pb.parent.name) if pb.parent is not None else base
        record.joints.append(_bone_joint(arm, pb, parent, name, T))
    for pb in arm.pose.bones:
        for c in pb.constraints:
            if c.type == "IK" and not c.mute and c.target == arm and c.subtarget in arm.pose.bones:
                record.joints.append(_ik_closure(arm, pb, c, pose_world, T_world_arm))
            elif c.type == "IK" and not c.mute and c.target is not None and c.target != arm:
                record.problems.append(
                    Problem(
                        INFO,
                        f"IK constraint {c.name!r} targets {c.target.name!r}, not a bone of this rig: "
                        "it closes no loop (add a retarget target for it instead)",
                        arm.name,
                        pb.name,
                    )
                )


def _bone_joint(arm, pb, parent: str, child: str, T: np.ndarray) -> JointRecord:
    linear, angular = _locks(pb, pb.bone)
    found = generic_joint_kind(linear, angular)
    joint = JointRecord(
        bone_joint_name(arm, pb.name), arm.name, None, parent, child, T.copy(), bone_name=pb.name
    )
    T = rigid_part(T)  # joint axes without the armature's scale
    if isinstance(found, str):
        joint.problem = "bone locks: " + found.replace("GENERIC constraint", "bone").replace(
            "lock axes (limits with lower = upper)",
            "lock axes (Transform locks, IK locks, Limit Rotation min = max)",
        )
        return joint
    kind, axis, secondary = found
    if kind == JointKind.FREE:
        joint.problem = "no axis locked: lock the bone's rotations (and location) to make it a joint"
        return joint
    joint.kind = kind.value
    joint.axis = T[:3, axis].copy()
    joint.secondary_axis = None if secondary is None else T[:3, secondary].copy()
    actuator = panel_actuator(pb.looprig_joint, kind.value)
    limit = _limit_rotation(pb)
    if actuator is not None and kind == JointKind.REVOLUTE and not pb.looprig_joint.use_range and limit:
        a = "xyz"[axis]
        if getattr(limit, f"use_limit_{a}"):
            # the limit holds the local angle (rest = 0); the actuator measures from the current pose
            current = _local_angle(pb, axis)
            lower, upper = (getattr(limit, f"{end}_{a}") - current for end in ("min", "max"))
            actuator = replace(actuator, lower=lower, upper=upper)
    if actuator is not None and kind.value not in ("revolute", "prismatic", "cylindrical"):
        joint.problem = f"a {kind.value} bone joint cannot carry a motor; lock all rotations but one"
    joint.actuator = actuator
    return joint


def _local_angle(pb, axis: int) -> float:
    """Rotation of a pose bone about one of its local axes relative to rest [rad]."""
    q = pb.matrix_basis.to_quaternion()
    v = (q.x, q.y, q.z)[axis]
    return 2.0 * math.atan2(v, q.w)


def _ik_closure(arm, pb, c, pose_world, T_world_arm) -> JointRecord:
    target = bone_body_name(arm, c.subtarget)
    owner = bone_body_name(arm, pb.name)
    point = np.array(pb.tail if c.use_tail else pb.head, float)
    anchor = T_world_arm @ np.append(point, 1.0)
    T = rigid_part(pose_world[pb.name])
    T[:3, 3] = anchor[:3]
    kind = JointKind.FIXED if c.use_rotation else JointKind.SPHERICAL
    joint = JointRecord(f"{owner}.ik", arm.name, kind.value, owner, target, T, bone_name=pb.name)
    head = pose_world[c.subtarget][:3, 3]
    gap = float(np.linalg.norm(head - anchor[:3]))
    if gap > 1e-3:
        joint.problem = (
            f"IK constraint {c.name!r} does not reach bone {c.subtarget!r} in the current pose "
            f"(gap {gap * 1000:.3g} mm): the loop must be closed where the robot starts"
        )
    return joint
