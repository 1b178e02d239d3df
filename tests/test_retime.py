"""Timing "stretch": the clip slowed where a motor limit binds, pinned frames kept at their
times (core.tracks.retime, looprig.retime with toppra).

The shots are the reference four-bar's coupler point driven by a known crank angle
theta(t) (tests/shots.py), so the retimed clip's crank must pass through theta at
each pin's time, and the crank speed of a clip played slower is known in closed form.
"""

import json

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import all_violations
from looprig.core.maths.rotations import quat_from_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.tracks.format import Clip, Track, write_tracks
from looprig.core.tracks.retime import RetimeError, SpeedProfile, pin_times, plan_retiming, stretches_of
from shots import coupler_path

pytest.importorskip("toppra", reason="timing stretch needs toppra: pip install 'looprig[retime]'")

from looprig.retime import LIMIT_MARGIN, PathTiming, retarget_timed

CRANK_SPEED = 6.0  # the four-bar crank's velocity limit [rad/s]
ACCELERATION = 200.0  # the acceleration limit the mapping gives it [rad/s^2]


def crank_speed(t):
    """3 rad/s with two bumps above the 6 rad/s limit: one between the pins at 1 s and
    2 s (9 rad/s at 1.45 s), one after the last pin (10 rad/s at 2.5 s) [rad/s]."""
    return 3.0 + 6.0 * np.exp(-(((t - 1.45) / 0.08) ** 2)) + 7.0 * np.exp(-(((t - 2.5) / 0.12) ** 2))


def crank_angle(t):
    """theta(t) [rad], the integral of :func:`crank_speed` from 0 (trapezoids on a fine grid)."""
    fine = np.linspace(0.0, 3.0, 30001)
    speed = crank_speed(fine)
    theta = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) * np.diff(fine))])
    return np.interp(t, fine, theta)


def shot(fps=60.0, seconds=3.0):
    """The four-bar shot: samples at ``fps`` and the crank angles (F,) [rad] that made them."""
    times = np.arange(round(seconds * fps) + 1) / fps
    theta = crank_angle(times)
    points, axes = coupler_path(theta)
    return TrackSamples(times, {"coupler": points}, {"coupler": axes}), theta


def mapping(**settings):
    return RetargetMapping(
        targets=(TargetSpec("coupler", "coupler_point"),),
        rate=600.0,
        motor_limits={"crank_joint": {"acceleration": ACCELERATION}},
        **settings,
    )


def test_a_profile_plays_its_stretch_in_closed_form():
    """Constant path acceleration a = (v1^2 - v0^2) / (2 ds) per segment: a segment of ds
    from speed v0 to v1 lasts 2 ds / (v0 + v1), and s(t) = v0 t + a t^2 / 2 inside it."""
    profile = SpeedProfile(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.5, 0.5]))
    np.testing.assert_allclose(profile.segment_durations(), [2.0 / 1.5, 4.0])
    a = (0.25 - 1.0) / 2.0
    t = np.linspace(0.0, 2.0 / 1.5, 7)
    np.testing.assert_allclose(profile.clip_time(t), t + 0.5 * a * t**2, atol=1e-14)
    later = 2.0 / 1.5 + np.array([0.0, 1.0, 4.0])
    np.testing.assert_allclose(profile.clip_time(later), [1.0, 1.5, 3.0], atol=1e-14)
    assert profile.scaled(2.0).duration == pytest.approx(profile.duration / 2.0)


def test_stretches_are_cut_at_the_pins():
    assert stretches_of(0.0, 3.0, []) == [(0.0, 3.0, False)]
    assert stretches_of(0.0, 3.0, [2.0, 1.0, 1.0, 0.0]) == [
        (0.0, 1.0, True),
        (1.0, 2.0, True),
        (2.0, 3.0, False),
    ]
    assert stretches_of(0.0, 3.0, [3.0]) == [(0.0, 3.0, True)]
    with pytest.raises(RetimeError, match=r"pin at 4 s: outside the clip \(0..3 s\)"):
        stretches_of(0.0, 3.0, [4.0])
    samples, _ = shot()
    assert pin_times(samples, [60, 120]) == pytest.approx((1.0, 2.0))
    with pytest.raises(RetimeError, match=r"pin at frame 200: outside the clip \(frames 0..180\)"):
        pin_times(samples, [200])


