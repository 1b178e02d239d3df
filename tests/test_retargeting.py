"""Retargeting a clip: mapping files, resampling, CoM support, flags, regularizers."""

import numpy as np
import pytest
from looprig.core import TargetError
from looprig.core.library import build
from looprig.core.library.clips import boxer_singular_clip
from looprig.core.retarget import (
    ComSpec,
    RetargetCancelled,
    RetargetMapping,
    SupportPhase,
    TargetSpec,
    TrackSamples,
    retarget,
)
from looprig.core.retarget.targets import com_targets, target_arrays
from scipy.spatial.transform import Rotation


def test_mapping_file_round_trip(tmp_path):
    mapping = RetargetMapping(
        targets=(TargetSpec("foot_l", "left_foot", (10, 10, 10), (100, 100, 100), (0, 0, 0.01)),),
        com=ComSpec((10, 10, 0), support=(SupportPhase(0.0, 1.0, ("left_foot",)),)),
        rate=600.0,
        velocity_weight=1e-6,
        max_angular_velocity=3.0,
    )
    path = tmp_path / "map.json"
    mapping.save(path)
    assert RetargetMapping.load(path) == mapping


def test_malformed_mapping_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"targets": [{"track": "a"}]}')
    with pytest.raises(TargetError, match=r"bad\.json: malformed mapping"):
        RetargetMapping.load(path)


def test_resampling_is_exact_for_cubic_paths_and_uniform_rotation():
    """Not-a-knot cubic splines reproduce cubics; a rotation spline reproduces a constant
    angular velocity."""
    t = np.arange(25) / 24.0
    omega = np.array([0.3, -1.0, 2.0])  # [rad/s]
    positions = np.stack([t**3, 1 - 2 * t**2, t], axis=-1)
    samples = TrackSamples(t, {"a": positions}, {"a": Rotation.from_rotvec(t[:, None] * omega).as_matrix()})
    fine = samples.resampled(240.0)
    assert len(fine.times) == 241 and np.isclose(fine.times[-1], 1.0)
    tf = fine.times
    assert np.allclose(fine.positions["a"], np.stack([tf**3, 1 - 2 * tf**2, tf], -1), atol=1e-12)
    expected = Rotation.from_rotvec(tf[:, None] * omega).as_matrix()
    assert np.abs(fine.rotations["a"] - expected).max() < 1e-9


def test_unknown_track_is_named():
    samples = TrackSamples(np.zeros(1), {"hand": np.zeros((1, 3))}, {"hand": np.eye(3)[None]})
    mapping = RetargetMapping((TargetSpec("wrist", "hand"),))
    with pytest.raises(TargetError, match="no track 'wrist'; tracks are: hand"):
        target_arrays(mapping, samples)


def test_support_phases_put_the_com_target_over_the_feet():
    """Single support: over that foot; double support: the midpoint of both feet."""
    t = np.linspace(0.0, 2.0, 5)
    feet = {"l": np.array([0.0, 0.1, 0.0]), "r": np.array([0.0, -0.1, 0.0])}
    samples = TrackSamples(
        t, {k: np.tile(v, (5, 1)) for k, v in feet.items()}, {k: np.tile(np.eye(3), (5, 1, 1)) for k in feet}
    )
    mapping = RetargetMapping(
        (TargetSpec("l", "left_foot"), TargetSpec("r", "right_foot")),
        com=ComSpec(
            support=(
                SupportPhase(0.0, 1.0, ("left_foot",)),
                SupportPhase(1.0, 2.0, ("left_foot", "right_foot")),
            )
        ),
    )
    positions, _, _ = target_arrays(mapping, samples)
    com = com_targets(mapping, samples, positions)
    assert np.allclose(com[:2], feet["l"]) and np.allclose(com[3:], 0.0)
    gap = RetargetMapping(mapping.targets, com=ComSpec(support=(SupportPhase(0.0, 1.0, ("left_foot",)),)))
    with pytest.raises(TargetError, match=r"do not cover t = 1\.5"):
        com_targets(gap, samples, positions)


def test_unreachable_frames_are_flagged_and_stay_assembled():
    m = build("two_link_arm")
    t = np.linspace(0.0, 1.0, 61)
    path = np.stack([0.55 + 0.2 * t, 0 * t, 0 * t], -1)  # leaves the 0.55 m workspace at once
    samples = TrackSamples(t, {"tip": path}, {"tip": np.tile(np.eye(3), (61, 1, 1))})
    result = retarget(m, samples, RetargetMapping((TargetSpec("tip", "tip"),), rate=60.0))
    assert result.unreachable[-1] and result.unreachable.sum() > 50
    assert result.residual.max() < 1e-9
    assert result.position_error[-1, 0] == pytest.approx(0.2, abs=1e-4)


