"""Robot motion in the scene: solved states -> object keys; animated objects -> states.

Bones are keyed (location and quaternion) in the armature's slot of looprig's
action, with the IK constraints' influence keyed to 0 there (the solved pose
already closes the loops), so removing looprig's action gives the animator's
rig back untouched. Both directions go through the per-body ``T_body_object`` of the
:class:`~.robot_model.RobotModel`: an object's world matrix is its body's pose
times that constant matrix.
"""

from __future__ import annotations

import numpy as np
from looprig.core.maths.rotations import pose_from_matrix, pose_matrix, quat_from_matrix

from . import animation
from .robot_model import rigid_part
from .robot_records import RobotModel
from .sampling import Clip, Source, sample_world_matrices
from .scene_data import unit_scale
from .scene_graph import animated_objects

MOTION_GROUP = "looprig motion"


def body_sources(model: RobotModel) -> list[Source]:
    """Sampling sources for every body of a model (objects, or bones of armatures)."""
    out = []
    for record in model.record.bodies:
        out.append(Source(record.name, record.object_name, record.bone_name))
    return out


def sample_states(context, model: RobotModel, clip: Clip, progress=None) -> np.ndarray:
    """(F, n, 7) body states of the robot as the scene animates it over a clip."""
    mechanism = model.mechanism
    matrices = sample_world_matrices(context, body_sources(model), clip.frames, progress)
    T = np.stack(
        [matrices[name] @ np.linalg.inv(model.T_body_object[name]) for name in mechanism.body_names], axis=1
    )
    return pose_from_matrix(T)


def object_world_matrices(model: RobotModel, states: np.ndarray) -> dict[str, np.ndarray]:
    """Per body name, (F, 4, 4) world matrices [m] of its object for states (F, n, 7)."""
    T_world_body = pose_matrix(states)
    return {
        name: T_world_body[:, i] @ model.T_body_object[name]
        for i, name in enumerate(model.mechanism.body_names)
    }


def quaternion_keys(local: np.ndarray):
    """Location (F, 3) and continuous unit quaternions (F, 4) of local matrices (F, 4, 4)."""
    return local[:, :3, 3].copy(), continuous_quaternions(quat_from_matrix(rigid_part(local)[:, :3, :3]))


def continuous_quaternions(q: np.ndarray) -> np.ndarray:
    """(F, 4) quaternions with signs flipped so consecutive ones have a positive dot product
    (the same rotations; keeps interpolated F-curves from taking the long way round)."""
    q = np.array(q, dtype=float)
    if len(q) > 1:
        flips = np.cumprod(np.where(np.sum(q[1:] * q[:-1], axis=1) < 0, -1.0, 1.0))
        q[1:] *= flips[:, None]
    return q


def write_robot_motion(context, collection, model: RobotModel, states: np.ndarray, frames: np.ndarray):
    """Key the robot's objects along solved states at scene frames ``frames`` (F,).

    Replaces the robot's looprig action (never another action); grounded bodies
    are not keyed; joint objects no body carries are keyed to follow their Object 1
    body. Returns the new action.
    """
    s = unit_scale(context.scene)
    objects = animated_objects(collection)
    animation.remove_action(collection, objects)
    context.view_layer.update()
    action = animation.new_action(collection)
    world = object_world_matrices(model, states)
    for T in world.values():
        T[:, :3, :] /= s  # metres -> Blender units
    objects = context.scene.objects
    targets = {}  # object name -> (F, 4, 4) world matrices [Blender units]
    grounded = {b.name for b in model.mechanism.bodies if b.grounded}
    for record in model.record.bodies:
        if not record.bone_name and record.name not in grounded:
            targets[record.object_name] = world[record.name]
    targets.update(_joint_object_targets(model, objects, world, targets, grounded))
    # parents first, so a parent's keyed world matrices are known for its children
    for name in sorted(targets, key=lambda n: _depth(objects.get(n))):
        ob = objects[name]
        W = targets[name]
        parent = ob.parent
        if parent is None:
            local = W
        else:
            P = targets.get(parent.name)
            if P is None:
                P = np.broadcast_to(np.array(parent.matrix_world, float), W.shape)
            local = np.linalg.inv(P @ np.array(ob.matrix_parent_inverse, float)) @ W
        location, quaternion = quaternion_keys(local)
        bag = animation.take_over(ob, action)
        ob.rotation_mode = "QUATERNION"
        for i in range(3):
            animation.write_fcurve(bag, "location", i, frames, location[:, i], MOTION_GROUP)
        for i in range(4):
            animation.write_fcurve(bag, "rotation_quaternion", i, frames, quaternion[:, i], MOTION_GROUP)
    write_bone_motion(context, collection, model, world, frames, action)
    return action


