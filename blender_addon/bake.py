"""Bake: the robot's motion in the scene -> one F-curve per actuator, checked against limits.

:func:`compute_bake` (no bpy) reads the actuator values off sampled body
states with core's read-off, unwraps them and checks every limit.
:func:`write_bake` writes, on the robot's root object,

* ``["<actuator>"]`` — the actuator value in its unit (rad or m), one key per sample;
* ``["<actuator> velocity"]`` — its velocity (rad/s or m/s);
* ``["<actuator> over range"]``, ``["<actuator> over velocity"]``,
  ``["<actuator> over acceleration"]`` — 1 where that limit is broken, else 0
  (they drive the motor's tint, see :mod:`.motor_feedback`);

coloured (red when the actuator breaks a limit), with the violating velocity
keys typed EXTREME, a timeline marker ``looprig <robot>: <actuator> <quantity>
<seconds> s`` at the start of each violation, and per-actuator and
per-violation lines in ``scene.looprig`` for the panel. Each robot's bake is
its own: the root's ``looprig_bake`` record names the robot, and clearing one
robot's bake leaves the others'. All of it persists in the file, so it is
there without any window.

``<actuator>`` is the motor's name as the robot names it (the joint's *Motor
Name*, which a file import sets from the file's actuator), else its joint's:
:attr:`~looprig.core.model.mechanism.Mechanism.actuator_names`, as every export names
its curves.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import bpy
import numpy as np
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import all_violations
from looprig.core.curves.violations import Violation
from looprig.core.export import DynamixelSettings
from looprig.core.model.readoff import ActuatorReadout

from . import animation, motor_feedback
from .robot_records import RobotModel

MARKER_PREFIX = "looprig: "
BAKE_KEY = "looprig_bake"
GROUP = "looprig actuators"
#: Curve colours: actuators within their limits cycle through these; violators are red.
PALETTE = ((0.25, 0.65, 1.0), (0.35, 0.85, 0.35), (0.95, 0.75, 0.2), (0.75, 0.45, 1.0), (0.2, 0.85, 0.85))
RED = (1.0, 0.12, 0.1)
VELOCITY_RED = (1.0, 0.45, 0.4)


def velocity_key(name: str) -> str:
    """Custom property (and curve) of actuator ``name``'s velocity on the root."""
    return f"{name} velocity"


def velocity_path(name: str) -> str:
    return motor_feedback.property_path(velocity_key(name))


def value_path(name: str) -> str:
    return motor_feedback.property_path(name)


@dataclass
class BakeResult:
    """Actuator curves sampled at ``frames`` (F,) scene frames, their velocities (F, A)
    and every limit violation (core's :class:`Violation`, times in seconds from the
    first sample)."""

    curves: ActuatorCurves
    velocities: np.ndarray
    violations: list[Violation]
    frames: np.ndarray
    fps: float

    def frame_of(self, time: float) -> float:
        """Scene frame of a time [s] of the curves."""
        return float(self.frames[0] + (time - self.curves.times[0]) * self.fps)


def compute_bake(model: RobotModel, states: np.ndarray, frames: np.ndarray, rate: float, fps: float):
    """Actuator curves of body states (F, n, 7) sampled at ``rate`` [Hz] (no bpy)."""
    mechanism = model.mechanism
    values = ActuatorReadout(mechanism).read(states)
    curves = ActuatorCurves.from_mechanism(mechanism, values, rate, 0.0, unwrap=True)
    velocities = curves.velocities() if curves.n_frames > 1 else np.zeros_like(curves.values)
    return BakeResult(curves, velocities, all_violations(curves), np.asarray(frames, float), fps)


def dynamixel_settings(model: RobotModel, mode: str = "extended_position") -> DynamixelSettings:
    """Dynamixel settings from the actuators' zero offset, direction and travel per turn."""
    return DynamixelSettings.from_mechanism(model.mechanism, mode=mode)


# --------------------------------------------------------------------------- scene side
def time_label(frame: float, seconds: float) -> str:
    """A time as the animator and the exports both read it: ``frame 16 (0.62 s)``."""
    return f"frame {frame:.4g} ({seconds:.2f} s)"


def frame_at(record: dict, seconds: float) -> float:
    """Scene frame of a time [s] of a bake (its ``looprig_bake`` record)."""
    return float(record["frame_start"] + seconds * record["fps"])


def marker_prefix(collection_name: str) -> str:
    """Timeline markers of one robot's bake start with this."""
    return f"{MARKER_PREFIX.rstrip(': ')} {collection_name}: "


def bake_record(ob) -> dict | None:
    """The bake an object carries (robot, actuators, timing, tinted objects, markers), or None."""
    if BAKE_KEY not in ob.keys():
        return None
    return json.loads(ob[BAKE_KEY])


