"""Graph Editor overlay geometry (pure, no GPU) and that no draw handler runs headless."""

import numpy as np
import pytest

from blender_addon import overlay_geometry, overlays


def test_band_lines_span_the_curve_at_plus_and_minus_the_limit():
    g = overlay_geometry.velocity_overlay([1, 2, 3], [0.0, 1.0, 0.5], 2.0)
    assert g.band == [(1, 2.0, 3, 2.0), (1, -2.0, 3, -2.0)]
    assert g.intervals == [] and g.over == []


def test_violating_intervals_start_and_end_at_the_interpolated_crossings():
    # 0 -> 4 crosses +2 at frame 1.5; 4 -> -4 leaves the band at 2.25 and re-enters below at 2.75
    g = overlay_geometry.velocity_overlay([1, 2, 3, 4], [0.0, 4.0, -4.0, 0.0], 2.0)
    assert g.intervals == [(1.5, 2.25), (2.75, 3.5)]
    assert g.over[0] == [(1.5, 2.0), (2.0, 4.0), (2.25, 2.0)]
    assert g.over[1] == [(2.75, -2.0), (3.0, -4.0), (3.5, -2.0)]
    rects = overlay_geometry.band_rectangles(g, 2.0)
    assert rects == [(1.5, -2.0, 2.25, 2.0), (2.75, -2.0, 3.5, 2.0)]
    assert len(overlay_geometry.rectangles_to_triangles(rects)) == 12


def test_curve_that_ends_or_starts_beyond_the_limit():
    g = overlay_geometry.velocity_overlay([0, 1, 2], [3.0, 1.0, 3.0], 2.0)
    assert g.intervals == [(0.0, 0.5), (1.5, 2.0)]


@pytest.mark.parametrize("limit", [0.0, -1.0, float("inf")])
def test_no_limit_draws_nothing(limit):
    g = overlay_geometry.velocity_overlay([0, 1], [5.0, 6.0], limit)
    assert g.band == [] and g.intervals == []


def test_intervals_match_the_sampled_violation_frames():
    """The coupler demo's crank speed (pi^2/T) sin(pi t/T) exceeds 4 rad/s on frames 16..34."""
    from blender_addon import demo_scene as demo

    frames = np.arange(1, 50, dtype=float)
    _, speed = demo.crank_motion((frames - 1) / 24.0, 2.0)
    g = overlay_geometry.velocity_overlay(frames, speed, 4.0)
    assert len(g.intervals) == 1
    start, end = g.intervals[0]
    assert 15 < start < 16 and 34 < end < 35


def test_no_draw_handler_in_background_mode():
    import bpy

    assert bpy.app.background
    assert overlays._handles == []