def test_toppra_slows_a_steady_motion_to_the_limit():
    """A motor asked for k times its speed limit v at constant speed is played at
    path speed margin * v / (k v) everywhere: the stretch lasts k / margin times longer."""
    k, v, seconds = 2.5, 2.0, 1.0
    times = np.linspace(0.0, seconds, 601)
    curves = ActuatorCurves(times, k * v * times, ("m",), velocity_limit=v)
    path = PathTiming(curves)
    speed = LIMIT_MARGIN / k
    assert path.speed_at(0.5) == pytest.approx(speed)
    profile = path.profile(0.0, seconds, 1.0, speed, speed)
    np.testing.assert_allclose(profile.speed, speed, rtol=1e-6)
    assert profile.duration == pytest.approx(seconds * k / LIMIT_MARGIN, rel=1e-6)


def test_a_pinned_stretch_too_fast_to_catch_up_keeps_its_timing():
    """Nothing to catch up with: a stretch that breaks the limit all along to its pin
    cannot be slowed, keeps its timing (held in space); the plan says so."""
    times = np.linspace(0.0, 1.0, 301)
    curves = ActuatorCurves(times, 3.0 * times, ("m",), velocity_limit=1.0)
    path = PathTiming(curves)
    plan = plan_retiming(0.0, 1.0, [0.5], path.profile, path.speed_at)
    first, last = plan.stretches
    assert first.held_in_space and first.time_factor == 1.0
    assert not last.held_in_space and last.time_factor == pytest.approx(3.0 / LIMIT_MARGIN, rel=1e-4)


def test_two_pins_hold_their_times_and_every_limit_holds():
    """Done means (issue 26): a clip above its velocity limit with two pinned markers:
    every limit held, both markers at their times to one frame, the unpinned stretch
    scaled, the report lists each stretch's time factor."""
    samples, _ = shot()
    asked = mapping(timing="stretch")
    exact = retarget(_fourbar(), samples, mapping(limit_mode="report"))
    peak = np.abs(exact.curves.velocities()).max()
    assert peak > 1.5 * CRANK_SPEED  # the clip asks for much more than the crank gives
    result = retarget_timed(_fourbar(), samples, asked, pins=(1.0, 2.0))
    assert all_violations(result.curves) == []
    assert result.limited.sum() == 0 and result.unreachable.sum() == 0
    summary = json.loads(json.dumps(result.summary()))
    stretches = summary["retiming"]["stretches"]
    assert [s["pinned"] for s in stretches] == [True, True, False]
    assert [s["time_factor"] for s in stretches[:2]] == [pytest.approx(1.0, abs=1e-12)] * 2
    assert stretches[1]["catch_up"] > 1.0 and stretches[1]["slowest"] < 1.0  # slowed, then caught up
    # the last stretch: 10 rad/s for a while against 6 * margin, so it grows
    assert stretches[2]["time_factor"] > 1.05
    assert summary["duration_s"] == pytest.approx(2.0 + stretches[2]["time_factor"], abs=1 / 600)
    # the markers: the retimed crank passes through the animated pose at each pin's time
    rate = result.mapping.rate
    for pin in (1.0, 2.0):
        frame = round(pin * rate)
        assert result.times[frame] == pytest.approx(pin)
        one_frame = np.abs(result.curves.velocities()[frame, 0]) / rate
        assert abs(result.curves.values[frame, 0] - crank_angle(pin)) <= one_frame
    # where the animation was inside the limit and no catch-up was needed, its timing is kept
    early = result.times < 0.9
    np.testing.assert_allclose(result.curves.values[early, 0], crank_angle(result.times[early]), atol=1e-6)


