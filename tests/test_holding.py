"""Motors the clip does not need hold still by default (core/solvers/holding.py), checked on arms
whose answers are known in closed form: a wrist no target depends on, a redundant elbow
the other motors can stand in for, and a shoulder they cannot."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import load_mechanism
from looprig.core import Actuator, Body, Frame, Joint, JointKind, Mechanism
from looprig.core.errors import LooprigWarning
from looprig.core.library import NAMES, build
from looprig.core.library._build import link
from looprig.core.maths.linalg import null_space
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.solvers import holding
from looprig.core.solvers.fk import solve_fk
from looprig.core.solvers.ik import IKProblem
from looprig.core.solvers.motor_roles import (
    NULL_TOLERANCE,
    Linearization,
    Linearizations,
    kinetic_energy,
    unused_by_structure,
    unused_motors,
)
from looprig.core.terms import FrameObjective, FrameTask
from scipy.spatial.transform import Rotation
from test_tree_frame import _counted

Z = np.array([0.0, 0.0, 1.0])
REACHY = (
    Path(__file__).resolve().parents[2] / "shared" / "models" / "reachy_mini" / "mjcf" / "reachy_mini.xml"
)
#: link lengths [m] of the planar arm along +x: upper arm, forearm, hand
UPPER, FORE, HAND = 0.3, 0.25, 0.15


def planar_arm(frame_at_wrist: bool = False) -> Mechanism:
    """Planar 3R arm along +x (shoulder, elbow, wrist about z); frame ``tip`` at the hand's
    end, or at the wrist's axis with ``frame_at_wrist``."""
    p1, p2, p3 = (
        np.array([UPPER, 0, 0]),
        np.array([UPPER + FORE, 0, 0]),
        np.array([UPPER + FORE + HAND, 0, 0]),
    )
    motor = Actuator(lower=-3.0, upper=3.0, velocity_limit=20.0)
    return Mechanism(
        [
            Body("base", grounded=True),
            link("upper", np.zeros(3), p1),
            link("fore", p1, p2),
            link("hand", p2, p3),
        ],
        [
            Joint(
                "shoulder", JointKind.REVOLUTE, "base", "upper", anchor=np.zeros(3), axis=Z, actuator=motor
            ),
            Joint("elbow", JointKind.REVOLUTE, "upper", "fore", anchor=p1, axis=Z, actuator=motor),
            Joint("wrist", JointKind.REVOLUTE, "fore", "hand", anchor=p2, axis=Z, actuator=motor),
        ],
        [Frame("tip", "fore" if frame_at_wrist else "hand", position=p2 if frame_at_wrist else p3)],
    )


def circle_clip(radius: float, sweep: float, rate: float = 200.0) -> TrackSamples:
    """The tip on a circle of ``radius`` [m] about the shoulder, from angle 0 to ``sweep`` [rad] in 1 s."""
    t = np.arange(int(rate) + 1) / rate
    phi = sweep * (3 * t**2 - 2 * t**3)
    tip = np.stack([radius * np.cos(phi), radius * np.sin(phi), 0 * t], -1)
    return TrackSamples(t, {"tip": tip}, {"tip": np.tile(np.eye(3), (len(t), 1, 1))})


def two_link_angles(x, y, a, b):
    """Closed-form 2R inverse kinematics (elbow angle >= 0): base angle and elbow angle [rad]."""
    elbow = np.arccos((x * x + y * y - a * a - b * b) / (2 * a * b))
    return np.arctan2(y, x) - np.arctan2(b * np.sin(elbow), a + b * np.cos(elbow)), elbow


def test_a_motor_no_target_depends_on_holds_exactly_and_the_others_match_the_closed_form():
    """Tracked at the wrist's axis, the wrist moves nothing targeted: it is held at its start
    (given in the mapping, 0.7 rad) to 1e-12 rad, and shoulder and elbow are the 2R
    closed form."""
    clip = circle_clip(0.45, 1.2)
    start = {"shoulder": 0.3, "elbow": 0.8, "wrist": 0.7}
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=200.0, start=start)
    arm = planar_arm(frame_at_wrist=True)
    with pytest.warns(LooprigWarning, match=r"held at their start values: wrist .*--no-auto-hold"):
        result = retarget(arm, clip, mapping)
    assert result.holding.unused == ("wrist",) and result.holding.redundant == ()
    assert result.summary()["held_motors"]["unused"] == ["wrist"]
    values = dict(zip(result.curves.names, result.curves.values.T, strict=True))
    assert np.abs(values["wrist"] - 0.7).max() < 1e-12
    tip = clip.resampled(200.0).positions["tip"]
    shoulder, elbow = two_link_angles(tip[:, 0], tip[:, 1], UPPER, FORE)
    assert np.abs(values["shoulder"] - shoulder).max() < 1e-7
    assert np.abs(values["elbow"] - elbow).max() < 1e-7


