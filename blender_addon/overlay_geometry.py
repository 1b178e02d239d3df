"""The geometry of the velocity-limit overlay, without Blender.

Frames and values in, line segments and rectangles in graph coordinates
(x = frame, y = value) out. The Graph Editor's draw handler (:mod:`.overlays`)
and the headless picture of the Graph Editor (:mod:`.screenshots`) draw the
same geometry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

BAND_COLOUR = (1.0, 0.55, 0.1, 0.9)
VIOLATION_COLOUR = (1.0, 0.1, 0.05, 0.18)
OVER_COLOUR = (1.0, 0.1, 0.05, 1.0)


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