def test_a_clip_within_its_limits_is_not_retimed():
    samples, _ = shot(seconds=1.0)
    kept = retarget(_fourbar(), samples, mapping())
    stretched = retarget_timed(_fourbar(), samples, mapping(timing="stretch"), pins=(0.5,))
    np.testing.assert_array_equal(stretched.curves.values, kept.curves.values)
    assert [s["time_factor"] for s in stretched.retiming["stretches"]] == [1.0, pytest.approx(1.0)]


def test_pins_without_stretch_are_refused():
    samples, _ = shot(seconds=1.0)
    with pytest.raises(RetimeError, match="timing is 'keep'"):
        retarget_timed(_fourbar(), samples, mapping(), pins=(0.5,))


def test_cli_retimes_with_pinned_frames_and_check_strict_passes(tmp_path, capsys):
    from looprig.cli import main

    samples, _ = shot()
    clip = Clip(
        60.0,
        0,
        {"coupler": Track(samples.positions["coupler"], quat_from_matrix(samples.rotations["coupler"]))},
    )
    tracks = write_tracks(clip, tmp_path / "shot.tracks.json")
    map_path = tmp_path / "shot.map.json"
    mapping().save(map_path)
    out = tmp_path / "out"
    args = ["retarget", "fourbar", str(tracks), "--map", str(map_path), "-o", str(out), "--strict"]
    assert main([*args, "--timing", "stretch", "--pin", "60", "120", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["timing"] == "stretch"
    assert [s["time_factor"] > 1.05 for s in report["retiming"]["stretches"]] == [False, False, True]
    assert main(["check", str(out / "curves.csv"), "--strict"]) == 0
    assert "within limits" in capsys.readouterr().out
    # the same clip kept in time: held in space, limited frames refused by --strict
    assert main([*args, "--quiet"]) == 3


def _fourbar():
    from looprig.core.library import build

    return build("fourbar")


def test_an_acceleration_limit_is_kept_along_the_new_timing():
    """A motor swinging x = A sin(w t) asks A w^2 = 4x its acceleration limit a (its speed
    unlimited): retimed, the curve along the new timing keeps |x''| <= a (central
    differences at the clip's rate), and at a turning point, where x' = 0, the path speed
    is the closed form sqrt(margin a / (A w^2))."""
    rate, a, A, w = 600.0, 10.0, 1.0, np.sqrt(40.0)
    times = np.arange(round(2.0 * rate) + 1) / rate
    curves = ActuatorCurves(times, A * np.sin(w * times), ("arm",), acceleration_limit=a)
    path = PathTiming(curves)
    turn = np.pi / (2 * w)  # x' = 0, |x''| = A w^2
    assert path.speed_at(turn) == pytest.approx(np.sqrt(LIMIT_MARGIN * a / (A * w**2)), rel=1e-4)
    plan = plan_retiming(0.0, 2.0, [], path.profile, path.speed_at, rate)
    new_times = np.arange(round(plan.duration * rate) + 1) / rate
    clip_times = plan.clip_times(new_times)
    retimed = ActuatorCurves(new_times, A * np.sin(w * clip_times), ("arm",), acceleration_limit=a)
    assert plan.stretches[0].time_factor > 1.5
    assert np.abs(retimed.accelerations()).max() <= a
    assert clip_times[-1] == pytest.approx(2.0)


def test_the_terminal_lists_each_stretchs_factor():
    """One line for the whole retiming, one per stretch, each with its factor as the report has it."""
    from looprig.retime import retiming_lines

    times = np.linspace(0.0, 1.0, 301)
    curves = ActuatorCurves(times, 3.0 * times**2, ("m",), velocity_limit=2.0)
    path = PathTiming(curves)
    report = plan_retiming(0.0, 1.0, [0.25], path.profile, path.speed_at, 300.0).to_dict()
    first, *stretches = retiming_lines(report)
    assert first.startswith(f"retimed 1.000 s -> {report['duration_s']:.3f} s, pins at 0.250 s")
    assert len(stretches) == len(report["stretches"]) == 2
    for line, stretch in zip(stretches, report["stretches"], strict=True):
        assert f"time x{stretch['time_factor']:.3f}" in line
    assert "slowed to" in stretches[1] and stretches[1].startswith("stretch 0.250-1.000 s")
