"""Retarget workflow: sample the targets, solve with core, key the robot in its own action.

From the UI the retarget runs as a modal operator: the solve runs in a worker
thread (core is pure numpy, it touches no Blender data), the status bar shows
its progress and Esc cancels; keys are written on the main thread at the end,
so the whole retarget is one undo step and a cancelled one changes nothing.
From scripts and in background mode the same operator runs synchronously.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import bpy
import numpy as np
from looprig.core.errors import LooprigError
from looprig.core.model.primitives import mean_joint_distance
from looprig.core.retarget import ComSpec, RetargetCancelled, RetargetMapping, TargetSpec
from mathutils import Euler

from looprig.retime import retiming_lines, solve_timed

from . import aims, animation, bake, frame_status, motion, retime, status_display
from .operators_robot import RobotCollectionOperator, RobotError, checked_model, checked_row, robot_collection
from .properties import solver_settings
from .robot_records import RobotModel
from .sampling import Clip, Source, iter_world_matrices, make_clip, samples_from_matrices, track_samples
from .scene_data import unit_scale
from .scene_graph import animated_objects


@dataclass
class RetargetInputs:
    """Everything a retarget needs, read from the scene as plain values."""

    collection_name: str
    model: RobotModel
    clip: Clip
    mapping: RetargetMapping
    samples: object  # looprig.core.retarget.TrackSamples
    bake: bool
    tint: bool
    pins: tuple[float, ...] = ()  # clip times [s] kept at their times (timing stretch: the markers)


def track_name(ob, bone: str = "") -> str:
    return f"{ob.name}:{bone}" if bone else ob.name


def frame_range(scene) -> tuple[int, int]:
    settings = scene.looprig
    if settings.use_scene_range:
        return scene.frame_start, scene.frame_end
    return settings.frame_start, settings.frame_end


def read_mapping(context, model: RobotModel, rate: float) -> tuple[RetargetMapping, list[Source]]:
    """The targets and settings of ``scene.looprig`` as a core mapping, and what to sample."""
    scene = context.scene
    settings = scene.looprig
    s = unit_scale(scene)
    mechanism = model.mechanism
    robot_objects = {b.object_name for b in model.record.bodies}
    valid = sorted(set(mechanism.body_names) | {f.name for f in mechanism.frames})
    specs, sources = [], {}
    aim_specs, aim_sources, aimed = aims.read_aims(settings, valid, robot_objects)
    for i, t in enumerate(settings.targets):
        if not t.enabled:
            continue
        label = f"target {i + 1}" + (f" ({t.frame})" if t.frame else "")
        checked_row(label, t, valid, robot_objects, "it drives", "the animated object it follows", "target ")
        if t.bone and (t.target.type != "ARMATURE" or t.bone not in t.target.data.bones):
            raise RobotError(f"{label}: {t.target.name!r} has no bone {t.bone!r}")
        name = track_name(t.target, t.bone)
        sources[name] = Source(name, t.target.name, t.bone)
        q = Euler(t.offset_rotation).to_quaternion()
        specs.append(
            TargetSpec(
                track=name,
                frame=t.frame,
                position_weight=tuple(t.position_weight),
                orientation_weight=(0.0, 0.0, 0.0) if i in aimed else tuple(t.orientation_weight),
                offset_position=tuple(float(x) * s for x in t.offset_location),
                offset_rotation=(q.w, q.x, q.y, q.z),
            )
        )
    com = None
    if settings.use_com:
        if settings.com_target is None:
            raise RobotError("centre of mass: pick the object whose position the CoM follows")
        name = track_name(settings.com_target)
        sources[name] = Source(name, settings.com_target.name)
        com = ComSpec(weight=tuple(settings.com_weight), track=name)
    sources.update({s.name: s for s in aim_sources})
    if not specs and com is None and not aim_specs:
        raise RobotError("no targets: add a target (robot frame <- animated object) in the looprig panel")
    mapping = RetargetMapping(
        targets=tuple(specs),
        aims=tuple(aim_specs),
        com=com,
        rate=rate,
        **solver_settings(settings),
    )
    return mapping, list(sources.values())


def read_inputs(context, sample: bool = True) -> tuple[RetargetInputs, list[Source]]:
    """Check the robot and read the targets (and sample them, with ``sample``); raises
    RobotError with the animator's wording. Returns the inputs and what to sample."""
    collection = robot_collection(context)
    model = checked_model(context)
    if not model.mechanism.actuated_joints:
        raise RobotError(
            f"robot {collection.name!r} has no motor: tick 'Actuated' in the looprig joint settings "
            "of the constraints (or bones) that carry one"
        )
    scene = context.scene
    start, end = frame_range(scene)
    if end < start:
        raise RobotError(f"frame range {start}..{end} is empty")
    clip = make_clip(scene, start, end, scene.looprig.rate or None)
    mapping, sources = read_mapping(context, model, clip.rate)
    samples = track_samples(context, sources, clip) if sample else None
    settings = scene.looprig
    pins = retime.marker_pins(scene, clip) if mapping.timing == "stretch" else ()
    inputs = RetargetInputs(
        collection.name,
        model,
        clip,
        mapping,
        samples,
        settings.bake_after_retarget,
        settings.tint_motors,
        pins,
    )
    return inputs, sources