def test_a_redundant_motor_is_held_when_the_others_reach_every_target_and_not_otherwise():
    """Tracked at the hand's end (position only), the planar 3R arm has one motor to spare.
    The shoulder, heaviest to move, cannot be held: elbow and wrist alone cannot carry the
    tip 1.2 rad around the shoulder, so it stays free. The elbow can: shoulder and wrist
    meet every target with it held, so it keeps its start value exactly and the other two
    are the 2R closed form of the shoulder-to-wrist-tip chain. With auto_hold off, all move."""
    clip = circle_clip(0.6, 1.2)
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=200.0, start={"elbow": 0.5})
    with pytest.warns(LooprigWarning, match="elbow"):
        result = retarget(planar_arm(), clip, mapping)
    assert result.holding.redundant == ("elbow",)
    assert "missed" in result.holding.kept_free["shoulder"]
    values = dict(zip(result.curves.names, result.curves.values.T, strict=True))
    assert np.abs(values["elbow"] - 0.5).max() < 1e-12
    # with the elbow held at 0.5 rad, shoulder -> wrist is one rigid link of length a
    elbow_point = np.array([UPPER + FORE * np.cos(0.5), FORE * np.sin(0.5)])
    a, offset = np.linalg.norm(elbow_point), np.arctan2(elbow_point[1], elbow_point[0])
    tip = clip.resampled(200.0).positions["tip"]
    base, wrist = two_link_angles(tip[:, 0], tip[:, 1], a, HAND)
    assert np.abs(values["shoulder"] - (base - offset)).max() < 1e-7
    assert np.abs(values["wrist"] - (wrist + offset - 0.5)).max() < 1e-7
    assert result.position_error.max() < 1e-8 and result.unreachable.sum() == 0

    free = retarget(
        planar_arm(),
        clip,
        RetargetMapping((TargetSpec("tip", "tip"),), rate=200.0, start={"elbow": 0.5}, auto_hold=False),
    )
    assert free.holding is None
    assert np.ptp(free.curves.values, axis=0).min() > 1e-3  # every motor moves
    assert free.position_error.max() < 1e-8


def test_a_motor_whose_holding_would_push_another_out_of_its_range_stays_free():
    """The same arm and clip with the wrist's range cut to +-0.5 rad: holding the elbow would
    need the wrist at 0.96 rad, so the elbow stays free; the greedy search goes on to the
    wrist, which the shoulder and elbow can stand in for within their ranges."""
    arm = planar_arm()
    joints = list(arm.joints)
    joints[2] = dataclasses.replace(joints[2], actuator=Actuator(lower=-0.5, upper=0.5, velocity_limit=20.0))
    arm = Mechanism(arm.bodies, joints, arm.frames)
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=200.0, start={"elbow": 0.5})
    with pytest.warns(LooprigWarning, match="wrist"):
        result = retarget(arm, circle_clip(0.6, 1.2), mapping)
    assert "range" in result.holding.kept_free["elbow"] and result.holding.redundant == ("wrist",)
    assert np.abs(result.curves.values[:, 2]).max() < 1e-12
    assert result.summary()["actuators"][2]["violations"] == []
    assert result.position_error.max() < 1e-8


def test_over_actuated_motors_are_never_held():
    """The dancer's 8 servos over-determine its 6-DoF pelvis: with the others held a servo
    cannot move, so none counts as unused or redundant, and the pelvis is met."""
    dancer = build("dancer")
    t = np.arange(41) / 200.0
    pelvis = dancer.frame("pelvis_frame").position + np.stack(
        [0.01 * np.sin(np.pi * t), 0 * t, -0.01 * t], -1
    )
    clip = TrackSamples(t, {"pelvis": pelvis}, {"pelvis": np.tile(np.eye(3), (len(t), 1, 1))})
    mapping = RetargetMapping((TargetSpec("pelvis", "pelvis_frame", (1, 1, 1), (1, 1, 1)),), rate=200.0)
    result = retarget(dancer, clip, mapping)
    assert result.holding.motors == ()
    assert result.position_error.max() < 1e-7 and result.unreachable.sum() == 0


