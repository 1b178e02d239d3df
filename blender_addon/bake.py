"""Bake: the robot's motion in the scene -> one F-curve per actuator, checked against limits.

:func:`compute_bake` (no bpy) reads the actuator values off sampled body
states with core's read-off, unwraps them and checks every limit.
:func:`write_bake` writes, on the robot's root object,

* ``["<actuator>"]`` — the actuator value in its unit (rad or m), one key per sample;
* ``["<actuator> velocity"]`` — its velocity (rad/s or m/s);
* ``["<actuator> over limit"]`` — 1 where the velocity limit is exceeded, else 0
  (drives the red tint of the motor in the viewport);

coloured (red when the actuator breaks a limit), with the violating velocity
keys typed EXTREME, a timeline marker ``looprig: <actuator> <quantity>`` at
the start of each violation, and a per-actuator summary in ``scene.looprig``.
All of it persists in the file, so it is there without any window.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import bpy
import numpy as np
from looprig.core.curves import ActuatorCurves, Violation, all_violations
from looprig.core.export import DynamixelSettings
from looprig.core.readoff import ActuatorReadout

from . import animation
from .robot_model import RobotModel

MARKER_PREFIX = "looprig: "
BAKE_KEY = "looprig_bake"
COLOR_KEY = "looprig_color"
GROUP = "looprig actuators"
#: Curve colours: actuators within their limits cycle through these; violators are red.
PALETTE = ((0.25, 0.65, 1.0), (0.35, 0.85, 0.35), (0.95, 0.75, 0.2), (0.75, 0.45, 1.0), (0.2, 0.85, 0.85))
RED = (1.0, 0.12, 0.1)
VELOCITY_RED = (1.0, 0.45, 0.4)
TINT = (1.0, 0.05, 0.05)


def velocity_path(name: str) -> str:
    return f'["{name} velocity"]'


def value_path(name: str) -> str:
    return f'["{name}"]'


def over_path(name: str) -> str:
    return f'["{name} over limit"]'


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


def motor_object(context, model: RobotModel, joint_name: str):
    """The object tinted when actuator ``joint_name`` is too fast."""
    joint = next(j for j in model.record.joints if j.name == joint_name)
    source = context.scene.objects.get(joint.object_name)
    if source is not None and not joint.bone_name and source.looprig_joint.motor_object is not None:
        return source.looprig_joint.motor_object
    child = next((b for b in model.record.bodies if b.name == joint.child), None)
    return None if child is None else context.scene.objects.get(child.object_name)


def clear_bake(context, collection=None) -> None:
    """Remove looprig's markers, tint drivers, baked curve properties and summaries."""
    scene = context.scene
    for marker in list(scene.timeline_markers):
        if marker.name.startswith(MARKER_PREFIX):
            scene.timeline_markers.remove(marker)
    for ob in bpy.data.objects:
        if COLOR_KEY in ob.keys():
            ad = ob.animation_data
            if ad is not None:
                for fc in list(ad.drivers):
                    if fc.data_path == "color":
                        ad.drivers.remove(fc)
            ob.color = list(ob[COLOR_KEY])
            del ob[COLOR_KEY]
        if BAKE_KEY in ob.keys():
            names = json.loads(ob[BAKE_KEY]).get("actuators", [])
            ad = ob.animation_data
            bag = None
            if ad is not None and animation.is_looprig_action(ad.action) and ad.action_slot is not None:
                bag = animation.channelbag(ad.action, ad.action_slot)
            for name in names:
                for path in (value_path(name), velocity_path(name), over_path(name)):
                    fc = bag.fcurves.find(path) if bag is not None else None
                    if fc is not None:
                        bag.fcurves.remove(fc)
                for key in (name, f"{name} velocity", f"{name} over limit"):
                    if key in ob.keys():
                        del ob[key]
            del ob[BAKE_KEY]
    scene.looprig.actuators.clear()