def solve(inputs: RetargetInputs, progress=None, cancel=None):
    """The pure part: core's retarget on plain inputs (safe in a worker thread), retimed
    with the markers as pins when the timing is stretch (``inputs.samples`` becomes the
    tracks solved, along the new timing)."""
    mechanism = inputs.model.mechanism
    timed = solve_timed(
        mechanism, inputs.samples, inputs.mapping, inputs.pins, progress=progress, cancel=cancel
    )
    inputs.samples = timed.samples
    return timed.result


#: Length of the ghost triads drawn on limited and unreachable frames, as a fraction of the
#: robot's mean joint distance.
GHOST_AXIS_FRACTION = 0.25


def apply_result(context, inputs: RetargetInputs, result) -> str:
    """Write the solved motion, its per-frame status (and the bake) into the scene; returns
    a status line."""
    collection = bpy.data.collections.get(inputs.collection_name)
    if collection is None:
        raise RobotError(f"the robot collection {inputs.collection_name!r} is gone")
    clip = inputs.clip
    frames = clip.frame_start + (np.asarray(result.times) - result.times[0]) * clip.fps
    # everything is computed (and the bake's root checked) before anything is written
    status = frame_status.compute_frame_status(result, frames)
    record = frame_status.ghost_record(
        status,
        frame_status.asked_poses(inputs.mapping, inputs.samples),
        frame_status.robot_poses(inputs.model.mechanism, inputs.mapping, result.states),
        GHOST_AXIS_FRACTION * mean_joint_distance(inputs.model.mechanism),
    )
    baked = None
    if inputs.bake:
        baked = bake.compute_bake(inputs.model, result.states, frames, clip.rate, clip.fps)
        bake.bake_root(context, collection, inputs.model)
    bake.clear_bake(context, collection)
    action = motion.write_robot_motion(context, collection, inputs.model, result.states, frames)
    status_display.write_status(context, collection.name, action, status, record)
    summary = result.summary()
    mean_mm, max_mm = summary["mean_position_error_m"] * 1000, summary["max_position_error_m"] * 1000
    status = (
        f"retargeted {summary['frames']} samples at {clip.rate:g} Hz: "
        f"position error mean {mean_mm:.3g} mm, max {max_mm:.3g} mm"
    )
    if summary["limited_frames"]:
        status += f"; {summary['limited_frames']} sample(s) limited"
    if summary["unreachable_frames"]:
        status += f"; {summary['unreachable_frames']} sample(s) unreachable"
    retimed = retime.retiming_status(result.retiming, clip)
    if retimed:
        status += f"; {retimed}"
    if baked is not None:
        bake.write_bake(context, collection, inputs.model, baked, tint=inputs.tint)
        status += (
            f"; baked {baked.curves.n_actuators} actuator(s), {len(baked.violations)} limit violation(s)"
        )
    context.scene.looprig.status = status
    return status


