"""The geometry of looprig's overlays, without Blender.

The velocity-limit overlay: frames and values in, line segments and rectangles
in graph coordinates (x = frame, y = value) out. The Graph Editor's draw handler
(:mod:`.overlays`) and the headless picture of the Graph Editor
(:mod:`.screenshots`) draw the same geometry. The frame-status ghost: the asked
and the reached pose of each tracked frame in, coloured line segments in world
coordinates out (the 3D Viewport's draw handler draws them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from .frame_status import LIMITED, UNREACHABLE

BAND_COLOUR = (1.0, 0.55, 0.1, 0.9)
VIOLATION_COLOUR = (1.0, 0.1, 0.05, 0.18)
OVER_COLOUR = (1.0, 0.1, 0.05, 1.0)
#: Frame status colours (RGBA) by status code of :mod:`.frame_status`: the timeline band
#: (at ``STATUS_BAND_ALPHA``) and the line from the asked to the reached pose.
STATUS_COLOURS = {LIMITED: (1.0, 0.6, 0.1, 1.0), UNREACHABLE: (0.9, 0.2, 0.85, 1.0)}
STATUS_BAND_ALPHA = 0.18
#: Axis colours x, y, z of the frame triads; the asked pose's (the ghost) at GHOST_ALPHA.
AXIS_COLOURS = ((1.0, 0.25, 0.25), (0.35, 0.9, 0.35), (0.35, 0.55, 1.0))
GHOST_ALPHA = 0.45


@dataclass
class OverlayGeometry:
    """What to draw for one actuator's velocity curve, in graph coordinates.

    band: limit lines ``(x0, y0, x1, y1)`` at ``+limit`` and ``-limit`` over the
    curve's frame span. intervals: ``(x0, x1)`` frame spans where ``|v| > limit``
    (crossings interpolated linearly). over: polyline pieces ``[(x, y), ...]``
    of the curve where it lies beyond the band, to draw thick.
    """

    band: list[tuple[float, float, float, float]] = field(default_factory=list)
    intervals: list[tuple[float, float]] = field(default_factory=list)
    over: list[list[tuple[float, float]]] = field(default_factory=list)


def _crossing(x0, y0, x1, y1, level) -> float:
    """Frame where the segment (x0, y0)-(x1, y1) crosses ``level`` (linear)."""
    if y1 == y0:
        return x0
    return x0 + (level - y0) * (x1 - x0) / (y1 - y0)


def velocity_overlay(frames, values, limit: float) -> OverlayGeometry:
    """Band lines, violating intervals and over-limit pieces of a sampled velocity curve.

    frames: (F,) increasing scene frames; values: (F,) velocities [unit/s];
    limit: the velocity limit (> 0; inf or <= 0 means none: nothing to draw).
    The curve is taken as piecewise linear between samples, as the baked
    F-curve is interpolated; where it crosses ``+limit`` or ``-limit`` between
    samples the crossing is interpolated.
    """
    x = np.asarray(frames, dtype=float)
    v = np.asarray(values, dtype=float)
    geometry = OverlayGeometry()
    if len(x) == 0 or not math.isfinite(limit) or limit <= 0:
        return geometry
    geometry.band = [(x[0], limit, x[-1], limit), (x[0], -limit, x[-1], -limit)]
    # the polyline with its band crossings inserted
    points = [(x[0], v[0])]
    for i in range(1, len(x)):
        crossings = []
        for level in (limit, -limit):
            if (v[i - 1] - level) * (v[i] - level) < 0:
                crossings.append((_crossing(x[i - 1], v[i - 1], x[i], v[i], level), level))
        points += sorted(crossings) + [(x[i], v[i])]
    piece: list[tuple[float, float]] = []
    for (x0, y0), (x1, y1) in pairwise(points):
        over = abs(0.5 * (y0 + y1)) > limit
        if over:
            if not piece:
                piece = [(x0, y0)]
            piece.append((x1, y1))
        elif piece:
            geometry.over.append(piece)
            piece = []
    if piece:
        geometry.over.append(piece)
    if len(points) == 1 and abs(v[0]) > limit:
        geometry.over.append(points)
    geometry.intervals = [(p[0][0], p[-1][0]) for p in geometry.over]
    return geometry


def band_rectangles(geometry: OverlayGeometry, limit: float) -> list[tuple[float, float, float, float]]:
    """Shaded rectangles ``(x0, y0, x1, y1)`` over each violating interval, spanning the band."""
    return [(x0, -limit, x1, limit) for x0, x1 in geometry.intervals]


def rectangles_to_triangles(rectangles) -> list[tuple[float, float]]:
    """Two triangles (six vertices) per rectangle, for a TRIS batch."""
    out = []
    for x0, y0, x1, y1 in rectangles:
        out += [(x0, y0), (x1, y0), (x1, y1), (x0, y0), (x1, y1), (x0, y1)]
    return out


def ghost_segments(asked_points, asked_axes, robot_points, robot_axes, axis_length: float, status: int):
    """Line segments showing what each target asked against what the robot's frame does.

    asked_points, robot_points: (K, 3) positions; asked_axes, robot_axes: (K, 3, 3)
    rotations (columns: the frame's x, y, z axes), all in one world frame and one length
    unit, in which ``axis_length`` is the triads' length. status: the sample's status
    code (:data:`STATUS_COLOURS`). Returns ``[(colour RGBA, [p0, p1, p0, p1, ...]), ...]``:
    per colour, LINES vertices: a line from each asked point to its robot point, the
    asked triad in faded axis colours (the ghost) and the robot frame's triad in full.
    """
    P_asked, P_robot = np.asarray(asked_points, float), np.asarray(robot_points, float)
    R_asked, R_robot = np.asarray(asked_axes, float), np.asarray(robot_axes, float)
    out = [(STATUS_COLOURS[status], _lines(P_asked, P_robot))]
    for points, axes, alpha in ((P_asked, R_asked, GHOST_ALPHA), (P_robot, R_robot, 1.0)):
        for a, rgb in enumerate(AXIS_COLOURS):
            out.append(((*rgb, alpha), _lines(points, points + axis_length * axes[:, :, a])))
    return out


def _lines(starts: np.ndarray, ends: np.ndarray) -> list[tuple[float, float, float]]:
    """LINES vertices of segments from starts (K, 3) to ends (K, 3): start, end, start, ..."""
    return [tuple(p) for p in np.stack([starts, ends], axis=1).reshape(-1, 3).tolist()]


def status_band(spans, half_width: float) -> list[tuple[float, float, int]]:
    """The timeline's colour band: per stretch ``(frame, end_frame, status)`` (scene frames
    of its first and last sample, its status code) the span ``(frame0, frame1, status)``
    it shades, widened by ``half_width`` frames each side (half a sample, so that a
    one-sample stretch shows and neighbouring samples' spans meet)."""
    return [(frame - half_width, end_frame + half_width, status) for frame, end_frame, status in spans]
