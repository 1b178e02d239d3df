"""The demo scene: a four-bar built from Rigid Body Constraints, a target on its coupler curve.

The robot is the reference four-bar of ``looprig.core.library`` (ground 0.3 m,
crank 0.1 m, coupler 0.35 m, rocker 0.3 m, crank motor limited to
``CRANK_VELOCITY_LIMIT``), built the way an animator would: four box meshes
joined by four HINGE constraints, an Empty ``coupler_point`` parented to the
coupler. An Empty ``hand`` is keyed along the coupler curve for one crank turn
in ``seconds`` with an eased (1 - cos) timing, so the crank is too fast in the
middle of the clip, over a frame range known in closed form
(:func:`violation_frames`).

``python -m looprig.blender_addon.demo`` (:mod:`.demo`) builds it from a shell.
"""

from __future__ import annotations

import math

import bpy
import numpy as np
from looprig.core.library.planar import fourbar_closed_form
from mathutils import Matrix

from . import scene_build

GROUND, CRANK, COUPLER, ROCKER = 0.3, 0.1, 0.35, 0.3
CRANK_START = math.pi / 2  # crank angle of the initial configuration [rad]
CRANK_VELOCITY_LIMIT = 4.0  # [rad/s]
COUPLER_OFFSET = 0.05  # the coupler point sits 5 cm off the coupler's midline [m]


def fourbar_points(crank_angle):
    """Pivots A (crank-coupler), B (coupler-rocker) and the coupler point, (..., 3) [m]."""
    theta = np.asarray(crank_angle, dtype=float)
    _, B2 = fourbar_closed_form(theta, GROUND, CRANK, COUPLER, ROCKER)
    zeros = np.zeros_like(theta)
    A = np.stack([CRANK * np.cos(theta), CRANK * np.sin(theta), zeros], -1)
    B = np.stack([B2[..., 0], B2[..., 1], zeros], -1)
    along = (B - A) / np.linalg.norm(B - A, axis=-1, keepdims=True)
    normal = np.stack([-along[..., 1], along[..., 0], zeros], -1)  # z x along
    return A, B, 0.5 * (A + B) + COUPLER_OFFSET * normal


def crank_motion(t, seconds: float):
    """Crank angle [rad] and speed [rad/s] at times t [s]: one eased turn,
    ``theta = theta0 + pi (1 - cos(pi t / T))``, so ``omega = (pi^2 / T) sin(pi t / T)``."""
    t = np.asarray(t, dtype=float)
    angle = CRANK_START + math.pi * (1.0 - np.cos(math.pi * t / seconds))
    speed = (math.pi**2 / seconds) * np.sin(math.pi * t / seconds)
    return angle, speed


def violation_frames(seconds: float, fps: float, frame_start: int = 1, limit: float = CRANK_VELOCITY_LIMIT):
    """Scene frames (integers) at which the crank speed exceeds ``limit`` (closed form)."""
    frames = np.arange(frame_start, frame_start + round(seconds * fps) + 1)
    _, speed = crank_motion((frames - frame_start) / fps, seconds)
    return frames[np.abs(speed) > limit]


def build_fourbar(context, name: str = "fourbar"):
    """The four-bar as mesh bodies and HINGE constraints in a new collection; returns it."""
    collection = scene_build.new_collection(context, name)
    A, B, P = (p for p in fourbar_points(CRANK_START))
    O2, O4 = np.zeros(3), np.array([GROUND, 0.0, 0.0])
    ground = scene_build.bar_object(
        "ground", O2 - [0.03, 0, 0], O4 + [0.03, 0, 0], 0.04, 0.02, collection, -0.03
    )
    ground.looprig_body.grounded = True
    crank = scene_build.bar_object("crank", O2, A, 0.02, 0.01, collection, 0.0)
    coupler = scene_build.bar_object("coupler", A, B, 0.02, 0.01, collection, 0.015)
    rocker = scene_build.bar_object("rocker", O4, B, 0.02, 0.01, collection, 0.0)
    for ob, colour in (
        (ground, (0.35, 0.35, 0.38, 1)),
        (crank, (0.9, 0.6, 0.2, 1)),
        (coupler, (0.3, 0.6, 0.9, 1)),
        (rocker, (0.5, 0.8, 0.4, 1)),
    ):
        ob.color = colour
    hinges = (
        ("crank_joint", ground, crank, O2),
        ("coupler_joint", crank, coupler, A),
        ("rocker_coupler_joint", coupler, rocker, B),
        ("rocker_joint", ground, rocker, O4),
    )
    joints = [
        scene_build.constraint_object(
            context, joint, "HINGE", parent, child, Matrix.Translation(anchor.tolist()), collection
        )
        for joint, parent, child, anchor in hinges
    ]
    motor = joints[0].looprig_joint
    motor.actuated = True
    motor.velocity_limit = CRANK_VELOCITY_LIMIT
    motor.hardware_id = "1"
    scene_build.frame_object("coupler_point", coupler, Matrix.Translation(P.tolist()), collection)
    return collection


def animate_target(context, name: str = "hand", seconds: float = 2.0, frame_start: int = 1):
    """An Empty keyed at every frame on the coupler curve (linear keys); returns it."""
    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    frames = np.arange(frame_start, frame_start + round(seconds * fps) + 1, dtype=float)
    angle, _ = crank_motion((frames - frame_start) / fps, seconds)
    _, _, P = fourbar_points(angle)
    target = bpy.data.objects.new(name, None)
    target.empty_display_type = "SPHERE"
    target.empty_display_size = 0.015
    scene.collection.objects.link(target)
    target.location = P[0].tolist()
    # the animator's own action, keyed the usual way
    target.keyframe_insert("location", frame=frame_start)
    bag = target.animation_data.action.layers[0].strips[0].channelbag(target.animation_data.action_slot)
    for i in range(3):
        fc = bag.fcurves.find("location", index=i)
        fc.keyframe_points.clear()
        fc.keyframe_points.add(len(frames))
        co = np.empty(2 * len(frames), np.float32)
        co[0::2], co[1::2] = frames, P[:, i]
        fc.keyframe_points.foreach_set("co", co)
        fc.keyframe_points.foreach_set("interpolation", np.ones(len(frames), np.int32))
        fc.update()
    scene.frame_start, scene.frame_end = frame_start, int(frames[-1])
    return target


def setup_demo(context, seconds: float = 2.0):
    """Build the four-bar, the animated target and the looprig settings; returns the collection."""
    scene = context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    collection = build_fourbar(context)
    target = animate_target(context, seconds=seconds)
    settings = scene.looprig
    settings.robot = collection
    settings.targets.clear()
    item = settings.targets.add()
    item.name = "coupler"
    item.frame = "coupler_point"
    item.target = target
    item.position_weight = (1.0, 1.0, 1.0)
    settings.state_weight = 1e-6
    return collection
