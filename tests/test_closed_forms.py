"""Parallel robots against their closed forms, with default settings.

Every retarget uses ``RetargetMapping``'s defaults (targets and a rate only);
clips start away from the file pose, and every actuator sample (the first
included) is compared with the robot's closed-form inverse kinematics.
"""

import numpy as np
from looprig.core.library.parallel import (
    DELTA_ARM_ANGLE,
    STEWART_HEIGHT,
    delta,
    delta_arm_angles,
    delta_file_height,
    stewart,
    stewart_leg_lengths,
)
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
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


def test_delta_motor_angles_follow_a_platform_position_clip_with_orientation_held():
    """3-RSS delta, platform position targeted and its orientation held level
    (orientation weight on); the clip starts 2 cm from the file pose.

    Closed form (``delta_arm_angles``): in leg k's frame (x out along its azimuth
    phi_k, z up) the elbow is E = (R + a cos t, 0, -a sin t) and the rod end
    P = (x, y, z) = Rz(-phi_k) p + (r, 0, 0); |E - P| = l gives
    A cos t + B sin t = C with A = 2 a (R - x), B = 2 a z,
    C = l^2 - (R - x)^2 - y^2 - z^2 - a^2, t = atan2(B, A) + acos(C / hypot(A, B)).
    Motor k reads t_k - t_file [rad]."""
    rate = 200.0
    t = np.arange(241) / rate
    w = 2 * np.pi * t
    home = np.array([0.0, 0.0, delta_file_height()])
    p = home + np.stack([0.012 + 0.03 * np.sin(w), -0.01 + 0.025 * np.sin(2 * w), 0.012 * np.cos(w)], -1)
    samples = TrackSamples(t, {"platform": p}, {"platform": np.tile(np.eye(3), (len(t), 1, 1))})
    mapping = RetargetMapping((TargetSpec("platform", "platform", ALL_AXES, ALL_AXES),), rate=rate)
    result = retarget(delta(), samples, mapping)
    expected = delta_arm_angles(p) - DELTA_ARM_ANGLE
    assert np.abs(result.curves.values - expected).max() < 1e-6
    assert result.unreachable.sum() == 0