def unreachable_warnings(inputs: RetargetInputs, result) -> list[str]:
    """One line per target missed on unreachable samples (outside the workspace; not the
    samples a motor limit keeps from their targets), naming it and the first frame (and second)."""
    lines = []
    tolerance = inputs.mapping.reach_tolerance
    unreachable = np.asarray(result.unreachable, bool)
    for k, spec in enumerate(inputs.mapping.targets):
        missed = np.flatnonzero((result.position_error[:, k] > tolerance) & unreachable)
        if len(missed):
            seconds = result.times[missed[0]] - result.times[0]
            frame = inputs.clip.frame_start + seconds * inputs.clip.fps
            worst = result.position_error[missed, k].max() * 1000
            lines.append(
                f"target {spec.frame!r} <- {spec.track!r} out of reach at {len(missed)} sample(s), "
                f"from {bake.time_label(frame, seconds)}, by up to {worst:.3g} mm"
            )
    for k, aim in enumerate(inputs.mapping.aims):
        missed = np.flatnonzero((result.aim_miss[:, k] > tolerance) & unreachable)
        if len(missed):
            seconds = result.times[missed[0]] - result.times[0]
            frame = inputs.clip.frame_start + seconds * inputs.clip.fps
            worst = np.degrees(result.aim_error[missed, k].max())
            lines.append(
                f"aim {aim.frame!r} -> {aim.source} out of reach at {len(missed)} sample(s), "
                f"from {bake.time_label(frame, seconds)}, by up to {worst:.3g} degrees"
            )
    return lines


def limited_warning(inputs: RetargetInputs, result) -> str | None:
    """One line on the samples a motor limit keeps from their targets: how many, which motors
    and limits bind, from when and by how much; None when there are none."""
    frames = inputs.clip.frame_start + (np.asarray(result.times) - result.times[0]) * inputs.clip.fps
    status = frame_status.compute_frame_status(result, frames)
    stretches = [s for s in status.stretches if s.status == frame_status.LIMITED]
    if not stretches:
        return None
    limits = ", ".join(
        f"{motor} {frame_status.LIMIT_LABELS[limit]} on {count} sample(s)"
        for motor, limit, count in status.limits
    )
    worst = max(s.miss for s in stretches) * 1000
    return (
        f"{status.count(frame_status.LIMITED)} sample(s) limited, from "
        f"{bake.time_label(stretches[0].frame, stretches[0].time)}: targets missed by up to "
        f"{worst:.3g} mm because motor limits bind: {limits}"
    )


class _Worker(threading.Thread):
    def __init__(self, inputs: RetargetInputs):
        super().__init__(daemon=True)
        self.inputs = inputs
        self.done, self.total = 0, len(inputs.clip.frames)
        self.cancel_requested = False
        self.result, self.error = None, None

    def _progress(self, done, total):
        self.done, self.total = done, total

    def run(self):
        try:
            self.result = solve(self.inputs, self._progress, lambda: self.cancel_requested)
        except BaseException as error:  # handed to the main thread
            self.error = error


class RetargetJob:
    """A retarget done in steps between UI events (what the modal operator drives).

    ``step(context)`` samples a chunk of frames (first half of the progress),
    then starts the solve in a worker thread and polls it (second half); it
    returns None while running and, at the end, the solver's result (nothing
    is written: the caller applies it). ``cancel()`` stops sampling or asks the
    solver to stop; the next ``step`` then raises RetargetCancelled. Errors
    are raised from ``step`` as they are met.
    """

    def __init__(self, context, chunk: int = 200):
        self.inputs, sources = read_inputs(context, sample=False)
        self.frames = len(self.inputs.clip.frames)
        self.total = 2 * self.frames  # sampling, then solving
        self.done = 0
        self._matrices: dict = {}
        self._sampler = iter_world_matrices(context, sources, self.inputs.clip.frames, self._matrices, chunk)
        self._worker: _Worker | None = None
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True
        if self._worker is not None:
            self._worker.cancel_requested = True

    def close(self) -> None:
        """Stop sampling (the scene goes back to its frame); a running solve is told to stop."""
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None
        if self._worker is not None:
            self._worker.cancel_requested = True

    def step(self, context):
        if self._worker is None:
            if self._cancelled:
                self.close()
                raise RetargetCancelled("retarget cancelled while sampling the targets")
            try:
                self.done = next(self._sampler)
                return None
            except StopIteration:
                self._sampler = None
            except KeyError as error:  # a target object was deleted meanwhile
                self._sampler = None
                raise RobotError(f"target disappeared while sampling: {error}") from None
            self.inputs.samples = samples_from_matrices(self._matrices, self.inputs.clip)
            self._worker = _Worker(self.inputs)
            self._worker.start()
            return None
        worker = self._worker
        self.done = self.frames + worker.done
        if worker.is_alive():
            return None
        if self._cancelled:  # Esc wins even if the solve finished meanwhile
            raise RetargetCancelled("retarget cancelled")
        if worker.error is not None:
            raise worker.error
        return worker.result


