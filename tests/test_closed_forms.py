"""Parallel robots against their closed forms, with default settings.

Every retarget uses ``RetargetMapping``'s defaults (targets and a rate only);
clips start away from the file pose, and every actuator sample (the first
included) is compared with the robot's closed-form inverse kinematics.
"""

import numpy as np
from looprig.core.library import build
from looprig.core.library.parallel import (
    STEWART_HEIGHT,
    stewart,
    stewart_leg_lengths,
)
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.retarget import solve as solve_module
from scipy.spatial.transform import Rotation

ALL_AXES = (1.0, 1.0, 1.0)


def test_stewart_leg_lengths_follow_a_six_dof_platform_clip():
    """Platform centre p(t) and orientation R(t) (position and orientation targeted);
    leg i's actuator reads |p + R b_i - a_i| - L0_i [m] (L0_i: its file-pose length).
    The clip starts 1.7 cm and 0.14 rad away from the file pose."""
    rate = 200.0
    t = np.arange(241) / rate  # 1.2 s
    w = 2 * np.pi * t
    p = np.stack(
        [0.01 + 0.02 * np.sin(w), -0.008 + 0.015 * np.sin(2 * w), STEWART_HEIGHT + 0.012 * np.cos(w)], -1
    )
    rotvec = np.stack([0.08 * np.cos(w), -0.05 + 0.1 * np.sin(w), 0.1 * np.cos(2 * w)], -1)
    R = Rotation.from_rotvec(rotvec).as_matrix()
    samples = TrackSamples(t, {"pose": p}, {"pose": R})
    mapping = RetargetMapping((TargetSpec("pose", "platform", ALL_AXES, ALL_AXES),), rate=rate)
    result = retarget(stewart(), samples, mapping)
    home = stewart_leg_lengths(np.array([0.0, 0.0, STEWART_HEIGHT]), np.eye(3))
    expected = stewart_leg_lengths(p, R) - home
    assert np.abs(result.curves.values - expected).max() < 1e-8
    assert result.unreachable.sum() == 0


# ----------------------------------------------------------------------------- Boxer
UPPER_ARM = FOREARM = 0.25  # the library Boxer's links [m]
SHOULDER = np.array([0.0, 0.2, 0.5])  # its shoulder centre S [m]


def _axis_rotations(angles, axis) -> np.ndarray:
    """(F, 3, 3) rotations by ``angles`` (F,) [rad] about a world ``axis``."""
    return Rotation.from_rotvec(np.multiply.outer(angles, axis)).as_matrix()


def boxer_hand(q) -> tuple[np.ndarray, np.ndarray]:
    """Boxer forward kinematics: hand positions (F, 3) [m] and axes (F, 3, 3) for joint
    angles q (F, 4) = (yaw about z, roll about x, pitch about y, elbow about y) [rad]:
    R = Rz(q1) Rx(q2) Ry(q3 + q4), p = S + Rz(q1) Rx(q2) Ry(q3) (f cos q4, 0, -u - f sin q4)."""
    q1, q2, q3, q4 = np.asarray(q, dtype=float).T
    shoulder = (
        _axis_rotations(q1, [0.0, 0.0, 1.0])
        @ _axis_rotations(q2, [1.0, 0.0, 0.0])
        @ _axis_rotations(q3, [0.0, 1.0, 0.0])
    )
    forearm = np.stack([FOREARM * np.cos(q4), 0 * q4, -UPPER_ARM - FOREARM * np.sin(q4)], -1)
    return SHOULDER + np.einsum("fij,fj->fi", shoulder, forearm), shoulder @ _axis_rotations(
        q4, [0.0, 1.0, 0.0]
    )


def boxer_closed_form(p, R, branch) -> np.ndarray:
    """Boxer inverse kinematics (F, 4) [rad] from hand positions p (F, 3) and axes R (F, 3, 3).

    R = Rz(a) Rx(b) Ry(c) with a = q1, b = q2, c = q3 + q4 has third row
    (-cos b sin c, sin b, cos b cos c) and second column (-sin a cos b, cos a cos b, sin b),
    so with s = sign(cos b) (``branch`` (F,), +-1: the roll's side of pi/2)
    b = atan2(R21, s hypot(R01, R11)), a = atan2(-s R01, s R11), c = atan2(-s R20, s R22).
    |p - S|^2 = u^2 + f^2 + 2 u f sin q4 gives the elbow (its range lies within arcsin's),
    and q3 = c - q4. At b = pi/2, Rx(pi/2) Ry(c) = Rz(c) Rx(pi/2): the hand depends on
    q1 + q3 alone (the yaw and pitch axes coincide), so only that sum is determined.
    Angles are continuous along the clip, the first sample within (-pi, pi].
    """
    s = np.asarray(branch, dtype=float)
    b = np.arctan2(R[:, 2, 1], s * np.hypot(R[:, 0, 1], R[:, 1, 1]))
    a = np.arctan2(-s * R[:, 0, 1], s * R[:, 1, 1])
    c = np.arctan2(-s * R[:, 2, 0], s * R[:, 2, 2])
    reach = np.sum((p - SHOULDER) ** 2, axis=-1)
    q4 = np.arcsin((reach - UPPER_ARM**2 - FOREARM**2) / (2 * UPPER_ARM * FOREARM))
    q = np.stack([a, b, c - q4, q4], -1)
    # where cos b = 0, a and c are undefined: keep the last yaw, the pitch takes the sum
    singular = np.flatnonzero(np.abs(np.cos(b)) < 1e-12)
    for k in singular:
        q[k, 0] = q[k - 1, 0]
        q[k, 2] = np.arctan2(R[k, 1, 0], R[k, 0, 0]) - q[k, 0] - q4[k]
    q = np.unwrap(q, axis=0)
    return q - 2 * np.pi * np.round(q[0] / (2 * np.pi))


