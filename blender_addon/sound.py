"""The scene's sound, as a curves export records it (``"audio"``: :mod:`looprig.core.export.curves_json`).

A sound strip in the sequencer plays its file from frame ``frame_start`` (where its first
sample is, trimmed or not); exported curves start at the bake's first frame, so the sound's
offset is the time from there to the strip's start [s]. The first unmuted sound strip (lowest
channel, then earliest) is the clip's sound; ``looprig play --audio`` plays it with the motion.
"""

from __future__ import annotations

import bpy


def scene_sound(scene, frame_start: float, fps: float) -> dict | None:
    """``{"path": absolute file, "offset_s": seconds}`` of the scene's sound relative to the
    clip starting at ``frame_start`` (``fps`` frames per second), or None without one."""
    editor = scene.sequence_editor
    if editor is None:
        return None
    strips = [s for s in editor.strips_all if s.type == "SOUND" and not s.mute and s.sound is not None]
    if not strips:
        return None
    strip = min(strips, key=lambda s: (s.channel, s.frame_start))
    path = bpy.path.abspath(strip.sound.filepath)
    return {"path": path, "offset_s": (strip.frame_start - frame_start) / fps}
