"""Pollen's Reachy Mini (../shared/models/reachy_mini): the head's six Stewart motors
against a closed form, default settings, only the head targeted.

The reference is computed here from the geometry in the MJCF file, read with MuJoCo
at qpos0 (not through looprig's import). Each leg k is a motor horn turning about the
axis u through the pivot P of motor ``stewart_k``, a ball at B (joint ``passive_k``)
and a rod of length l to the head point H (site ``closing_k_2``; leg 6 ends at the
head's ball ``passive_7``); l = |closing_k_1 - B| (leg 6: |passive_7 - passive_6|).
Turning the horn by t moves the ball to P + (r.u) u + cos t r_perp + sin t u x r_perp
(r = B - P), so |B(t) - H| = l reads A cos t + B sin t = C with d = P + (r.u) u - H,
A = 2 d.r_perp, B = 2 d.(u x r_perp), C = l^2 - |d|^2 - |r_perp|^2; the root nearest
the file pose is taken. The file's own loops close to about 1.4e-7 m at qpos0, which
puts the reference about 3e-6 rad from zero there.
"""

from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import load_mechanism
from looprig.core.curves.limit_checks import all_violations
from looprig.core.errors import LooprigWarning
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")

MODEL = Path(__file__).resolve().parents[2] / "shared" / "models" / "reachy_mini"
MJCF, URDF = MODEL / "mjcf" / "reachy_mini.xml", MODEL / "urdf" / "robot.urdf"
#: The MJCF's actuators; the URDF declares none, so they are named at import.
MOTORS = ("yaw_body", *(f"stewart_{k}" for k in range(1, 7)), "right_antenna", "left_antenna")
STEWART = tuple(f"stewart_{k}" for k in range(1, 7))

pytestmark = pytest.mark.skipif(not MJCF.exists(), reason="the shared Reachy Mini model is not here")


def head_geometry():
    """Per leg (pivot (3,), axis (3,), ball (3,), head point (3,), rod length) [m] in
    world at qpos0; the body-yaw joint's anchor and axis; the head's origin (3,) [m]."""
    model = mujoco.MjModel.from_xml_path(str(MJCF))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)

    def anchor(joint):
        return data.xanchor[model.joint(joint).id].copy()

    legs = []
    for k in range(1, 7):
        ball = anchor(f"passive_{k}")
        if k < 6:
            head, rod_end = data.site(f"closing_{k}_2").xpos.copy(), data.site(f"closing_{k}_1").xpos.copy()
        else:
            head = rod_end = anchor("passive_7")
        axis = data.xaxis[model.joint(f"stewart_{k}").id].copy()
        legs.append((anchor(f"stewart_{k}"), axis, ball, head, np.linalg.norm(rod_end - ball)))
    yaw = (anchor("yaw_body"), data.xaxis[model.joint("yaw_body").id].copy())
    return legs, yaw, data.body("xl_330").xpos.copy()


def stewart_angles(legs, R, t, yaw=None, yaw_joint=None) -> np.ndarray:
    """Motor angles (F, 6) [rad] for head motions x -> R x + t (R (F, 3, 3), t (F, 3) [m],
    world, from the file pose), the base turned by the body yaw (F,) [rad] if given."""
    out = np.empty((len(R), 6))
    for k, (pivot, u, ball, head, length) in enumerate(legs):
        pivot, u, ball = np.tile(pivot, (len(R), 1)), np.tile(u, (len(R), 1)), np.tile(ball, (len(R), 1))
        if yaw is not None:
            centre, axis = yaw_joint
            turn = Rotation.from_rotvec(np.multiply.outer(yaw, axis))
            pivot, u, ball = (
                turn.apply(pivot - centre) + centre,
                turn.apply(u),
                turn.apply(ball - centre) + centre,
            )
        r = ball - pivot
        along = np.sum(r * u, -1, keepdims=True)
        r_perp = r - along * u
        d = pivot + along * u - (np.einsum("fij,j->fi", R, head) + t)
        A = 2 * np.sum(d * r_perp, -1)
        B = 2 * np.sum(d * np.cross(u, r_perp), -1)
        C = length**2 - np.sum(d * d, -1) - np.sum(r_perp * r_perp, -1)
        roots = np.arctan2(B, A)[:, None] + np.array([1.0, -1.0]) * np.arccos(C / np.hypot(A, B))[:, None]
        roots = (roots + np.pi) % (2 * np.pi) - np.pi
        out[:, k] = roots[np.arange(len(R)), np.argmin(np.abs(roots), -1)]
    return out


def head_motion(centre, rate: float = 100.0):
    """A 1 s head motion about ``centre`` (3,) [m], starting 6 mm and 0.14 rad from the
    file pose: times (F,) [s], rotations R (F, 3, 3) and translations t (F, 3) [m] of
    x -> R x + t."""
    times = np.arange(int(rate) + 1) / rate
    w = 2 * np.pi * times
    R = Rotation.from_rotvec(
        np.stack([0.1 * np.cos(w), 0.12 * np.sin(w), 0.08 + 0.1 * np.sin(2 * w)], -1)
    ).as_matrix()
    shift = np.stack([0.004 + 0.006 * np.sin(w), -0.003 + 0.005 * np.sin(2 * w), 0.005 * np.cos(w)], -1)
    return times, R, centre + shift - np.einsum("fij,j->fi", R, centre)


