"""Velocity-limit overlays in the Graph Editor.

A thin draw handler over :mod:`.overlay_geometry`, registered only when
Blender has a window (never in background mode, where GPU drawing is
unavailable); the same information persists in the baked data (curve colours,
EXTREME keys, markers, the panel summary).
"""

from __future__ import annotations

import bpy
import gpu
from gpu_extras.batch import batch_for_shader

from . import animation, bake
from .overlay_geometry import (
    BAND_COLOUR,
    OVER_COLOUR,
    VIOLATION_COLOUR,
    band_rectangles,
    rectangles_to_triangles,
    velocity_overlay,
)

# --------------------------------------------------------------------------- drawing (UI only)
_handle = None


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
            batch = batch_for_shader(shader, "TRIS", {"pos": tris})
            shader.uniform_float("color", VIOLATION_COLOUR)
            batch.draw(shader)
        lines = [p for x0, y0, x1, y1 in geometry.band for p in ((x0, y0), (x1, y1))]
        gpu.state.line_width_set(1.5)
        batch = batch_for_shader(shader, "LINES", {"pos": lines})
        shader.uniform_float("color", BAND_COLOUR)
        batch.draw(shader)
        gpu.state.line_width_set(3.0)
        for piece in geometry.over:
            if len(piece) > 1:
                batch = batch_for_shader(shader, "LINE_STRIP", {"pos": piece})
                shader.uniform_float("color", OVER_COLOUR)
                batch.draw(shader)
    gpu.state.line_width_set(1.0)
    gpu.state.blend_set("NONE")


def register():
    global _handle
    if bpy.app.background or _handle is not None:
        return
    _handle = bpy.types.SpaceGraphEditor.draw_handler_add(draw_graph_overlay, (), "WINDOW", "POST_VIEW")


def unregister():
    global _handle
    if _handle is not None:
        bpy.types.SpaceGraphEditor.draw_handler_remove(_handle, "WINDOW")
        _handle = None


classes = ()