def _joint_object_targets(model: RobotModel, objects, world, keyed, grounded) -> dict[str, np.ndarray]:
    """World matrices of the joint objects that would stay behind: those not carried by a
    keyed object (e.g. a hinge Empty added without a parent) follow their Object 1 body."""
    bodies = {b.name: b for b in model.record.bodies}
    out = {}
    for joint in model.record.joints:
        ob = objects.get(joint.object_name)
        body = bodies.get(joint.parent)
        if joint.bone_name or ob is None or body is None or body.bone_name or body.name in grounded:
            continue
        if ob.name in keyed or _carried(ob, keyed):
            continue
        T_body_joint = np.linalg.solve(np.asarray(body.T_world_object, float), joint.T_world_joint)
        out[ob.name] = world[body.name] @ T_body_joint  # unit-free: both in metres
    return out


def _carried(ob, keyed) -> bool:
    """True when an ancestor of ``ob`` is keyed."""
    parent = ob.parent
    while parent is not None:
        if parent.name in keyed:
            return True
        parent = parent.parent
    return False


def _depth(ob) -> int:
    depth = 0
    while ob is not None and ob.parent is not None:
        depth += 1
        ob = ob.parent
    return depth


def write_bone_motion(context, collection, model, world, frames, action) -> None:
    """Key every bone body's pose bone along the solved world matrices ``world`` (per body,
    (F, 4, 4), Blender units) in the armature's slot; mute its IK closures there."""
    bones_by_arm: dict[str, list] = {}
    for b in model.record.bodies:
        if b.bone_name:
            bones_by_arm.setdefault(b.object_name, []).append(b)
    for arm_name, records in bones_by_arm.items():
        arm = context.scene.objects[arm_name]
        W_arm_inv = np.linalg.inv(np.array(arm.matrix_world, float))
        pose = {r.bone_name: W_arm_inv @ world[r.name] for r in records}  # armature space
        bag = animation.take_over(arm, action)
        for r in records:
            pb = arm.pose.bones[r.bone_name]
            bone = pb.bone
            if bone.parent is None:
                rest = np.array(bone.matrix_local, float)
                basis = np.linalg.inv(rest) @ pose[pb.name]
            else:
                rest_rel = np.linalg.inv(np.array(bone.parent.matrix_local, float)) @ np.array(
                    bone.matrix_local, float
                )
                parent_pose = pose.get(bone.parent.name)
                if parent_pose is None:
                    parent_pose = np.broadcast_to(
                        np.array(arm.pose.bones[bone.parent.name].matrix, float), pose[pb.name].shape
                    )
                basis = np.linalg.inv(rest_rel) @ np.linalg.inv(parent_pose) @ pose[pb.name]
            location, quaternion = quaternion_keys(basis)
            pb.rotation_mode = "QUATERNION"
            base = f'pose.bones["{pb.name}"]'
            for i in range(3):
                animation.write_fcurve(bag, f"{base}.location", i, frames, location[:, i], MOTION_GROUP)
            for i in range(4):
                animation.write_fcurve(
                    bag, f"{base}.rotation_quaternion", i, frames, quaternion[:, i], MOTION_GROUP
                )
            for c in pb.constraints:
                if c.type == "IK":
                    path = f'{base}.constraints["{c.name}"].influence'
                    animation.write_fcurve(bag, path, 0, frames[:1], np.zeros(1), MOTION_GROUP, "CONSTANT")