def test_a_clip_out_of_reach_holds_no_redundant_motor():
    """A tip circle of radius 0.75 m is beyond the 0.7 m arm: with every motor free the
    clip already misses, so no redundant motor is held (each is reported kept free)."""
    mapping = RetargetMapping((TargetSpec("tip", "tip"),), rate=200.0, start={"elbow": 0.5})
    result = retarget(planar_arm(), circle_clip(0.75, 1.2), mapping)
    assert result.holding.motors == ()
    assert set(result.holding.kept_free) == {"shoulder", "elbow", "wrist"}
    assert all("every motor free" in why for why in result.holding.kept_free.values())
    assert result.unreachable.all()


def seven_joint_arm() -> Mechanism:
    """A 7R arm standing along +z: yaw, pitch, roll, pitch (elbow), roll, pitch, roll, joints
    at heights 0.1 .. 1.05 m, links lighter outwards; frame ``hand`` at 1.1 m on the last axis."""
    heights = [0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.05, 1.1]
    bodies, joints = [Body("base", grounded=True)], []
    for k in range(7):
        a, b = np.array([0, 0, heights[k]]), np.array([0, 0, heights[k + 1]])
        bodies.append(link(f"link{k + 1}", a, b, mass=1.0 - 0.12 * k))
        axis = Z if k % 2 == 0 else np.array([0.0, 1.0, 0.0])
        motor = Actuator(lower=-2.9, upper=2.9, velocity_limit=10.0)
        parent = "base" if k == 0 else f"link{k}"
        joints.append(Joint(f"j{k + 1}", JointKind.REVOLUTE, parent, f"link{k + 1}", a, axis, actuator=motor))
    return Mechanism(bodies, joints, [Frame("hand", "link7", position=np.array([0, 0, 1.1]))])


def test_on_a_7_joint_arm_the_base_is_held_when_the_other_six_follow_the_hand():
    """Hand position and orientation animated (a 5 cm loop turning by up to 0.4 rad): the
    base yaw, which moves the most mass, is held exactly and the other six meet the hand;
    the shoulder pitch, next in mass, cannot be held as well (the hand would be missed)."""
    arm = seven_joint_arm()
    start = {"j1": 0.2, "j2": 0.5, "j3": 0.1, "j4": 1.0, "j5": -0.1, "j6": 0.6}
    values = [start.get(name, 0.0) for name in arm.actuator_names]
    points, axes = FrameTask(arm, [FrameObjective("hand")]).poses(solve_fk(arm, values).state)
    position, rotation = points[0], axes[0]  # where the start puts the hand
    t = np.arange(401) / 200.0
    w = np.pi * t
    loop = 0.05 * np.stack([np.sin(w), 1 - np.cos(w), 0.5 * np.sin(2 * w)], -1)
    turn = Rotation.from_rotvec(np.outer(np.sin(w), [0.2, 0.1, 0.3])).as_matrix()
    clip = TrackSamples(t, {"hand": position + loop}, {"hand": turn @ rotation})
    mapping = RetargetMapping((TargetSpec("hand", "hand", (1, 1, 1), (1, 1, 1)),), rate=200.0, start=start)
    with pytest.warns(LooprigWarning, match="j1"):
        result = retarget(arm, clip, mapping)
    assert result.holding.redundant == ("j1",) and "missed" in result.holding.kept_free["j2"]
    assert np.abs(result.curves.values[:, 0] - 0.2).max() < 1e-12
    assert result.position_error.max() < 1e-7 and result.orientation_error.max() < 1e-7


