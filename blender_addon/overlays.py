"""Overlays: velocity-limit bands in the Graph Editor, the frame-status band and ghost.

Thin draw handlers over :mod:`.overlay_geometry` (and :mod:`.status_display` for
the status), registered only when Blender has a window (never in background
mode, where GPU drawing is unavailable); the same information persists in the
data (curve colours, EXTREME keys, markers, the panel summary):

* Graph Editor: each actuator's velocity-limit band, the violating intervals shaded;
* Timeline, Dope Sheet and Graph Editor: the frame-status band, limited frames
  shaded orange and unreachable frames magenta over the editor's height;
* 3D Viewport, on a limited or unreachable frame: each target's asked pose (a faded
  triad, the ghost) joined by a line to its robot frame's triad.
"""

from __future__ import annotations

import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from . import animation, bake, status_display
from .overlay_geometry import (
    BAND_COLOUR,
    OVER_COLOUR,
    STATUS_BAND_ALPHA,
    STATUS_COLOURS,
    VIOLATION_COLOUR,
    band_rectangles,
    rectangles_to_triangles,
    status_band,
    velocity_overlay,
)

# --------------------------------------------------------------------------- drawing (UI only)
#: (space type, draw handler) pairs added by :func:`register`.
_handles: list = []


def _curve_samples(robot: str, name: str):
    """(frames, values) of the baked velocity curve of actuator ``name`` of ``robot``, or None."""
    root = bake.baked_root(robot)
    if root is None or root.animation_data is None or root.animation_data.action is None:
        return None
    ad = root.animation_data
    if ad.action_slot is None:
        return None
    fc = animation.channelbag(ad.action, ad.action_slot).fcurves.find(bake.velocity_path(name))
    return None if fc is None else animation.read_fcurve(fc)


def draw_graph_overlay():
    """POST_VIEW draw callback of the Graph Editor (graph coordinates: x frame, y value)."""
    context = bpy.context
    scene = context.scene
    settings = getattr(scene, "looprig", None)
    if settings is None or not settings.show_overlays or not len(settings.actuators):
        return
    if getattr(context.space_data, "use_normalization", False):
        return  # normalized curves: the band in actuator units would lie
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for item in settings.actuators:
        if item.velocity_limit <= 0:
            continue
        if settings.robot is None or item.robot != settings.robot.name:
            continue
        samples = _curve_samples(item.robot, item.name)
        if samples is None:
            continue
        geometry = velocity_overlay(samples[0], samples[1], item.velocity_limit)
        tris = rectangles_to_triangles(band_rectangles(geometry, item.velocity_limit))
        if tris:
            _draw(shader, "TRIS", tris, VIOLATION_COLOUR)
        lines = [p for x0, y0, x1, y1 in geometry.band for p in ((x0, y0), (x1, y1))]
        gpu.state.line_width_set(1.5)
        _draw(shader, "LINES", lines, BAND_COLOUR)
        gpu.state.line_width_set(3.0)
        for piece in geometry.over:
            if len(piece) > 1:
                _draw(shader, "LINE_STRIP", piece, OVER_COLOUR)
    gpu.state.line_width_set(1.0)
    gpu.state.blend_set("NONE")


def draw_status_band():
    """POST_PIXEL draw callback of the Timeline, Dope Sheet and Graph Editor: the scene's
    robot's limited and unreachable stretches shaded over the region's height."""
    context = bpy.context
    spans, sample_frames = status_display.band_spans(context)
    if not spans:
        return
    region = context.region
    view = region.view2d
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    for frame0, frame1, status in status_band(spans, 0.5 * sample_frames):
        x0 = view.view_to_region(frame0, 0.0, clip=False)[0]
        x1 = view.view_to_region(frame1, 0.0, clip=False)[0]
        tris = rectangles_to_triangles([(x0, 0.0, x1, float(region.height))])
        _draw(shader, "TRIS", tris, (*STATUS_COLOURS[status][:3], STATUS_BAND_ALPHA))
    gpu.state.blend_set("NONE")


def draw_ghost():
    """POST_VIEW draw callback of the 3D Viewport: the asked poses beside the robot's frames
    at a limited or unreachable frame (world coordinates)."""
    segments = status_display.ghost_geometry(bpy.context)
    if not segments:
        return
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    gpu.state.line_width_set(2.0)
    for colour, points in segments:
        _draw(shader, "LINES", points, colour)
    gpu.state.line_width_set(1.0)
    gpu.state.blend_set("NONE")


def _draw(shader, kind: str, points, colour) -> None:
    """``points`` drawn as ``kind`` ("TRIS", "LINES", "LINE_STRIP") in one ``colour`` (RGBA)."""
    batch = batch_for_shader(shader, kind, {"pos": points})
    shader.uniform_float("color", colour)
    batch.draw(shader)


def _handlers():
    """(space type, callback, draw type) of every overlay."""
    return (
        (bpy.types.SpaceGraphEditor, draw_graph_overlay, "POST_VIEW"),
        (bpy.types.SpaceGraphEditor, draw_status_band, "POST_PIXEL"),
        (bpy.types.SpaceDopeSheetEditor, draw_status_band, "POST_PIXEL"),
        (bpy.types.SpaceView3D, draw_ghost, "POST_VIEW"),
    )


def register():
    if bpy.app.background or _handles:
        return
    for space, callback, kind in _handlers():
        _handles.append((space, space.draw_handler_add(callback, (), "WINDOW", kind)))


def unregister():
    while _handles:
        space, handle = _handles.pop()
        space.draw_handler_remove(handle, "WINDOW")


classes = ()
