"""The motor speed limit between consecutive frames (``respect_speed_limits``).

Every retarget uses ``RetargetMapping``'s defaults otherwise. The bound is
``|p_k - p_k-1| <= h = k v / rate`` per motor (k = ``limit_fraction`` = 0.9, v the
motor's velocity limit [rad/s]). Which frames it may touch is predicted from the
run without it alone (:func:`~looprig.core.speed_limit.frames_behind`): where that
run moves a motor by more than h, the motor lags at h and then catches up at h;
the catch-up's braking adds at most ``BRAKING_FRAMES`` frames. Every other frame
must match the run without the bound.
"""

import dataclasses

import numpy as np
from looprig.core import Mechanism
from looprig.core.curves import all_violations
from looprig.core.library import build
from looprig.core.library.clips import delta_platform_clip
from looprig.core.library.parallel import delta
from looprig.core.library.planar import fourbar, fourbar_closed_form
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.speed_limit import BRAKING_FRAMES, frames_behind
from test_closed_forms import ALL_AXES, BOXER_RATE, boxer_clip_through_the_singularity, boxer_hand

HAND = (TargetSpec("hand", "hand", ALL_AXES, ALL_AXES),)


def _per_frame_steps(result, rate: float) -> np.ndarray:
    """The bound h (A,) [rad] of each motor at ``rate`` with the default limit_fraction."""
    return RetargetMapping(HAND).limit_fraction * result.curves.velocity_limit / rate


def _with_speed_limit(mechanism: Mechanism, velocity: float) -> Mechanism:
    """``mechanism`` with every actuator's velocity limit set to ``velocity`` [rad/s]."""
    joints = [
        dataclasses.replace(j, actuator=dataclasses.replace(j.actuator, velocity_limit=velocity))
        if j.actuator is not None
        else j
        for j in mechanism.joints
    ]
    return Mechanism(mechanism.bodies, joints, mechanism.frames, name=mechanism.name)


def _coupler_samples(t, theta) -> TrackSamples:
    """Track ``coupler``: the library four-bar's coupler point (5 cm off the coupler's
    middle) for crank angles theta (F,) [rad] at times t (F,) [s]."""
    _, B = fourbar_closed_form(theta)
    A = np.stack([0.1 * np.cos(theta), 0.1 * np.sin(theta)], -1)
    along = (B - A) / np.linalg.norm(B - A, axis=-1, keepdims=True)
    point = 0.5 * (A + B) + 0.05 * np.stack([-along[:, 1], along[:, 0]], -1)
    return TrackSamples(
        t,
        {"coupler": np.concatenate([point, np.zeros((len(t), 1))], -1)},
        {"coupler": np.tile(np.eye(3), (len(t), 1, 1))},
    )


def test_a_crank_too_slow_for_the_clip_lags_at_its_limit_and_catches_up():
    """Four-bar, position-only coupler target; the crank angle theta(t) = theta_0 +
    1.5 t + 0.4 tanh((t - 0.6) / 0.08) [rad] turns at 1.5 rad/s with a burst up to
    6.5 rad/s, on a 4 rad/s motor (bound 3.6 rad/s). One motor decides the pose, so the crank
    is the motion followed at the bound: where the motion is faster, it moves by
    exactly h per frame; elsewhere it is the closed form."""
    rate, file_angle = 200.0, np.pi / 2
    t = np.arange(401) / rate
    theta = file_angle + 0.3 + 1.5 * t + 0.4 * np.tanh((t - 0.6) / 0.08)
    samples = _coupler_samples(t, theta)
    mapping = RetargetMapping(
        (TargetSpec("coupler", "coupler_point"),), rate=rate, respect_speed_limits=True, limit_mode="report"
    )
    result = retarget(_with_speed_limit(fourbar(file_angle), 4.0), samples, mapping)
    crank, h = result.curves.values[:, 0], 0.9 * 4.0 / rate
    expected = theta - file_angle
    affected = frames_behind(expected[:, None], np.array([h]))
    assert 20 < affected.sum() < len(t) // 2
    assert np.abs(np.diff(crank)).max() <= h * (1 + 1e-6)
    assert np.abs(crank - expected)[~affected].max() < 1e-6
    assert result.position_error[~affected].max() < 1e-6
    # while the motion runs away from it, the crank moves at the bound
    faster = np.flatnonzero(np.diff(expected) > h)[1:]
    assert np.abs(crank[faster + 1] - crank[faster] - h).max() < 1e-9
    assert not [v for v in all_violations(result.curves) if v.quantity == "velocity"]