def baked_root(collection_name: str):
    """The object carrying the bake of the robot ``collection_name``, or None."""
    for ob in bpy.data.objects:
        record = bake_record(ob)
        if record is not None and record.get("robot") == collection_name:
            return ob
    return None


def root_object(context, model: RobotModel):
    """The object carrying the baked curves: the chosen root, else the grounded body."""
    settings = context.scene.looprig
    if settings.root is not None:
        return settings.root
    for body in model.record.bodies:
        if body.grounded and not body.bone_name:
            return context.scene.objects.get(body.object_name)
    for body in model.record.bodies:
        return context.scene.objects.get(body.object_name)
    return None


def bake_root(context, collection, model: RobotModel):
    """The root for a bake of ``collection``; ValueError when it carries another robot's."""
    root = root_object(context, model)
    if root is None:
        raise ValueError(f"robot {collection.name!r} has no object to carry the baked curves")
    record = bake_record(root)
    if record is not None and record.get("robot") not in (None, collection.name):
        raise ValueError(
            f"{root.name!r} carries the bake of robot {record['robot']!r}: pick another Root "
            f"for robot {collection.name!r} in the looprig panel (Bake & Export)"
        )
    return root


def clear_bake(context, collection) -> None:
    """Remove one robot's bake: its curves and properties on its root, its markers, tints,
    in-front markers and panel lines. Other robots' bakes stay."""
    scene = context.scene
    prefix = marker_prefix(collection.name)
    for marker in list(scene.timeline_markers):
        if marker.name.startswith(prefix):
            scene.timeline_markers.remove(marker)
    root = baked_root(collection.name)
    if root is not None:
        record = bake_record(root)
        for name in record.get("tinted", []):
            ob = bpy.data.objects.get(name)
            if ob is not None:
                motor_feedback.untint(ob)
        for name in record.get("markers", []):
            motor_feedback.remove_marker(name)
        ad = root.animation_data
        bag = None
        if ad is not None and animation.is_looprig_action(ad.action) and ad.action_slot is not None:
            bag = animation.channelbag(ad.action, ad.action_slot)
        for name in record.get("actuators", []):
            keys = [name, velocity_key(name)]
            keys += [motor_feedback.over_key(name, kind) for kind in motor_feedback.KINDS]
            for key in keys:
                fc = bag.fcurves.find(motor_feedback.property_path(key)) if bag is not None else None
                if fc is not None:
                    bag.fcurves.remove(fc)
                if key in root.keys():
                    del root[key]
        del root[BAKE_KEY]
    for items in (scene.looprig.actuators, scene.looprig.violations):
        for i in reversed(range(len(items))):
            if items[i].robot == collection.name:
                items.remove(i)


def violation_masks(result: BakeResult, actuator: str) -> dict[str, np.ndarray]:
    """Per kind of limit, (F,) True at the samples inside a violation of ``actuator``."""
    t = result.curves.times
    masks = {kind: np.zeros(len(t), bool) for kind in motor_feedback.KINDS}
    for v in result.violations:
        if v.actuator == actuator and v.quantity in masks:
            masks[v.quantity] |= (t >= v.start_time - 1e-9) & (t <= v.end_time + 1e-9)
    return masks


