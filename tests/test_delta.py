"""The library delta: parallelogram forearms hold its platform level, so a position
clip alone drives it, with default settings, onto the closed-form arm angles."""

import numpy as np
from looprig.core import ActuatorReadout, single_threaded_blas, solve_fk
from looprig.core.library import build
from looprig.core.library.clips import delta_platform_clip
from looprig.core.library.parallel import DELTA_ARM_ANGLE, delta_arm_angles, delta_file_height
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, retarget


def platform_rotations(mechanism, states) -> np.ndarray:
    """(F, 3, 3) platform axes in world of states (F, n, 7)."""
    return quat_to_matrix(states[:, mechanism.body_index("platform"), 3:])


def test_delta_follows_a_platform_position_clip_with_default_settings():
    """Only the platform's position is targeted (no orientation weight, default
    settings); the clip starts 1.2 cm beside and 1.2 cm above the file pose.

    Closed form (``delta_arm_angles``): in leg k's frame (x out along its azimuth
    phi_k, z up) the elbow is E = (R + a cos t, 0, -a sin t) and the centre of the
    rod pair's platform ends P = (x, y, z) = Rz(-phi_k) p + (r, 0, 0); |E - P| = l gives
    A cos t + B sin t = C with A = 2 a (R - x), B = 2 a z,
    C = l^2 - (R - x)^2 - y^2 - z^2 - a^2, t = atan2(B, A) + acos(C / hypot(A, B)).
    Motor k reads t_k - t_file [rad]. The parallelograms keep the platform's axes
    the world's at every sample."""
    rate = 200.0
    samples, p = delta_platform_clip(rate)
    mechanism = build("delta")
    result = retarget(mechanism, samples, RetargetMapping((TargetSpec("platform", "platform"),), rate=rate))
    expected = delta_arm_angles(p) - DELTA_ARM_ANGLE
    assert result.curves.names == ("motor1", "motor2", "motor3")
    assert np.abs(result.curves.values - expected).max() < 1e-6
    assert np.abs(result.curves.values[0] - expected[0]).max() < 1e-6
    assert result.unreachable.sum() == 0
    assert np.abs(platform_rotations(mechanism, result.states) - np.eye(3)).max() < 1e-9


def test_delta_fk_keeps_the_platform_level_and_inverts_the_closed_form():
    """FK of motor angles from the closed form of a platform position p puts the
    platform at p with its axes the world's (the mechanism, not a target, holds them)."""
    mechanism = build("delta")
    p = np.array([0.02, -0.015, delta_file_height() + 0.01])
    with single_threaded_blas():
        result = solve_fk(mechanism, delta_arm_angles(p) - DELTA_ARM_ANGLE)
    platform = mechanism.body_index("platform")
    assert result.converged
    assert np.abs(result.state[platform, :3] - p).max() < 1e-9
    assert np.abs(platform_rotations(mechanism, result.state[None]) - np.eye(3)).max() < 1e-9
    assert (
        np.abs(ActuatorReadout(mechanism).read(result.state) - (delta_arm_angles(p) - DELTA_ARM_ANGLE)).max()
        < 1e-9
    )