def test_a_clip_near_its_start_is_decided_from_it_as_along_the_path(monkeypatch):
    """The 7-joint arm's hand on a 2 cm loop turning by up to 0.2 rad (every frame within
    MAX_SEQUENTIAL_MOTION of the first): the free pass solves the coarse frames all at once
    from the start, no sequence, and decides as the pass along the path does (forced by a
    zero bound): the base yaw held, the same motors kept free for the same reasons."""
    arm = seven_joint_arm()
    start = {"j1": 0.2, "j2": 0.5, "j3": 0.1, "j4": 1.0, "j5": -0.1, "j6": 0.6}
    values = [start.get(name, 0.0) for name in arm.actuator_names]
    points, axes = FrameTask(arm, [FrameObjective("hand")]).poses(solve_fk(arm, values).state)
    t = np.arange(401) / 200.0
    w = np.pi * t
    loop = 0.02 * np.stack([np.sin(w), 1 - np.cos(w), 0.5 * np.sin(2 * w)], -1)
    turn = Rotation.from_rotvec(np.outer(np.sin(w), [0.1, 0.05, 0.15])).as_matrix()
    clip = TrackSamples(t, {"hand": points[0] + loop}, {"hand": turn @ axes[0]})
    mapping = RetargetMapping((TargetSpec("hand", "hand", (1, 1, 1), (1, 1, 1)),), rate=200.0, start=start)
    sequences = []
    monkeypatch.setattr(holding, "coarse_then_clip", _counted(holding.coarse_then_clip, sequences))
    decisions = []
    for bound in (holding.MAX_SEQUENTIAL_MOTION, -1.0):
        monkeypatch.setattr(holding, "MAX_SEQUENTIAL_MOTION", bound)
        with pytest.warns(LooprigWarning, match="j1"):
            decisions.append(retarget(arm, clip, mapping).holding)
        assert len(sequences) == (bound < 0)
    near, along = decisions
    assert near.redundant == along.redundant == ("j1",)
    assert near.kept_free.keys() == along.kept_free.keys()
    assert [why.split(" by ")[0] for why in near.kept_free.values()] == [
        why.split(" by ")[0] for why in along.kept_free.values()
    ]


def test_the_command_line_says_which_motors_it_held_and_how_to_free_them(capsys, tmp_path):
    """``looprig retarget`` prints one warning line naming the held wrist and the flag that
    frees it, and report.json lists it; with ``--no-auto-hold`` neither appears."""
    from looprig.cad_import import save_mechanism
    from looprig.core.maths.rotations import quat_from_matrix
    from looprig.core.tracks.format import Clip, Track, write_tracks

    from looprig.cli import main

    arm = save_mechanism(planar_arm(frame_at_wrist=True), tmp_path / "arm.looprig.json")
    samples = circle_clip(0.45, 1.2, rate=100.0)
    clip = Clip(
        100.0, 0, {"tip": Track(samples.positions["tip"], quat_from_matrix(samples.rotations["tip"]))}
    )
    tracks = write_tracks(clip, tmp_path / "tip.tracks.json")
    mapping = tmp_path / "tip.map.json"
    RetargetMapping((TargetSpec("tip", "tip"),), rate=100.0, start={"elbow": 0.8}).save(mapping)
    for extra, held in (((), True), (("--no-auto-hold",), False)):
        out = tmp_path / f"out{held}"
        code = main(
            ["retarget", str(arm), str(tracks), "--map", str(mapping), "-o", str(out), "--quiet", *extra]
        )
        err = capsys.readouterr().err
        assert code == 0
        lines = [line for line in err.splitlines() if "held at their start values" in line]
        report = json.loads((out / "report.json").read_text())
        if held:
            assert len(lines) == 1 and lines[0].startswith("looprig: warning: ")
            assert "wrist" in lines[0] and "--no-auto-hold" in lines[0]
            assert report["held_motors"]["unused"] == ["wrist"]
        else:
            assert lines == [] and report["held_motors"] is None


def test_a_held_motor_is_released_when_a_frame_between_the_coarse_ones_needs_it():
    """The circle of radius 0.6 m bulges to 0.69 m for a few frames between two of the
    coarse pass's (frames 17 and 25 of 201): with the elbow held at 0.5 rad the arm reaches
    only 0.6885 m, so the clip is solved again with the elbow free and every frame is met."""
    clip = circle_clip(0.6, 1.2)
    frame = np.arange(len(clip.times))
    radius = 0.6 + 0.09 * np.exp(-(((frame - 21) / 1.2) ** 2))
    tip = clip.positions["tip"] * (radius / 0.6)[:, None]
    clip = TrackSamples(clip.times, {"tip": tip}, clip.rotations)
    mapping = RetargetMapping(
        (TargetSpec("tip", "tip"),), rate=200.0, start={"elbow": 0.5}, limit_mode="report"
    )
    with pytest.warns(LooprigWarning, match=r"elbow released: \d+ frame\(s\) unreachable with it held"):
        result = retarget(planar_arm(), clip, mapping)
    assert result.holding.redundant == () and result.holding.kept_free["elbow"].startswith("released")
    assert result.unreachable.sum() == 0 and result.position_error.max() < 1e-8
    assert np.ptp(result.curves.values[:, 1]) > 0.1  # the elbow moved