def write_bake(context, collection, model: RobotModel, result: BakeResult, tint: bool = True):
    """Write a bake into the scene (see the module docstring); returns the root object."""
    scene = context.scene
    root = bake_root(context, collection, model)
    clear_bake(context, collection)
    action = animation.find_action(collection) or animation.new_action(collection)
    bag = animation.take_over(root, action)
    curves = result.curves
    frames = result.frames
    by_actuator: dict[str, list[Violation]] = {}
    for v in result.violations:
        by_actuator.setdefault(v.actuator, []).append(v)
    robot_objects = [o for o in collection.all_objects if o.type == "MESH"]
    tinted, markers = [], []
    for a, name in enumerate(curves.names):
        unit = curves.units[a]
        values = curves.values[:, a]
        velocity = result.velocities[:, a]
        limit = curves.velocity_limit[a]
        masks = violation_masks(result, name)
        violations = by_actuator.get(name, [])
        broken = bool(violations)
        root[name] = float(values[0])
        root[velocity_key(name)] = float(velocity[0])
        root.id_properties_ui(name).update(description=f"actuator {name} [{unit}], baked by looprig")
        root.id_properties_ui(velocity_key(name)).update(description=f"velocity of {name} [{unit}/s]")
        colour = RED if broken else PALETTE[a % len(PALETTE)]
        fc = animation.write_fcurve(bag, value_path(name), 0, frames, values, GROUP)
        _colour(fc, colour)
        over = masks["velocity"]
        key_types = np.where(over, animation.KEY_TYPE["EXTREME"], animation.KEY_TYPE["KEYFRAME"])
        fc = animation.write_fcurve(bag, velocity_path(name), 0, frames, velocity, GROUP, key_types=key_types)
        _colour(fc, VELOCITY_RED if over.any() else tuple(0.6 * c + 0.4 for c in colour))
        for kind, mask in masks.items():
            root[motor_feedback.over_key(name, kind)] = 0.0
            fc = animation.write_fcurve(
                bag,
                motor_feedback.over_path(name, kind),
                0,
                frames,
                mask.astype(float),
                GROUP,
                interpolation="CONSTANT",
            )
            fc.hide = True
        for v in violations:
            frame = result.frame_of(v.start_time)
            scene.timeline_markers.new(
                f"{marker_prefix(collection.name)}{name} {v.quantity} {v.start_time:.2f} s",
                frame=round(frame),
            )
            _add_violation(scene.looprig.violations, collection.name, v, result)
        motor = motor_feedback.motor_object(context, model, name)
        item = scene.looprig.actuators.add()
        item.name = name
        item.robot = collection.name
        item.unit = unit
        item.minimum, item.maximum = float(values.min()), float(values.max())
        item.peak_velocity = float(np.abs(velocity).max())
        item.velocity_limit = float(limit) if math.isfinite(limit) else 0.0
        item.violation_count = len(violations)
        item.first_violation_frame = result.frame_of(violations[0].start_time) if violations else -1.0
        item.first_violation_time = violations[0].start_time if violations else -1.0
        item.motor_object = motor.name if motor is not None else ""
        item.intervals = json.dumps(
            [
                [result.frame_of(v.start_time), result.frame_of(v.end_time)]
                for v in violations
                if v.quantity == "velocity"
            ]
        )
        if tint and motor is not None:
            motor_feedback.tint(motor, root, name)
            tinted.append(motor.name)
            if motor_feedback.is_hidden(motor, robot_objects):
                marker = motor_feedback.add_marker(context, motor)
                motor_feedback.tint(marker, root, name)
                markers.append(marker.name)
    root[BAKE_KEY] = json.dumps(
        {
            "robot": collection.name,
            "actuators": list(curves.names),
            "rate": curves.rate_hz or 0.0,
            "frame_start": float(frames[0]),
            "frame_count": len(frames),
            "fps": result.fps,
            "tinted": sorted(set(tinted)),
            "markers": sorted(set(markers)),
        }
    )
    if tint:
        _show_object_colours()
    return root


def _add_violation(items, robot: str, v: Violation, result: BakeResult) -> None:
    item = items.add()
    item.name = v.actuator
    item.robot = robot
    item.quantity = v.quantity
    item.frame, item.end_frame = result.frame_of(v.start_time), result.frame_of(v.end_time)
    item.time, item.end_time = v.start_time, v.end_time
    item.peak, item.limit, item.unit = v.peak, v.limit, v.unit


def _colour(fc, colour) -> None:
    fc.color_mode = "CUSTOM"
    fc.color = colour


def _show_object_colours() -> None:
    """Solid-shaded 3D views show object colours (the tint)."""
    for screen in bpy.data.screens:
        for area in screen.areas:
            for space in area.spaces:
                if space.type == "VIEW_3D" and space.shading.type == "SOLID":
                    space.shading.color_type = "OBJECT"


def read_baked_curves(context, model: RobotModel) -> ActuatorCurves:
    """The baked actuator curves on the root, with the limits the robot has now.

    Raises ValueError when nothing is baked or the robot's actuators changed.
    """
    root = baked_root(model.record.name)
    if root is None:
        raise ValueError("nothing baked yet: run Bake first")
    bake = bake_record(root)
    names = model.mechanism.actuator_names
    if list(bake["actuators"]) != list(names):
        raise ValueError(
            f"the robot's actuators ({', '.join(names)}) differ from the baked ones "
            f"({', '.join(bake['actuators'])}): bake again"
        )
    ad = root.animation_data
    bag = animation.channelbag(ad.action, ad.action_slot) if ad and ad.action and ad.action_slot else None
    n = int(bake["frame_count"])
    frames = bake["frame_start"] + np.arange(n) * bake["fps"] / bake["rate"]
    values = np.empty((n, len(names)))
    for a, name in enumerate(names):
        fc = bag.fcurves.find(value_path(name)) if bag is not None else None
        if fc is None:
            raise ValueError(f"the baked curve of actuator {name!r} is gone from {root.name!r}: bake again")
        if len(fc.keyframe_points) == n:
            values[:, a] = animation.read_fcurve(fc)[1]
        else:
            values[:, a] = [fc.evaluate(f) for f in frames]
    template = ActuatorCurves.from_mechanism(model.mechanism, values, bake["rate"], 0.0, unwrap=False)
    return template