#: The Boxer clip's rate [Hz] and the sample at which its roll is exactly pi/2.
BOXER_RATE, BOXER_SINGULAR_SAMPLE = 200.0, 100


def boxer_clip_through_the_singularity() -> tuple[np.ndarray, TrackSamples]:
    """Joint angles (201, 4) [rad] of a 1 s motion whose roll passes pi/2 exactly at
    ``BOXER_SINGULAR_SAMPLE``, starting 0.3-1.2 rad from the file pose, and the hand
    track (position and orientation) they give."""
    t = np.arange(201) / BOXER_RATE
    q = np.stack(
        [
            0.3 + 0.5 * np.sin(np.pi * t),
            np.pi / 2 + 0.6 * np.sin(np.pi * (t - t[BOXER_SINGULAR_SAMPLE])),
            -0.4 + 0.6 * np.sin(1.5 * np.pi * t),
            0.8 - 0.5 * np.sin(np.pi * t),
        ],
        -1,
    )
    assert q[BOXER_SINGULAR_SAMPLE, 1] == np.pi / 2
    p, R = boxer_hand(q)
    return q, TrackSamples(t, {"hand": p}, {"hand": R})


def test_boxer_hand_pose_through_an_exact_gimbal_singularity():
    """Hand position and orientation tracked through an exact gimbal lock (yaw and
    pitch axes aligned at one sample). Every other sample matches the closed form on
    the branch the motion is on (no flip to the mirror solution (q1 + pi, pi - q2,
    q3 + pi)); at the singular sample the roll, the elbow and q1 + q3 are exact, the
    split of the sum is the solver's."""
    q, clip = boxer_clip_through_the_singularity()
    singular, rate, t = BOXER_SINGULAR_SAMPLE, BOXER_RATE, clip.times
    p, R = clip.positions["hand"], clip.rotations["hand"]
    branch = np.where(np.arange(len(t)) < singular, 1.0, -1.0)
    expected = boxer_closed_form(p, R, branch)
    regular = np.arange(len(t)) != singular
    assert np.abs(expected[regular] - q[regular]).max() < 1e-9  # the closed form inverts the motion
    mapping = RetargetMapping((TargetSpec("hand", "hand", ALL_AXES, ALL_AXES),), rate=rate)
    result = retarget(build("boxer"), clip, mapping)
    curves = result.curves.values
    assert np.abs(curves[regular] - expected[regular]).max() < 1e-6
    at = curves[singular]
    assert abs((at[0] + at[2]) - (expected[singular, 0] + expected[singular, 2])) < 1e-6
    assert np.abs(at[[1, 3]] - expected[singular, [1, 3]]).max() < 1e-6
    assert result.unreachable.sum() == 0


def _body_speeds(states: np.ndarray, rate: float) -> np.ndarray:
    """Each body's angular speed between consecutive states (F - 1, n) [rad/s]: the
    angle of R_k^T R_k+1 times the rate (what the velocity barrier measures)."""
    R = (
        Rotation.from_quat(states[:, :, [4, 5, 6, 3]].reshape(-1, 4))
        .as_matrix()
        .reshape(states.shape[:2] + (3, 3))
    )
    steps = Rotation.from_matrix((np.swapaxes(R[:-1], -1, -2) @ R[1:]).reshape(-1, 3, 3))
    return steps.magnitude().reshape(len(states) - 1, -1) * rate


def test_a_velocity_barrier_the_motion_respects_changes_nothing(monkeypatch):
    """The Boxer through its exact singularity, with the body angular-velocity barrier
    on (limit 4.5 rad/s, above every body's speed in the motion): the curves are those
    of the run without it, for a weak and a strong barrier, frame by frame and as a
    whole clip (which resolves the singular sample itself more smoothly;
    tests/test_clip.py compares the two solvers). Frame by frame, the barrier compares
    frames, so both runs take the per-frame SQP; without it the run is solved in tree
    coordinates, which passes the singular sample as smoothly as the clip: exact, and
    within every motor limit without a second solve."""
    _, clip = boxer_clip_through_the_singularity()
    hand = (TargetSpec("hand", "hand", ALL_AXES, ALL_AXES),)
    limit = 4.5  # [rad/s]
    newton = retarget(build("boxer"), clip, RetargetMapping(hand, rate=BOXER_RATE, whole_clip=False))
    assert newton.limit_solve is None and newton.position_error.max() < 1e-9
    for whole_clip in (False, True):
        with monkeypatch.context() as patch:
            if not whole_clip:  # the barrier run's solver: the per-frame SQP
                patch.setattr(solve_module, "in_coordinates", lambda problem: False)
            free = retarget(
                build("boxer"), clip, RetargetMapping(hand, rate=BOXER_RATE, whole_clip=whole_clip)
            )
        assert _body_speeds(free.states, BOXER_RATE).max() < 0.95 * limit
        for weight in (1e-5, 1.0):
            mapping = RetargetMapping(
                hand,
                rate=BOXER_RATE,
                velocity_weight=weight,
                max_angular_velocity=limit,
                whole_clip=whole_clip,
            )
            barrier = retarget(build("boxer"), clip, mapping)
            assert np.abs(barrier.curves.values - free.curves.values).max() < 1e-8