def test_progress_and_cancel_callbacks():
    m = build("two_link_arm")
    t = np.linspace(0.0, 1.0, 121)
    samples = TrackSamples(
        t, {"tip": np.tile([0.5, 0.1, 0.0], (121, 1))}, {"tip": np.tile(np.eye(3), (121, 1, 1))}
    )
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=120.0)
    seen = []
    retarget(m, samples, mapping, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (121, 121) and len(seen) >= 3
    done = [0]
    with pytest.raises(RetargetCancelled, match=r"at frame (\d+) of 121") as cancelled:
        retarget(m, samples, mapping, progress=lambda n, _: done.append(n), cancel=lambda: done[-1] > 50)
    # whole clips are solved in chunks: cancel acts at the first chunk boundary past frame 50
    stopped = int(cancelled.value.args[0].split()[-3])
    assert 50 < stopped < 121 and stopped == done[-1]


def test_velocity_regularizer_tames_the_boxer_singularity():
    """The paper's Boxer effect: through the shoulder singularity the unregularized
    solution spins yaw and pitch far beyond the servo limit; the body-velocity barrier
    brings every servo under its limit for about a millimetre of mean tracking error. The barrier is
    rate-independent, so 300 Hz keeps the test short."""
    m = build("boxer")
    clip = boxer_singular_clip(rate=300.0, elevation=0.05, segment=2.0)
    hand = (TargetSpec("hand", "hand", (1, 1, 1), (1, 1, 1)),)
    exact = {"rate": 300.0, "state_weight": 2e-4, "limit_mode": "report"}  # the barrier's own answer
    plain = retarget(m, clip, RetargetMapping(hand, **exact)).summary()
    tamed = retarget(
        m,
        clip,
        RetargetMapping(hand, **exact, velocity_weight=1e-5, max_angular_velocity=1.5),
    ).summary()
    peak = {
        s: max(a["peak_velocity"] for a in s_["actuators"]) for s, s_ in (("plain", plain), ("tamed", tamed))
    }
    limit = plain["actuators"][0]["velocity_limit"]
    assert peak["plain"] > 4 * limit
    assert peak["tamed"] < limit
    assert plain["max_position_error_m"] < 1e-4
    assert tamed["mean_position_error_m"] < 3e-3


def test_actuator_barrier_keeps_a_servo_inside_its_range():
    """The tip is pulled in towards the base, which folds the elbow past its 1.2 rad
    stop: the plain solve goes there, the range barrier holds the elbow inside."""
    import dataclasses

    from looprig.core import Actuator, solve_fk

    m = build("two_link_arm")
    stop = Actuator(lower=-1.2, upper=1.2, velocity_limit=10.0)
    m = type(m)(m.bodies, [dataclasses.replace(j, actuator=stop) for j in m.joints], m.frames)
    start = solve_fk(m, [0.3, 0.6]).state
    t = np.linspace(0.0, 1.0, 121)
    path = np.array([np.cos(0.6), np.sin(0.6), 0.0]) * np.linspace(0.5, 0.15, 121)[:, None]
    samples = TrackSamples(t, {"tip": path}, {"tip": np.tile(np.eye(3), (121, 1, 1))})
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=120.0, limit_mode="report")  # the barrier's
    plain = retarget(m, samples, mapping, initial_state=start)
    held = retarget(
        m,
        samples,
        dataclasses.replace(mapping, actuator_weight=1e-2, position_margin=0.1),
        initial_state=start,
    )
    assert np.abs(plain.curves.values).max() > 2.0
    assert np.abs(held.curves.values).max() < 1.2
    assert held.residual.max() < 1e-9


