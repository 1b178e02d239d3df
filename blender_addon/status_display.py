"""The per-frame status of a retarget in the scene: markers, panel summary, ghost poses.

:func:`write_status` keeps what :mod:`.frame_status` computed with the result:

* ``scene.looprig.frame_status``: one item per robot (counts of exact, limited and
  unreachable samples, the worst miss, the binding motor limits and the
  stretches), which the panel shows and the timeline band is drawn from;
* a timeline marker per stretch, at its first frame, named
  ``looprig <robot> | limited 104 mm: crank_joint velocity``; the marker's name
  and frame are recorded in its stretch, and only recorded markers are removed
  (on a new retarget and on Clear), so the animator's own markers never are;
* on the robot's looprig action (the result itself, so Clear and undo take it
  with the keys), the custom property ``looprig_status``: every sample's status
  and, for the samples that are not exact, each target's asked pose beside its
  robot frame's pose (metres), from which the 3D Viewport draws the ghost.
"""

from __future__ import annotations

import numpy as np

from . import animation
from .frame_status import EXACT, LIMITED, STATUS_NAMES, UNREACHABLE, FrameStatus, Stretch
from .overlay_geometry import ghost_segments
from .scene_data import unit_scale

#: Custom property of the looprig action holding the per-sample status and ghost poses.
STATUS_KEY = "looprig_status"


def marker_name(robot: str, stretch: Stretch) -> str:
    """The timeline marker of a stretch, its status and worst miss first (Blender cuts
    names at 63 bytes): ``looprig fourbar | limited 104 mm: crank_joint velocity``."""
    return f"looprig {robot} | {stretch.status_name} {stretch.how_much()}: {stretch.what()}"


def status_item(settings, robot: str):
    """The ``scene.looprig.frame_status`` item of robot ``robot``, or None."""
    return next((item for item in settings.frame_status if item.robot == robot), None)


def clear_status(context, robot: str) -> None:
    """Remove robot ``robot``'s status: its panel item and the markers looprig recorded in
    it (a marker is removed only where one has the recorded name at the recorded frame)."""
    scene = context.scene
    items = scene.looprig.frame_status
    for index in reversed(range(len(items))):
        item = items[index]
        if item.robot != robot:
            continue
        for stretch in item.stretches:
            marker = next(
                (
                    m
                    for m in scene.timeline_markers
                    if m.name == stretch.marker and m.frame == stretch.marker_frame
                ),
                None,
            )
            if marker is not None:
                scene.timeline_markers.remove(marker)
        items.remove(index)


def write_status(context, robot: str, action, status: FrameStatus, record: dict) -> None:
    """Keep a retarget's status in the scene (see the module docstring), replacing the
    robot's previous one.

    action: the robot's looprig action just written; record: its
    :func:`~.frame_status.ghost_record`, kept on the action.
    """
    scene = context.scene
    clear_status(context, robot)
    item = scene.looprig.frame_status.add()
    item.robot = robot
    item.samples = len(status.codes)
    item.exact = status.count(EXACT)
    item.limited = status.count(LIMITED)
    item.unreachable = status.count(UNREACHABLE)
    item.worst_miss = status.worst_miss
    if status.worst_sample >= 0:
        item.worst_frame = status.frames[status.worst_sample]
        item.worst_time = status.times[status.worst_sample]
    item.sample_frames = record["sample_frames"]
    for motor, limit, count in status.limits:
        binding = item.limits.add()
        binding.name, binding.limit, binding.samples = motor, limit, count
    for stretch in status.stretches:
        entry = item.stretches.add()
        entry.name = stretch.label()
        entry.status = stretch.status_name
        entry.frame, entry.end_frame = stretch.frame, stretch.end_frame
        entry.time, entry.end_time = stretch.time, stretch.end_time
        entry.miss = stretch.miss
        marker = scene.timeline_markers.new(marker_name(robot, stretch), frame=round(stretch.frame))
        entry.marker, entry.marker_frame = marker.name, marker.frame
    action[STATUS_KEY] = record


def _poses(record, key: str, row: int, targets: int) -> tuple[np.ndarray, np.ndarray]:
    flat = np.array(record[key][row * 12 * targets : (row + 1) * 12 * targets], dtype=float)
    flat = flat.reshape(targets, 12)
    return flat[:, :3], flat[:, 3:].reshape(targets, 3, 3)


def ghost_at_frame(collection, frame: float):
    """The ghost of robot ``collection`` at scene frame ``frame``: ``(status, asked, reached,
    axis_length)`` with asked and reached ``(positions (K, 3), rotations (K, 3, 3))`` [m]
    of the K frame targets, for the sample nearest the frame when it is limited or
    unreachable, else None."""
    action = animation.find_action(collection)
    record = action.get(STATUS_KEY) if action is not None else None
    if record is None:
        return None
    codes, targets = record["codes"], record["targets"]
    sample = round((frame - record["frame_start"]) / record["sample_frames"])
    if not 0 <= sample < len(codes) or codes[sample] == EXACT:
        return None
    row = record["rows"][sample]
    return (
        int(codes[sample]),
        _poses(record, "asked", row, targets),
        _poses(record, "reached", row, targets),
        float(record["axis_length"]),
    )


def ghost_geometry(context):
    """What the 3D Viewport draws at the current frame for the scene's robot: the
    :func:`~.overlay_geometry.ghost_segments` in Blender units, or [] (exact frame,
    no retarget, status display off)."""
    scene = context.scene
    settings = scene.looprig
    if settings.robot is None or not settings.show_status:
        return []
    ghost = ghost_at_frame(settings.robot, scene.frame_current + scene.frame_subframe)
    if ghost is None:
        return []
    code, (asked_p, asked_R), (reached_p, reached_R), axis_length = ghost
    s = unit_scale(scene)
    return ghost_segments(asked_p / s, asked_R, reached_p / s, reached_R, axis_length / s, code)


def band_spans(context) -> tuple[list[tuple[float, float, int]], float]:
    """The scene's robot's stretches as ``(frame, end_frame, status code)`` and the scene
    frames per sample, for the timeline band; ([], 1) when there is nothing to show."""
    settings = context.scene.looprig
    if settings.robot is None or not settings.show_status:
        return [], 1.0
    item = status_item(settings, settings.robot.name)
    if item is None:
        return [], 1.0
    spans = [(s.frame, s.end_frame, STATUS_NAMES.index(s.status)) for s in item.stretches]
    return spans, item.sample_frames