def _decision_cases():
    """(problem, the motors the joint graph shows unused) at the assembled pose: the planar
    arm tracked at the wrist's axis and at the hand, Reachy Mini's head (MJCF), and every
    reference mechanism with its first frame targeted in full."""
    arm = planar_arm(frame_at_wrist=True)
    yield pytest.param(IKProblem(arm, [FrameObjective("tip", 1, 0)]), ["wrist"], id="arm-wrist")
    yield pytest.param(IKProblem(planar_arm(), [FrameObjective("tip", 1, 0)]), [], id="arm-hand")
    if REACHY.exists():
        head = IKProblem(load_mechanism(REACHY), [FrameObjective("xl_330", 1, 1)])
        yield pytest.param(head, ["right_antenna", "left_antenna"], id="reachy")
    for name in NAMES:
        m = build(name)
        if m.frames:
            yield pytest.param(IKProblem(m, [FrameObjective(m.frames[0].name, 1, 1)]), None, id=name)


@pytest.mark.parametrize(("problem", "by_graph"), list(_decision_cases()))
def test_the_start_alone_settles_what_every_pose_would(problem, by_graph):
    """Linearizations asks the check poses only when the start cannot settle a question, and
    answers as every pose does: the same unused motors (those read off the joint graph
    among them), and for every motor whether locking it keeps the objectives' rank. On
    Reachy Mini no check pose is made (antennas by the graph, the yaw's rank at the start)."""
    state = problem.mechanism.initial_state()
    lazy, every = Linearizations(problem, state), Linearizations(problem, state)
    poses = every.poses  # made at once: every question asks all of them
    unused = unused_motors(problem, poses)
    structural = unused_by_structure(problem)
    assert not (structural & ~unused).any()
    if by_graph is not None:
        assert [problem.readout.names[i] for i in np.flatnonzero(structural)] == by_graph
    assert np.array_equal(lazy.unused(), unused)
    for motor in range(len(problem.readout.names)):
        full = max(lin.objective_rank([motor]) for lin in poses) == max(
            lin.objective_rank([]) for lin in poses
        )
        assert lazy.keeps_rank([], motor) == full
    if by_graph and "right_antenna" in by_graph:
        assert lazy._poses is None


@pytest.mark.parametrize("problem", [pytest.param(c.values[0], id=c.id) for c in _decision_cases()])
def test_the_motions_that_keep_the_constraints_are_the_null_space_of_all_their_rows(problem):
    """Linearization finds the motions that keep the constraints among the spanning tree's
    joint motions (an SVD of D columns): the same space as the null space of every
    constraint row over the N body tangents, at the start and at each check pose."""
    state = problem.mechanism.initial_state()
    for lin in Linearizations(problem, state).poses:
        full = null_space(lin.E, NULL_TOLERANCE, problem.mechanism.closure_gap)
        assert lin.assembled.shape == full.shape
        np.testing.assert_allclose(lin.assembled @ lin.assembled.T, full @ full.T, atol=1e-9)


def test_kinetic_energy_is_mass_times_speed_squared_plus_the_turn_through_the_inertia():
    """A unit motion of the planar arm's hand alone (the tangent of one body): m |v|^2 for a
    move [per L], w^T R I R^T w for a turn, summed; zero for no motion."""
    arm = planar_arm()
    problem = IKProblem(arm, [FrameObjective("tip", 1, 0)])
    lin = Linearization(problem, arm.initial_state())
    cs = problem.constraints
    hand = arm.body_index("hand")
    col = cs.column_of_body[hand]
    body = arm.bodies[hand]
    motion = np.zeros(cs.n_vars)
    motion[col : col + 3] = [0.3, -0.4, 0.0]
    motion[col + 3 : col + 6] = [0.0, 0.2, 0.5]
    R = lin.R[hand]
    inertia = np.zeros((3, 3)) if body.inertia is None else np.asarray(body.inertia)
    w = motion[col + 3 : col + 6]
    expected = body.mass * lin.L**2 * 0.25 + w @ R @ inertia @ R.T @ w
    assert kinetic_energy(problem, lin, motion) == pytest.approx(expected, rel=1e-12)
    assert kinetic_energy(problem, lin, np.zeros(cs.n_vars)) == 0.0