def write_bake(context, collection, model: RobotModel, result: BakeResult, tint: bool = True):
    """Write a bake into the scene (see the module docstring); returns the root object."""
    scene = context.scene
    clear_bake(context, collection)
    root = root_object(context, model)
    action = animation.find_action(collection) or animation.new_action(collection)
    bag = animation.take_over(root, action)
    curves = result.curves
    frames = result.frames
    by_actuator: dict[str, list[Violation]] = {}
    for v in result.violations:
        by_actuator.setdefault(v.actuator, []).append(v)
    for a, name in enumerate(curves.names):
        unit = curves.units[a]
        values = curves.values[:, a]
        velocity = result.velocities[:, a]
        limit = curves.velocity_limit[a]
        over = np.abs(velocity) > limit if math.isfinite(limit) else np.zeros(len(velocity), bool)
        violations = by_actuator.get(name, [])
        broken = bool(violations)
        root[name] = float(values[0])
        root[f"{name} velocity"] = float(velocity[0])
        root[f"{name} over limit"] = 0.0
        root.id_properties_ui(name).update(description=f"actuator {name} [{unit}], baked by looprig")
        root.id_properties_ui(f"{name} velocity").update(description=f"velocity of {name} [{unit}/s]")
        colour = RED if broken else PALETTE[a % len(PALETTE)]
        fc = animation.write_fcurve(bag, value_path(name), 0, frames, values, GROUP)
        _colour(fc, colour)
        key_types = np.where(over, animation.KEY_TYPE["EXTREME"], animation.KEY_TYPE["KEYFRAME"])
        fc = animation.write_fcurve(bag, velocity_path(name), 0, frames, velocity, GROUP, key_types=key_types)
        _colour(fc, VELOCITY_RED if over.any() else tuple(0.6 * c + 0.4 for c in colour))
        fc = animation.write_fcurve(
            bag, over_path(name), 0, frames, over.astype(float), GROUP, interpolation="CONSTANT"
        )
        fc.hide = True
        for v in violations:
            scene.timeline_markers.new(
                f"{MARKER_PREFIX}{name} {v.quantity}", frame=round(result.frame_of(v.start_time))
            )
        motor = motor_object(context, model, name)
        item = scene.looprig.actuators.add()
        item.name = name
        item.unit = unit
        item.minimum, item.maximum = float(values.min()), float(values.max())
        item.peak_velocity = float(np.abs(velocity).max())
        item.velocity_limit = float(limit) if math.isfinite(limit) else 0.0
        item.violation_count = len(violations)
        item.first_violation_frame = result.frame_of(violations[0].start_time) if violations else -1.0
        item.motor_object = motor.name if motor is not None else ""
        item.intervals = json.dumps(
            [
                [result.frame_of(v.start_time), result.frame_of(v.end_time)]
                for v in violations
                if v.quantity == "velocity"
            ]
        )
        if tint and motor is not None:
            _tint_driver(motor, root, name)
    root[BAKE_KEY] = json.dumps(
        {
            "actuators": list(curves.names),
            "rate": curves.rate_hz or 0.0,
            "frame_start": float(frames[0]),
            "frame_count": len(frames),
            "fps": result.fps,
        }
    )
    if tint:
        _show_object_colours()
    return root


def _colour(fc, colour) -> None:
    fc.color_mode = "CUSTOM"
    fc.color = colour


def _tint_driver(ob, root, actuator: str) -> None:
    """Drive ``ob.color`` towards red by the actuator's "over limit" curve."""
    if COLOR_KEY not in ob.keys():
        ob[COLOR_KEY] = list(ob.color)
    base = list(ob[COLOR_KEY])
    ad = ob.animation_data or ob.animation_data_create()
    existing = {(fc.data_path, fc.array_index): fc for fc in ad.drivers}
    for i in range(3):
        fc = existing.get(("color", i)) or ob.driver_add("color", i)
        driver = fc.driver
        driver.type = "SCRIPTED"
        names = [v.name for v in driver.variables]
        var = driver.variables.new()
        var.name = f"o{len(names)}"
        var.type = "SINGLE_PROP"
        var.targets[0].id_type = "OBJECT"
        var.targets[0].id = root
        var.targets[0].data_path = over_path(actuator)
        names.append(var.name)
        over = names[0] if len(names) == 1 else f"max({', '.join(names)})"
        driver.expression = f"{base[i]:.4f} * (1 - {over}) + {TINT[i]:.4f} * {over}"


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
    root = root_object(context, model)
    if root is None or BAKE_KEY not in root.keys():
        raise ValueError("nothing baked yet: run Bake first")
    bake = json.loads(root[BAKE_KEY])
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