def retarget_head(path: Path, times, R, t, **settings):
    """looprig's default retarget of the head frame ``xl_330`` moved by x -> R x + t
    (``settings``: mapping fields, e.g. ``hold``, the motors locked at their start)."""
    mechanism = load_mechanism(path) if path.suffix == ".xml" else load_mechanism(path, actuated=MOTORS)
    frame = mechanism.frame("xl_330")
    R0 = Rotation.from_quat(frame.orientation[[1, 2, 3, 0]]).as_matrix()
    track = TrackSamples(times, {"head": np.einsum("fij,j->fi", R, frame.position) + t}, {"head": R @ R0})
    mapping = RetargetMapping(
        (TargetSpec("head", "xl_330", (1, 1, 1), (1, 1, 1)),), rate=1 / (times[1] - times[0]), **settings
    )
    result = retarget(mechanism, track, mapping)
    names = mechanism.actuator_names
    return result, {name: result.curves.values[:, names.index(name)] for name in MOTORS}


@pytest.mark.parametrize("path", [MJCF, URDF], ids=["mjcf", "urdf"])
def test_by_default_antennas_and_yaw_hold_still_and_the_stewart_matches_the_closed_form(path):
    """Default settings, only the head targeted: the antennas (no target depends on them)
    and the body yaw (the Stewart platform meets every head pose without it) keep their
    start values to 1e-9 rad, and the six Stewart motors agree with the closed form for
    the unturned base to 1e-5 rad at every sample, the first included."""
    legs, _, centre = head_geometry()
    times, R, t = head_motion(centre)
    with pytest.warns(LooprigWarning, match=r"held at their start values: .*antenna.*yaw_body"):
        result, curves = retarget_head(path, times, R, t)
    assert set(result.holding.unused) == {"left_antenna", "right_antenna"}
    assert result.holding.redundant == ("yaw_body",)
    for name in ("yaw_body", "left_antenna", "right_antenna"):
        assert np.abs(curves[name] - curves[name][0]).max() < 1e-9
        assert abs(curves[name][0]) < 1e-9  # the clip starts from the file pose
    got = np.stack([curves[name] for name in STEWART], -1)
    assert np.abs(got - stewart_angles(legs, R, t)).max() < 1e-5
    assert result.position_error.max() < 1e-8 and result.orientation_error.max() < 1e-8
    assert result.unreachable.sum() == 0


@pytest.mark.parametrize("path", [MJCF, URDF], ids=["mjcf", "urdf"])
def test_without_auto_hold_the_stewart_matches_the_closed_form_for_the_body_yaw_reached(path):
    """With ``auto_hold`` off the minimal-motion metric shares the head's turn between the
    body yaw and the Stewart platform; the head is met and the six Stewart motors agree
    with the closed form to 1e-5 rad at every sample for the base turned by the yaw the
    solve reached (the head's pose alone does not fix the split)."""
    legs, yaw_joint, centre = head_geometry()
    times, R, t = head_motion(centre)
    result, curves = retarget_head(path, times, R, t, auto_hold=False)
    assert result.holding is None and np.abs(curves["yaw_body"]).max() > 1e-2
    expected = stewart_angles(legs, R, t, curves["yaw_body"], yaw_joint)
    got = np.stack([curves[name] for name in STEWART], -1)
    assert np.abs(got - expected).max() < 1e-5
    assert result.position_error.max() < 1e-8 and result.orientation_error.max() < 1e-8
    assert result.unreachable.sum() == 0


@pytest.mark.parametrize("path", [MJCF, URDF], ids=["mjcf", "urdf"])
def test_held_motors_stay_put_and_the_stewart_matches_the_yaw_held_closed_form(path):
    """With the body yaw and the antennas held by the mapping's ``hold`` (``auto_hold`` off),
    they keep their start values exactly and the six Stewart motors match the closed form
    for the unturned base to 1e-5 rad at every sample."""
    legs, _, centre = head_geometry()
    times, R, t = head_motion(centre)
    held = ("yaw_body", "left_antenna", "right_antenna")
    result, curves = retarget_head(path, times, R, t, hold=held, auto_hold=False)
    for name in held:
        assert np.abs(curves[name]).max() < 1e-9
    got = np.stack([curves[name] for name in STEWART], -1)
    assert np.abs(got - stewart_angles(legs, R, t)).max() < 1e-5
    assert result.position_error.max() < 1e-8 and result.unreachable.sum() == 0


def test_a_head_turn_the_stewart_cannot_make_alone_keeps_the_yaw_free():
    """The head turned by up to 2 rad about the vertical: the Stewart platform alone would
    miss it, so the body yaw stays free (and turns), no Stewart leg is held in its place
    (the legs of a loop are never tried), the antennas are held, and the head is met.
    The exact answer takes stewart_1 0.017 rad past its range at the turn's peak; held
    (the default), the range keeps and the head is still met to a few micrometres (the
    yaw takes more of the turn; the Stewart loops and the redundant yaw are what the
    interior point's gentle second try is for)."""
    mechanism = load_mechanism(MJCF)
    frame = mechanism.frame("xl_330")
    times = np.arange(101) / 100.0
    R = Rotation.from_rotvec(np.outer(2.0 * np.sin(np.pi * times), [0.0, 0.0, 1.0])).as_matrix()
    t = frame.position - np.einsum("fij,j->fi", R, frame.position)
    with pytest.warns(LooprigWarning, match="antenna"):
        result, curves = retarget_head(MJCF, times, R, t, limit_mode="report")
    assert set(result.holding.motors) == {"left_antenna", "right_antenna"}
    assert "missed" in result.holding.kept_free["yaw_body"]
    assert np.ptp(curves["yaw_body"]) > 1.0
    assert result.position_error.max() < 1e-8 and result.orientation_error.max() < 1e-8
    assert [v.actuator for v in all_violations(result.curves)] == ["stewart_1"]
    with pytest.warns(LooprigWarning, match="antenna"):
        held, _ = retarget_head(MJCF, times, R, t)
    assert not all_violations(held.curves) and held.summary()["limit_solve"]["converged"]
    assert held.position_error.max() < 1e-5 and held.residual.max() < 1e-9