def test_a_speed_limit_the_motion_respects_changes_nothing():
    """The Boxer through its exact gimbal singularity with 4 rad/s servos (bound
    3.6 rad/s, above every step of the run without it): the same curves and states
    as that run, to the last bit, solved as a whole clip (the default) or frame by
    frame."""
    _, clip = boxer_clip_through_the_singularity()
    boxer = _with_speed_limit(build("boxer"), 4.0)
    for whole_clip in (True, False):
        options = {"rate": BOXER_RATE, "whole_clip": whole_clip}
        free = retarget(boxer, clip, RetargetMapping(HAND, limit_mode="report", **options))
        limited = retarget(
            boxer, clip, RetargetMapping(HAND, respect_speed_limits=True, limit_mode="report", **options)
        )
        steps = _per_frame_steps(free, BOXER_RATE)
        assert not frames_behind(free.curves.values, steps).any()
        assert np.array_equal(limited.curves.values, free.curves.values)
        assert np.array_equal(limited.states, free.states)


def _boxer_through_the_singularity(clip, rate, whole_clip=False):
    """Runs without and with the bound, the bound h (A,) and the frames it may touch.
    Frame by frame (``whole_clip=False``), the singular sample's split is the
    per-frame solver's."""
    options = {"rate": rate, "whole_clip": whole_clip}
    free = retarget(build("boxer"), clip, RetargetMapping(HAND, limit_mode="report", **options))
    limited = retarget(
        build("boxer"), clip, RetargetMapping(HAND, respect_speed_limits=True, limit_mode="report", **options)
    )
    steps = _per_frame_steps(free, rate)
    return free, limited, steps, frames_behind(free.curves.values, steps)


def _assert_bound_and_exact_elsewhere(free, limited, steps, affected):
    assert (np.abs(np.diff(limited.curves.values, axis=0)).max(axis=0) <= steps * (1 + 1e-6)).all()
    assert limited.position_error[~affected].max() < 1e-6
    assert limited.orientation_error[~affected].max() < 1e-6
    first = np.argmax(affected)
    assert np.array_equal(limited.curves.values[:first], free.curves.values[:first])


def test_boxer_through_an_exact_gimbal_singularity_stays_under_its_servo_limits():
    """Default XH430 servos (pi rad/s, bound 2.83 rad/s). At the singular sample
    only q1 + q3 is determined; the run without the bound splits it so that the next
    step of the pitch is 3.05 rad/s. With the bound the pitch takes 2.83 rad/s there
    for a few micrometres of error at that one frame; every other frame is exact,
    and the curves' own limit check (spline velocities) finds nothing."""
    _, clip = boxer_clip_through_the_singularity()
    free, limited, steps, affected = _boxer_through_the_singularity(clip, BOXER_RATE)
    assert (np.abs(np.diff(free.curves.values, axis=0)) > steps).any()
    assert 0 < affected.sum() <= 1 + BRAKING_FRAMES
    _assert_bound_and_exact_elsewhere(free, limited, steps, affected)
    assert limited.position_error.max() < 1e-5
    assert not [v for v in all_violations(limited.curves) if v.quantity == "velocity"]


