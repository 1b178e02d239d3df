"""Retiming in the scene (timing ``stretch``, :mod:`looprig.retime`): the timeline markers
inside the retarget's frame range are its pins, kept at their frames while the robot's
motion is slowed where a motor limit binds.

The Retarget operator reads them (:func:`marker_pins`) when the Solve panel's Timing is
Stretch and keys the robot's own action along the new timing: the animator's keys and
the markers stay as they are; the robot's action ends later when the last stretch grows.
looprig's own markers (limit violations, frame status) are never pins.
"""

from __future__ import annotations

import numpy as np

from .sampling import Clip

#: Markers looprig writes start with this; they are never pins.
OWN_MARKERS = "looprig "


def pin_markers(scene, clip: Clip) -> list:
    """The animator's timeline markers inside the clip's frames, in frame order."""
    first, last = float(clip.frames[0]), float(clip.frames[-1])
    markers = [
        m for m in scene.timeline_markers if not m.name.startswith(OWN_MARKERS) and first <= m.frame <= last
    ]
    return sorted(markers, key=lambda m: m.frame)


def marker_pins(scene, clip: Clip) -> tuple[float, ...]:
    """The clip times [s] of :func:`pin_markers` (frame ``clip.frame_start`` is 0 s)."""
    frames = np.array([m.frame for m in pin_markers(scene, clip)], float)
    return tuple(float(t) for t in (frames - clip.frame_start) / clip.fps)


def retiming_status(retiming: dict | None, clip: Clip) -> str | None:
    """One status line of a retimed result: the new end frame and each stretch's time
    factor, e.g. ``retimed to frame 56: x1.000 x1.000 x1.290``; None when not retimed."""
    if not retiming:
        return None
    end = clip.frame_start + retiming["duration_s"] * clip.fps
    factors = " ".join(f"x{s['time_factor']:.3f}" for s in retiming["stretches"])
    return f"retimed to frame {end:.4g}: {factors}"


def draw_pins(layout, context) -> None:
    """Under the Solve panel's Timing: the markers that will be pins (Timing Stretch)."""
    scene = context.scene
    if scene.looprig.timing != "stretch":
        return
    names = [m.name for m in scene.timeline_markers if not m.name.startswith(OWN_MARKERS)]
    text = f"pins: {len(names)} marker(s)" + (
        f" ({', '.join(names[:4])})" if names else "; add markers to pin"
    )
    layout.label(text=text, icon="MARKER_HLT")
