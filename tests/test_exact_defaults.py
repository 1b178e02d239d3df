"""Default settings give curves that match the motion: closed forms, first frame included.

Every retarget here uses ``RetargetMapping``'s defaults (only the rate is chosen);
motor read-offs are zero at the file pose, so an absolute crank angle theta reads
as ``theta - theta_file``.
"""

import dataclasses

import numpy as np
from looprig.core import Actuator, Body, Frame, Joint, JointKind, Mechanism
from looprig.core.library.planar import fourbar, fourbar_closed_form, slider_crank, slider_crank_closed_form
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget

Z = np.array([0.0, 0.0, 1.0])


def _samples(times, positions: dict) -> TrackSamples:
    rotations = {n: np.tile(np.eye(3), (len(times), 1, 1)) for n in positions}
    return TrackSamples(times, positions, rotations)


def _coupler_point(theta):
    """The four-bar's coupler point (library geometry): 5 cm left of the coupler's middle."""
    A = np.stack([0.1 * np.cos(theta), 0.1 * np.sin(theta), 0 * theta], -1)
    _, B2 = fourbar_closed_form(theta)
    B = np.concatenate([B2, np.zeros((len(theta), 1))], -1)
    along = (B - A) / np.linalg.norm(B - A, axis=-1, keepdims=True)
    return 0.5 * (A + B) + 0.05 * np.cross(Z, along)


def test_fourbar_follows_two_crank_turns_from_away_from_its_file_pose():
    """Position-only coupler target; the clip starts 0.4 rad from the file pose."""
    file_angle, rate = np.pi / 2, 600.0
    times = np.arange(1201) / rate  # 2 s, two turns: theta = file + 0.4 + 2 pi t
    theta = file_angle + 0.4 + 2 * np.pi * times
    # the crank turns at up to 8 rad/s, past its 6 rad/s: the exact answer (report)
    mapping = RetargetMapping((TargetSpec("hand", "coupler_point"),), rate=rate, limit_mode="report")
    result = retarget(fourbar(file_angle), _samples(times, {"hand": _coupler_point(theta)}), mapping)
    crank = result.curves.values[:, 0]
    assert np.abs(crank - (theta - file_angle)).max() < 1e-6
    assert result.unreachable.sum() == 0
    velocity = result.curves.velocities()[:, 0]
    assert abs(velocity[0] - 2 * np.pi) < 1e-3 * 2 * np.pi  # no settle jump at t = 0


def _slider_crank_with_pin(file_angle: float, slider_motor: bool) -> Mechanism:
    """The library slider-crank plus a frame on the crank pin; the crank or the slider is the motor."""
    m = slider_crank(file_angle)
    pin = np.array([0.1 * np.cos(file_angle), 0.1 * np.sin(file_angle), 0.0])
    joints = list(m.joints)
    if slider_motor:
        motor = Actuator.__new__(Actuator)  # placeholder replaced below
        slide = next(i for i, j in enumerate(joints) if j.kind == JointKind.PRISMATIC)
        crank = next(i for i, j in enumerate(joints) if j.actuator is not None)
        motor = dataclasses.replace(
            joints[crank].actuator, motion=type(joints[crank].actuator.motion)("displacement")
        )
        joints[slide] = dataclasses.replace(joints[slide], actuator=motor)
        joints[crank] = dataclasses.replace(joints[crank], actuator=None)
    return Mechanism(m.bodies, joints, [*m.frames, Frame("pin", "crank", position=pin)])


def test_slider_crank_from_a_dead_centre_file_pose_through_both_dead_centres():
    """File pose: crank at 0 (a dead centre). The crank pin follows theta = 0.3 .. 0.3 + 2 pi,
    passing both dead centres; the crank motor reads theta, the slider motor reads x(theta) - x(0)."""
    rate = 500.0
    times = np.arange(1001) / rate
    theta = 0.3 + np.pi * times
    pin = np.stack([0.1 * np.cos(theta), 0.1 * np.sin(theta), 0 * theta], -1)
    mapping = RetargetMapping((TargetSpec("pin", "pin"),), rate=rate)
    for slider_motor, expected in ((False, theta), (True, slider_crank_closed_form(theta) - 0.4)):
        result = retarget(_slider_crank_with_pin(0.0, slider_motor), _samples(times, {"pin": pin}), mapping)
        assert np.abs(result.curves.values[:, 0] - expected).max() < 1e-8 + 1e-6 * (not slider_motor)
        assert result.unreachable.sum() == 0


def test_a_singular_file_pose_does_not_trap_the_first_frame():
    """Crank motor, only the slider tracked, file pose at the dead centre (no gradient there):
    the first frame is met; the crank reads +-theta (both branches give that slider position)."""
    rate = 200.0
    times = np.arange(201) / rate
    theta = 0.5 + 1.5 * times
    x = slider_crank_closed_form(theta)
    tip = np.stack([x, 0 * x, 0 * x], -1)
    mapping = RetargetMapping((TargetSpec("tip", "slider_tip", position_weight=(1.0, 0.0, 0.0)),), rate=rate)
    result = retarget(slider_crank(0.0), _samples(times, {"tip": tip}), mapping)
    crank = result.curves.values[:, 0]
    assert np.abs(np.abs(crank) - theta).max() < 1e-6
    assert result.unreachable.sum() == 0


def test_a_motor_no_target_moves_holds_its_value():
    """A two-link arm tracked at its tip carries an 'antenna' motor on its upper link: the
    antenna's body swings with the arm (0.6 rad), its joint value stays at its start: no
    target depends on it, so it is held exactly by default (core.solvers.holding)."""
    motor = Actuator(velocity_limit=10.0)
    p0, p1, p2 = np.zeros(3), np.array([0.3, 0.0, 0.0]), np.array([0.55, 0.0, 0.0])
    antenna_root = np.array([0.15, 0.0, 0.0])
    m = Mechanism(
        [
            Body("base", position=p0, mass=1.0, grounded=True),
            Body("upper", position=0.5 * p1, mass=1.0),
            Body("lower", position=0.5 * (p1 + p2), mass=1.0),
            Body("antenna", position=antenna_root + [0.0, 0.05, 0.0], mass=0.05),
        ],
        [
            Joint("shoulder", JointKind.REVOLUTE, "base", "upper", anchor=p0, axis=Z, actuator=motor),
            Joint("elbow", JointKind.REVOLUTE, "upper", "lower", anchor=p1, axis=Z, actuator=motor),
            Joint(
                "antenna_joint",
                JointKind.REVOLUTE,
                "upper",
                "antenna",
                anchor=antenna_root,
                axis=Z,
                actuator=motor,
            ),
        ],
        [Frame("tip", "lower", position=p2)],
    )
    rate = 300.0
    times = np.arange(301) / rate
    angle = 0.6 * np.sin(2 * np.pi * times)
    tip = np.stack([0.5 * np.cos(angle), 0.5 * np.sin(angle), 0 * angle], -1)
    result = retarget(
        m, _samples(times, {"tip": tip}), RetargetMapping((TargetSpec("tip", "tip"),), rate=rate)
    )
    antenna = result.curves.values[:, m.actuator_names.index("antenna_joint")]
    assert np.abs(antenna).max() < 1e-9
    assert result.holding.unused == ("antenna_joint",)
    assert result.position_error.max() < 1e-8