def test_boxer_whose_motion_breaks_the_limit_at_the_singularity_catches_up():
    """The same arm and singular sample, with the yaw and the pitch also swinging
    0.6 rad apart within a tenth of a second around it, ``d = 0.3 tanh((t - 0.5) /
    0.05)`` added to q1 and taken from q3 (6 rad/s): a motion the servos cannot
    follow. Both lag at the bound while it lasts and catch up after; outside those
    frames the hand pose is exact."""
    t = np.arange(201) / BOXER_RATE
    swing = 0.3 * np.tanh((t - 0.5) / 0.05)
    q = np.stack(
        [
            0.3 + 0.5 * np.sin(np.pi * t) + swing,
            np.pi / 2 + 0.6 * np.sin(np.pi * (t - 0.5)),
            -0.4 + 0.3 * np.sin(1.5 * np.pi * t) - swing,
            0.8 - 0.5 * np.sin(np.pi * t),
        ],
        -1,
    )
    p, R = boxer_hand(q)
    clip = TrackSamples(t, {"hand": p}, {"hand": R})
    for whole_clip in (False, True):  # frame by frame; the clip solver, re-solved where it is too fast
        free, limited, steps, affected = _boxer_through_the_singularity(clip, BOXER_RATE, whole_clip)
        assert 20 < affected.sum() < len(t) // 2
        _assert_bound_and_exact_elsewhere(free, limited, steps, affected)
        assert np.abs(limited.curves.values - free.curves.values)[~affected].max() < 1e-8


def test_a_motor_without_a_speed_limit_is_never_bounded():
    """The four-bar burst of the first test on a motor with no velocity limit
    (``inf``): the curves of the run without the bound."""
    rate, file_angle = 200.0, np.pi / 2
    t = np.arange(201) / rate
    theta = file_angle + 0.3 + 1.5 * t + 0.4 * np.tanh((t - 0.6) / 0.08)
    samples = _coupler_samples(t, theta)
    mechanism = _with_speed_limit(fourbar(file_angle), np.inf)
    spec = (TargetSpec("coupler", "coupler_point"),)
    free = retarget(mechanism, samples, RetargetMapping(spec, rate=rate, limit_mode="report"))
    limited = retarget(
        mechanism, samples, RetargetMapping(spec, rate=rate, respect_speed_limits=True, limit_mode="report")
    )
    assert np.abs(np.diff(free.curves.values[:, 0])).max() * rate > 6.0
    assert np.array_equal(limited.curves.values, free.curves.values)


def test_a_parallel_robot_keeps_its_loops_closed_under_the_bound():
    """The 3-RSS delta (three arm motors, closed loops) on the platform clip of
    tests/test_closed_forms.py, its motors limited to 70 % of the clip's fastest
    step: every step within the bound, every loop closed, and the platform exact
    outside the frames the bound can touch."""
    rate = 200.0
    samples, p = delta_platform_clip(rate)
    spec = (TargetSpec("platform", "platform", ALL_AXES, ALL_AXES),)
    fastest = np.abs(
        np.diff(
            retarget(delta(), samples, RetargetMapping(spec, rate=rate, limit_mode="report")).curves.values,
            axis=0,
        )
    )
    limit = 0.7 * fastest.max() * rate / 0.9  # [rad/s]: the bound is 70 % of the fastest step
    mechanism = _with_speed_limit(delta(), limit)
    free = retarget(mechanism, samples, RetargetMapping(spec, rate=rate, limit_mode="report"))
    limited = retarget(
        mechanism, samples, RetargetMapping(spec, rate=rate, respect_speed_limits=True, limit_mode="report")
    )
    steps = _per_frame_steps(free, rate)
    affected = frames_behind(free.curves.values, steps)
    assert 0 < affected.sum() < len(p)
    assert (np.abs(np.diff(limited.curves.values, axis=0)) <= steps * (1 + 1e-6)).all()
    assert limited.residual.max() < 1e-9
    assert limited.position_error.max(axis=1)[~affected].max() < 1e-6
