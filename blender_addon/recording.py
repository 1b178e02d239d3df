"""Recorded motion back in the scene: what the servos did beside what was asked.

A recording (``looprig play --record``: a looprig curves CSV/JSON of the present
positions, at the asked times, with the asked actuator names and units) is
imported as a **second action**, never into the animator's keys nor into
looprig's own action: a new action named ``looprig recording <robot>: <file>``
(tagged ``looprig_recording = <robot>``) on its own carrier object, the empty
``looprig recording <robot>`` beside the robot (not in its collection), so the
robot keeps playing the asked curves and the Graph Editor shows both. Its slot
carries, per recorded actuator,

* ``["<actuator> recorded"]`` — the present position [rad or m], one key per sample;
* ``["<actuator> error"]`` — recorded minus asked [rad or m], the asked value
  being the baked curve (linear between its keys) at the same time;

keyed at the bake's frames: time t [s] is frame ``frame_start + t * fps``.
Importing the same file again replaces its action; other recordings stay
(with a fake user) for the Action editor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import read_written

from . import animation, bake, motor_feedback
from .robot_records import RobotModel

RECORDING_KEY = "looprig_recording"
RECORDED_GROUP, ERROR_GROUP = "recorded", "error"
ERROR_COLOUR = (1.0, 0.3, 0.85)


def recorded_key(name: str) -> str:
    return f"{name} recorded"


def error_key(name: str) -> str:
    return f"{name} error"


def carrier_name(collection_name: str) -> str:
    return f"looprig recording {collection_name}"


def action_name(collection_name: str, path) -> str:
    return f"looprig recording {collection_name}: {Path(path).name}"


@dataclass
class RecordingErrors:
    """``recorded`` curves and ``errors`` (F, A) recorded minus asked [actuator unit] at its times."""

    recorded: ActuatorCurves
    errors: np.ndarray


def compute_errors(asked: ActuatorCurves, recorded: ActuatorCurves) -> RecordingErrors:
    """Recorded minus asked (linear between the asked samples) per recorded actuator (no bpy).

    Raises ValueError naming what does not match: an actuator the asked curves lack,
    another unit, or a recording outside the asked times (half a sample allowed).
    """
    missing = [n for n in recorded.names if n not in asked.names]
    if missing:
        raise ValueError(
            f"the recording's actuator(s) {', '.join(missing)} are not the robot's ({', '.join(asked.names)})"
        )
    half = 0.5 * float(np.min(np.diff(asked.times))) if asked.n_frames > 1 else 0.0
    start, end = float(asked.times[0]), float(asked.times[-1])
    if recorded.times[0] < start - half or recorded.times[-1] > end + half:
        raise ValueError(
            f"the recording spans {recorded.times[0]:.3f}..{recorded.times[-1]:.3f} s, "
            f"the bake {start:.3f}..{end:.3f} s: bake the clip that was played"
        )
    errors = np.empty_like(recorded.values)
    for k, name in enumerate(recorded.names):
        a = asked.names.index(name)
        if recorded.units[k] != asked.units[a]:
            raise ValueError(f"actuator {name!r}: recorded in {recorded.units[k]}, baked in {asked.units[a]}")
        errors[:, k] = recorded.values[:, k] - np.interp(recorded.times, asked.times, asked.values[:, a])
    return RecordingErrors(recorded, errors)


def import_recording(context, collection, model: RobotModel, path):
    """Put the recording at ``path`` on the robot as its own action (module docstring).

    Returns (the carrier object, the action, :class:`RecordingErrors`); ValueError or
    LooprigError, with nothing changed, when it does not match the robot's bake.
    """
    asked = bake.read_baked_curves(context, model)
    record = bake.bake_record(bake.baked_root(collection.name))
    result = compute_errors(asked, read_written(path).curves)  # LooprigError naming the file
    recorded = result.recorded
    frames = np.array([bake.frame_at(record, t - asked.times[0]) for t in recorded.times])
    name = action_name(collection.name, path)
    old = bpy.data.actions.get(name)
    if old is not None:
        bpy.data.actions.remove(old)
    carrier = bpy.data.objects.get(carrier_name(collection.name))
    if carrier is None:
        carrier = bpy.data.objects.new(carrier_name(collection.name), None)
        context.scene.collection.objects.link(carrier)
    ad = carrier.animation_data or carrier.animation_data_create()
    if ad.action is not None:
        ad.action.use_fake_user = True  # an earlier recording stays for the Action editor
    action = bpy.data.actions.new(name)
    action[RECORDING_KEY] = collection.name
    action.layers.new("recording").strips.new(type="KEYFRAME")
    slot = action.slots.new(id_type="OBJECT", name=carrier.name)
    ad.action, ad.action_slot = action, slot
    bag = animation.channelbag(action, slot)
    for k, actuator in enumerate(recorded.names):
        unit = recorded.units[k]
        for key, values, group in (
            (recorded_key(actuator), recorded.values[:, k], RECORDED_GROUP),
            (error_key(actuator), result.errors[:, k], ERROR_GROUP),
        ):
            carrier[key] = float(values[0])
            what = "present position" if group == RECORDED_GROUP else "recorded minus asked"
            carrier.id_properties_ui(key).update(description=f"{actuator}: {what} [{unit}]")
            fc = animation.write_fcurve(bag, motor_feedback.property_path(key), 0, frames, values, group)
            if group == ERROR_GROUP:
                fc.color_mode, fc.color = "CUSTOM", ERROR_COLOUR
    return carrier, action, result