class LOOPRIG_OT_retarget(bpy.types.Operator):
    """Solve the robot's motion from the targets and key it in looprig's own action (Esc cancels)"""

    bl_idname = "looprig.retarget"
    bl_label = "Retarget"
    bl_options = {"REGISTER", "UNDO"}

    _job = None
    _timer = None

    def _finish(self, context, inputs, result):
        status = apply_result(context, inputs, result)
        held = result.holding.message() if result.holding is not None else None
        limited = limited_warning(inputs, result)
        lines = [line for line in (held, limited) if line] + unreachable_warnings(inputs, result)
        for line in lines:
            self.report({"WARNING"}, line)
        for line in retiming_lines(result.retiming):
            self.report({"INFO"}, line)
        self.report({"INFO"}, status)
        return {"FINISHED"}

    def _fail(self, context, error):
        message = str(error)
        context.scene.looprig.status = f"retarget failed: {message}"
        self.report({"ERROR"}, message)
        return {"CANCELLED"}

    def execute(self, context):
        try:
            inputs, _ = read_inputs(context)
            result = solve(inputs)
            return self._finish(context, inputs, result)
        except (RobotError, LooprigError, ValueError) as error:
            return self._fail(context, error)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            self._job = RetargetJob(context)
        except (RobotError, LooprigError, ValueError) as error:
            return self._fail(context, error)
        wm = context.window_manager
        wm.progress_begin(0, self._job.total)
        self._timer = wm.event_timer_add(0.05, window=context.window)
        wm.modal_handler_add(self)
        context.scene.looprig.status = "retargeting... (Esc to cancel)"
        return {"RUNNING_MODAL"}

    def _stop(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        self._job.close()
        wm.progress_end()

    def modal(self, context, event):
        if event.type == "ESC" and event.value == "PRESS":
            self._job.cancel()
            return {"RUNNING_MODAL"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            result = self._job.step(context)
        except RetargetCancelled:
            self._stop(context)
            context.scene.looprig.status = "retarget cancelled; nothing changed"
            self.report({"WARNING"}, "retarget cancelled; nothing changed")
            return {"CANCELLED"}
        except (RobotError, LooprigError, ValueError) as error:
            self._stop(context)
            return self._fail(context, error)
        except Exception as error:  # a bug: clean up the UI state, then say what broke
            self._stop(context)
            return self._fail(context, f"internal error, please report it: {type(error).__name__}: {error}")
        context.window_manager.progress_update(self._job.done)
        if result is None:
            return {"PASS_THROUGH"}
        self._stop(context)
        try:
            return self._finish(context, self._job.inputs, result)
        except (RobotError, LooprigError, ValueError) as error:
            return self._fail(context, error)


class LOOPRIG_OT_clear(RobotCollectionOperator, bpy.types.Operator):
    """Remove looprig's action, bake and frame status: the robot goes back to its rest pose"""

    bl_idname = "looprig.clear"
    bl_label = "Clear Retarget"

    def run(self, context, collection):
        bake.clear_bake(context, collection)
        status_display.clear_status(context, collection.name)
        animation.remove_action(collection, animated_objects(collection))
        context.scene.looprig.status = "cleared"


classes = (LOOPRIG_OT_retarget, LOOPRIG_OT_clear)


register, unregister = bpy.utils.register_classes_factory(classes)