def test_actuator_barrier_with_the_clip_solver_equals_frame_by_frame():
    """A range and speed barrier active only mid-clip (the tip pulled in and out again):
    the clip solved without the barrier, then mended one by one where the barrier acts,
    gives the frame-by-frame answer (1e-6 rad) inside the range and the speed limit."""
    import dataclasses

    from looprig.core import Actuator, solve_fk

    m = build("two_link_arm")
    stop = Actuator(lower=-1.2, upper=1.2, velocity_limit=1.5)
    m = type(m)(m.bodies, [dataclasses.replace(j, actuator=stop) for j in m.joints], m.frames)
    start = solve_fk(m, [0.3, 0.6]).state
    t = np.linspace(0.0, 1.0, 121)
    reach = 0.5 - 0.35 * np.sin(np.pi * t) ** 2
    path = np.array([np.cos(0.6), np.sin(0.6), 0.0]) * reach[:, None]
    samples = TrackSamples(t, {"tip": path}, {"tip": np.tile(np.eye(3), (121, 1, 1))})
    mapping = RetargetMapping(
        (TargetSpec("tip", "tip"),),
        rate=120.0,
        actuator_weight=1e-2,
        position_margin=0.1,
        limit_mode="report",
    )
    plain = retarget(m, samples, dataclasses.replace(mapping, actuator_weight=0.0), initial_state=start)
    clip = retarget(m, samples, mapping, initial_state=start)
    sequence = retarget(m, samples, dataclasses.replace(mapping, whole_clip=False), initial_state=start)
    assert np.abs(plain.curves.values).max() > 2.0  # the barrier has work to do
    assert np.abs(clip.curves.values - sequence.curves.values).max() < 1e-6
    assert np.abs(clip.curves.values).max() < 1.2
    assert np.abs(np.diff(clip.curves.values, axis=0)).max() * mapping.rate < 1.5  # frame to frame
    assert clip.residual.max() < 1e-9


def test_walker_keeps_its_com_over_the_stance_foot():
    """The paper's walker (Sec. V-4): feet tracked (orientation 100, position 10), pelvis
    height only (1), CoM (10, 10, 0) over the support. During the right foot's step the
    CoM stays over the left foot; tracking the same clip without the CoM objective
    leaves it centimetres away."""
    from looprig.core.library.clips import walker_step_clip
    from looprig.core.terms import ComObjective, ComTask

    m = build("walker")
    samples, support = walker_step_clip()
    first_step = samples.times <= 1.6  # shift onto the left foot, step with the right
    samples = TrackSamples(
        samples.times[first_step],
        {k: v[first_step] for k, v in samples.positions.items()},
        {k: v[first_step] for k, v in samples.rotations.items()},
    )
    feet = (
        TargetSpec("left_foot", "left_foot", (10, 10, 10), (100, 100, 100)),
        TargetSpec("right_foot", "right_foot", (10, 10, 10), (100, 100, 100)),
        TargetSpec("pelvis", "pelvis_frame", (0, 0, 1), (1, 1, 1)),
    )
    with_com = retarget(
        m,
        samples,
        RetargetMapping(feet, ComSpec((10, 10, 0), support=support[:2]), rate=60.0, limit_mode="report"),
    )
    without = retarget(m, samples, RetargetMapping(feet, rate=60.0, limit_mode="report"))
    stance = (with_com.times > 0.8) & (with_com.times <= 1.6)
    left_sole = samples.positions["left_foot"][stance]
    com_term = ComTask(m, ComObjective())
    horizontal = lambda states: np.linalg.norm((com_term.com(states[stance]) - left_sole)[:, :2], axis=1)  # noqa: E731
    assert horizontal(with_com.states).max() < 3e-3
    assert horizontal(without.states).max() > 1e-2
    assert with_com.position_error[:, :2].max() < 5e-3  # the feet
    assert with_com.residual.max() < 1e-9


def test_a_robot_without_motors_gets_a_curve_for_every_joint_and_the_mapping_can_name_them():
    """A URDF without transmissions declares no motor: every revolute/prismatic joint is
    read off; ``motors`` in the mapping picks the motors exactly."""
    import dataclasses

    from looprig.core.retarget import with_motors

    arm = build("two_link_arm")
    passive = type(arm)(arm.bodies, [dataclasses.replace(j, actuator=None) for j in arm.joints], arm.frames)
    t = np.linspace(0.0, 0.5, 61)
    tip = np.stack([0.5 * np.cos(0.3 * t), 0.5 * np.sin(0.3 * t), 0 * t], -1)
    samples = TrackSamples(t, {"tip": tip}, {"tip": np.tile(np.eye(3), (61, 1, 1))})
    every = retarget(passive, samples, RetargetMapping((TargetSpec("tip", "tip"),), rate=120.0))
    assert list(every.curves.names) == [j.name for j in arm.joints]
    assert every.position_error.max() < 1e-8
    named = RetargetMapping((TargetSpec("tip", "tip"),), rate=120.0, motors=(arm.joints[0].name,))
    one = retarget(arm, samples, named)
    assert list(one.curves.names) == [arm.joints[0].name]
    assert np.allclose(one.curves.values[:, 0], every.curves.values[:, 0], atol=1e-9)
    with pytest.raises(TargetError, match="mapping motors: no joint 'wrist'"):
        with_motors(arm, ("wrist",))
