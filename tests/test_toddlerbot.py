"""MuJoCo Menagerie's ToddlerBot 2XC (tests/data/toddlerbot_2xc, meshes stripped), and the
MJCF conventions it uses: connect closures that keep the file's own gap, gear joint
equalities, servo default classes, narrow fixed tendons (couplings on two joints,
differentials on three: the waist)."""

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_model
from looprig.core import ConstraintSet, solve_fk
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.mobility import analyse_mobility
from looprig.core.model.readoff import JointReadout
from looprig.core.model.servos import RPM

from looprig.cli import main

mujoco = pytest.importorskip("mujoco")
rows = pytest.importorskip("mujoco_rows")  # tests/mujoco_rows.py: MuJoCo's own constraint rows

TODDLERBOT = Path(__file__).parent / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml"

#: joint default class -> the catalogue model it means (a family: its slowest member)
CLASS_SERVO = {
    "XC330": "XC330-T288-T",
    "XC430": "XC430-W240-T",
    "XM430-W210": "XM430-W210-T",
    "2XL430": "2XL430-W250-T",
    "2XC430": "2XC430-W250-T",
}


def load(path, text=None):
    if text is not None:
        path.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FileFormatWarning)
        model = load_model(path, meshes=False)
    return model, [str(w.message) for w in caught]


def test_info_reads_toddlerbot_with_catalogue_limits_from_the_joint_classes(capsys):
    """Exit 0; every one of the 30 motors gets the velocity limit of the servo its joint's
    class names (read from the file with MuJoCo's spec, not copied here)."""
    assert main(["info", str(TODDLERBOT), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    spec = mujoco.MjSpec.from_file(str(TODDLERBOT))
    assert summary["actuators"] == 30 and summary["loops"] == 4
    for actuator in summary["actuator_list"]:
        expected = CLASS_SERVO[spec.joint(actuator["joint"]).classname.name]
        assert actuator["servo"] == expected, actuator["name"]
        assert actuator["limit_sources"]["velocity"] == "catalogue"
    knee = next(a for a in summary["actuator_list"] if a["name"] == "left_knee")
    assert knee["velocity_limit"] == pytest.approx(77 * RPM)


def test_toddlerbots_closure_gap_is_accepted_and_said_and_the_mechanism_closes_exactly():
    """The neck's closure sites are written to eight digits: 3.6e-8 m apart at qpos0, and
    no pose closes them to 1e-10 of the robot's size. The gap is accepted and reported;
    the mechanism's own closures (anchored at the assembled pose) hold to 1e-12 m."""
    model, notes = load(TODDLERBOT)
    (gap,) = [n for n in notes if "keep a gap of" in n]
    assert "the file's own at its zero configuration: 3.61e-08 m" in gap
    assert model.closure_residual == pytest.approx(3.61e-8, rel=0.01)
    mechanism = model.mechanism
    residual, _ = ConstraintSet(mechanism, actuated=False).evaluate(mechanism.initial_state(), None)
    assert np.max(np.abs(residual)) < 1e-12
    assert len(mechanism.couplings) == 11  # the nine gear joint equalities, the waist's two tendons
    gear = next(c for c in mechanism.couplings if c.joint == "neck_yaw_driven")
    assert (gear.sources, gear.ratios) == (("neck_yaw_drive",), (pytest.approx(-0.9090909091),))
    said = [n for n in notes if "is read as an equality, a differential" in n]
    assert [n.split("'")[1] for n in said] == ["waist_roll_coupling", "waist_yaw_coupling"]


def test_info_counts_36_dof_a_floating_base_and_30_motors(capsys):
    """``looprig info``: 11 couplings (9 gears, 2 differentials), Grübler 27, dof 36 = 6
    (the floating base) + 30 motors, 6 with the motors locked. The neck's parallel linkage,
    written to eight digits, is rigid in exact arithmetic: one singular value of 3.2e-9 m
    per radian, far below the file's own closure gap (3.6e-8 m) and far from the next
    (8e-3): at the file's precision (:attr:`Mechanism.closure_gap`) it is the neck's motion."""
    assert main(["info", str(TODDLERBOT), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    figures = ("coupling_rows", "grubler", "dof", "loops", "dof_with_actuators")
    assert [summary[k] for k in figures] == [11, 27, 36, 4, 6]
    assert summary["coupling_kinds"] == {"gear": 9, "differential": 2}
    model, _ = load(TODDLERBOT)
    m = model.mechanism
    assert m.closure_gap == pytest.approx(3.61e-8, rel=0.01)
    s = np.linalg.svd(ConstraintSet(m, actuated=False).jacobian(m.initial_state()), compute_uv=False)
    lost = s[(s > 1e-12) & (s < m.closure_gap)]
    assert len(lost) == 1 and 1e-10 < lost[0] < m.closure_gap / 5 and s[s > m.closure_gap].min() > 1e-3


def mujoco_poses(model):
    """(name, MjModel, MjData) at ``qpos0``, at looprig's assembled joint values, and
    with MuJoCo's own rows met (Gauss-Newton on the passive joints) with the motors
    where the file has them, and with the neck's motor at +-0.4 rad."""
    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    yield "qpos0", mj, mujoco.MjData(mj)
    data = mujoco.MjData(mj)
    for j in range(1, mj.njnt):
        data.qpos[mj.jnt_qposadr[j]] = model.joint_offsets[mj.joint(j).name]
    yield "looprig's assembled pose", mj, data
    for neck in (0.0, -0.4, 0.4):
        data = mujoco.MjData(mj)
        data.qpos[mj.joint("neck_pitch_act").qposadr[0]] = neck
        assert rows.assemble(mj, data, rows.free_dofs(mj) + rows.motor_dofs(mj)) < model.mechanism.closure_gap
        yield f"assembled in MuJoCo, neck motor {neck}", mj, data


def test_looprigs_dof_is_mujocos_equality_rank_across_its_spectral_gap():
    """MuJoCo's rows (every equality's ``efc_J`` rows, checked active and counted: 4
    connects x 3 + 9 joint equalities; and the two narrow waist tendons) at every pose
    measured: no singular value between 10x the file's closure gap (3.6e-7) and 1e-3,
    and nv - rank there is looprig's dof: 36, 38 without the tendons (the two waist
    tendons, read as differentials, remove 2) (bench/toddlerbot_dof.py
    prints the whole measurement)."""
    model, _ = load(TODDLERBOT)
    m = model.mechanism
    gears = Mechanism(m.bodies, m.joints, m.frames, m.name, [c for c in m.couplings if c.kind == "gear"])
    assert (analyse_mobility(m).dof, analyse_mobility(gears).dof) == (36, 38)
    for name, mj, data in mujoco_poses(model):
        J, _ = rows.equality_rows(mj, data)
        J_equalities, _ = rows.equality_rows(mj, data, tendons=False)
        assert J.shape == (12 + 9 + 2, mj.nv) == (23, 50)
        s = np.linalg.svd(J, compute_uv=False)
        assert not np.any((s > 10 * m.closure_gap) & (s < 1e-2)), name
        assert rows.nullity(J, 10 * m.closure_gap, mj.nv) == 36, name
        assert rows.nullity(J_equalities, 10 * m.closure_gap, mj.nv) == 38, name


def test_mujocos_rank_at_numpys_tolerance_counts_the_gap_turning_not_a_constraint():
    """At ``qpos0`` numpy's default tolerance gives nv - rank 35 (33 with the tendons): the
    issue's figures. Its three extra singular values (1e-8 to 6e-8) are motions of the
    joints above both sides of the neck's loops (the floating base's rotations, the neck's
    yaw and its gear): a connect's rows are the gap vector between its sites, which a
    rigid turn rotates (rate: axis x gap) without opening the loop; the free joint's own
    rotations show in MuJoCo's rows, which a floating robot's whole turn cannot open. With
    each connect's second site moved onto its first (3.6e-8 m), they are gone; one value
    is left below the gap, the neck's linkage, rigid in exact arithmetic at 4e-10 m per rad
    (looprig's: 3.2e-9), which the file's precision cannot tell from its motion."""
    model, _ = load(TODDLERBOT)
    gap = model.mechanism.closure_gap
    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    data = mujoco.MjData(mj)
    J, _ = rows.equality_rows(mj, data)
    J_equalities, _ = rows.equality_rows(mj, data, tendons=False)
    assert (mj.nv - np.linalg.matrix_rank(J_equalities), mj.nv - np.linalg.matrix_rank(J)) == (35, 33)
    _, s, Vt = np.linalg.svd(J)
    small = np.flatnonzero((s > 1e-14) & (s < 1e-6))
    assert len(small) == 3 and 1e-8 < s[small].min() and s[small].max() < 2 * gap
    above = rows.free_dofs(mj)[3:] + [mj.joint(n).dofadr[0] for n in ("neck_yaw_drive", "neck_yaw_driven")]
    assert (Vt[small][:, above] ** 2).sum(axis=1).min() > 0.98
    assert 1e-8 < np.linalg.norm(J[:, rows.free_dofs(mj)[3:]], axis=0).min()
    # a rigid turn of the whole robot leaves every closure's gap as long as it was
    before = np.linalg.norm(rows.equality_rows(mj, data)[1][:12].reshape(4, 3), axis=1)
    turn = np.zeros(mj.nv)
    turn[above[:3]] = [0.3, -0.2, 0.5]
    mujoco.mj_integratePos(mj, data.qpos, turn, 1.0)
    after = np.linalg.norm(rows.equality_rows(mj, data)[1][:12].reshape(4, 3), axis=1)
    np.testing.assert_allclose(after, before, atol=1e-15)
    # no gap: the three are gone
    data = mujoco.MjData(mj)
    mujoco.mj_forward(mj, data)
    closed = rows.without_gap(mujoco.MjSpec.from_file(str(TODDLERBOT)), mj, data)
    J, r = rows.equality_rows(closed, mujoco.MjData(closed))
    assert np.abs(r).max() < 1e-15
    s = np.linalg.svd(J, compute_uv=False)
    (neck,) = s[(s > 1e-14) & (s < 1e-3)]
    assert 1e-10 < neck < 1e-9 and rows.nullity(J, 1e-14, mj.nv) == 35 and rows.nullity(J, gap, mj.nv) == 36


def test_the_gap_survives_the_native_file_and_a_negative_gap_is_refused(tmp_path):
    """The closure joints' gap is written to the native file and read back (so its robot
    keeps its precision: dof 36); a negative one is one line naming the joint."""
    from looprig.cad_import import load_native, save_mechanism

    model, _ = load(TODDLERBOT)
    path = save_mechanism(model.mechanism, tmp_path / "toddlerbot.looprig.json")
    again = load_native(path).mechanism
    assert again.closure_gap == model.mechanism.closure_gap > 0
    assert analyse_mobility(again).dof == 36
    data = json.loads(path.read_text())
    closure = next(j for j in data["joints"] if "gap" in j)
    closure["gap"] = -1e-9
    with pytest.raises(FileFormatError, match=r"joints\[\d+\]\.gap: expected a finite number of metres >= 0"):
        load_native(path, json.dumps(data))


def test_the_neck_moves_to_the_files_precision():
    """Forward kinematics with the neck's motor turned: the loops close to far below the
    file's gap (the linkage is rigid only below it), and the head pitches with the motor."""
    model, _ = load(TODDLERBOT)
    m = model.mechanism
    slot = m.actuator_names.index("neck_pitch_act")
    pitch = JointReadout(m, [m.joint("neck_pitch")])
    for angle in (0.05, 0.4, -0.4):
        values = np.zeros(len(m.actuator_names))
        values[slot] = angle
        result = solve_fk(m, values)
        assert result.converged and result.residual < m.closure_gap / 10
        assert pitch.read(result.state)[0] == pytest.approx(angle, rel=0.01)


def test_the_waist_differential_holds_under_forward_kinematics():
    """Driving the two waist motors: the file values of waist_roll and waist_yaw meet both
    tendons' equations (lengths 0: the ranges' middles), as MuJoCo reads them from qpos."""
    model, _ = load(TODDLERBOT)
    m = model.mechanism
    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    data = mujoco.MjData(mj)
    names = ["waist_act_1", "waist_act_2", "waist_roll", "waist_yaw"]
    readout = JointReadout(m, [m.joint(n) for n in names])
    values = np.zeros(len(m.actuated_joints))
    slot = {j.name: k for k, j in enumerate(m.actuated_joints)}
    values[[slot["waist_act_1"], slot["waist_act_2"]]] = 0.6, -0.2
    state = solve_fk(m, values).state
    a1, a2, roll, yaw = np.array([model.joint_offsets[n] for n in names]) + readout.read(state)
    assert abs(roll) > 0.2 and abs(yaw) > 0.05  # the outputs moved
    assert 0.29166667 * (a1 - a2) + roll == pytest.approx(0.0, abs=1e-9)
    assert -0.20833333 * (a1 + a2) + yaw == pytest.approx(0.0, abs=1e-9)
    for name, value in zip(names, (a1, a2, roll, yaw), strict=True):
        data.qpos[mj.jnt_qposadr[mj.joint(name).id]] = value
    mujoco.mj_forward(mj, data)
    np.testing.assert_allclose(data.ten_length, 0.0, atol=1e-9)


def test_a_gap_larger_than_the_files_own_or_the_models_precision_is_refused(tmp_path):
    """The same robot with the front rod's closure site moved 1 mm: no pose closes it and
    the gap is the file's error, not its rounding: one line naming the equality."""
    text = TODDLERBOT.read_text().replace(
        'name="closing_neck_pitch_front_1" pos="0.02700705 0.0 -0.03264198"',
        'name="closing_neck_pitch_front_1" pos="0.02800705 0.0 -0.03264198"',
    )
    with pytest.raises(FileFormatError, match=r"toddlerbot\.xml: equality 'equality\d': the loop closures"):
        load(tmp_path / "toddlerbot.xml", text)


def test_retarget_toddlerbot_exits_0(tmp_path, capsys):
    """A short head nod (0.1 s at 60 Hz, head and torso targeted) through the command line."""
    from looprig.cad_import import load_mechanism
    from looprig.core.tracks.format import Clip, Track, write_tracks
    from scipy.spatial.transform import Rotation

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FileFormatWarning)
        mechanism = load_mechanism(TODDLERBOT, meshes=False)
    head, torso, pitch = mechanism.frame("head"), mechanism.frame("torso"), mechanism.joint("neck_pitch")
    t = np.arange(7) / 60
    nod = Rotation.from_rotvec(np.outer(0.05 * np.sin(2 * np.pi * t / t[-1]), pitch.axis))
    R_head = nod * Rotation.from_quat(head.orientation[[1, 2, 3, 0]])
    tracks = {
        "head": Track(
            pitch.anchor + nod.apply(head.position - pitch.anchor), R_head.as_quat()[:, [3, 0, 1, 2]]
        ),
        "torso": Track(np.repeat(torso.position[None], 7, 0), np.repeat(torso.orientation[None], 7, 0)),
    }
    write_tracks(Clip(fps=60, frame_start=0, tracks=tracks), tmp_path / "nod.tracks.json")
    targets = [{"track": k, "frame": k, "orientation_weight": [1, 1, 1]} for k in tracks]
    (tmp_path / "nod.map.json").write_text(json.dumps({"targets": targets, "rate": 60}))
    argv = [
        "retarget",
        str(TODDLERBOT),
        str(tmp_path / "nod.tracks.json"),
        "--map",
        str(tmp_path / "nod.map.json"),
    ]
    assert main([*argv, "-o", str(tmp_path / "out"), "--quiet"]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["frames"] == 7 and report["max_residual"] < 1e-6


def head_nod(m, frames: int, amplitude: float):
    """The head frame turned about the neck's pitch axis by ``amplitude sin(2 pi t / T)``
    [rad] over ``frames`` at 1200 Hz, the torso still; and the targets' mapping."""
    from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples
    from scipy.spatial.transform import Rotation

    head, torso, pitch = m.frame("head"), m.frame("torso"), m.joint("neck_pitch")
    t = np.arange(frames) / 1200.0
    nod = Rotation.from_rotvec(np.outer(amplitude * np.sin(2 * np.pi * t / t[-1]), pitch.axis))
    R_head = (nod * Rotation.from_quat(head.orientation[[1, 2, 3, 0]])).as_matrix()
    R_torso = Rotation.from_quat(torso.orientation[[1, 2, 3, 0]]).as_matrix()
    clip = TrackSamples(
        t,
        {
            "head": pitch.anchor + nod.apply(head.position - pitch.anchor),
            "torso": np.tile(torso.position, (frames, 1)),
        },
        {"head": R_head, "torso": np.tile(R_torso, (frames, 1, 1))},
    )
    return clip, RetargetMapping(tuple(TargetSpec(k, k, (1, 1, 1), (1, 1, 1)) for k in ("head", "torso")))


def test_a_head_nod_retargets_exactly_at_the_default_rate():
    """A 0.1 s nod (0.01 rad, 0.63 rad/s at its fastest) at 1200 Hz, head and torso
    targeted, every setting the default: the head meets its targets to 1e-8 m and
    1e-7 rad at every frame, the loops close to the file's precision, every frame
    converges, and the 28 motors neither target depends on (waist, legs, arms) hold.
    MuJoCo's forward kinematics from looprig's joint values puts the head there too."""
    from looprig.core.retarget import retarget
    from scipy.spatial.transform import Rotation

    model, _ = load(TODDLERBOT)
    m = model.mechanism
    clip, mapping = head_nod(m, 121, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = retarget(m, clip, mapping)
    assert result.position_error.max() < 1e-8 and result.orientation_error.max() < 1e-7
    assert result.residual.max() < m.closure_gap and result.converged.all()
    assert set(result.holding.motors) == set(m.actuator_names) - {"neck_yaw_drive", "neck_pitch_act"}
    # solved with those welded (2 motors, a few bodies), the curves have every motor, the held still
    assert list(result.curves.names) == m.actuator_names and result.states.shape[1] == len(m.bodies)
    held = [m.actuator_names.index(n) for n in result.holding.motors]
    assert np.abs(result.curves.values[:, held]).max() < 1e-12
    assert np.ptp(result.curves.values[:, m.actuator_names.index("neck_pitch_act")]) > 0.015
    mj = mujoco.MjModel.from_xml_path(str(TODDLERBOT))
    data = mujoco.MjData(mj)
    names = [mj.joint(j).name for j in range(1, mj.njnt)]
    readout = JointReadout(m, [m.joint(n) for n in names])
    free = mj.joint("torso_freejoint").qposadr[0]
    for f in (30, 60, 90):
        state = result.states[f]
        for name, value in zip(names, readout.read(state), strict=True):
            data.qpos[mj.joint(name).qposadr[0]] = model.joint_offsets[name] + value
        body = m.body_index("torso")  # the torso body's origin: its CoM less the file's offset
        R = Rotation.from_quat(state[body, [4, 5, 6, 3]]).as_matrix()
        data.qpos[free : free + 3] = state[body, :3] - R @ mj.body("torso").ipos
        data.qpos[free + 3 : free + 7] = state[body, 3:]
        mujoco.mj_kinematics(mj, data)
        head = data.xmat[mj.body("head").id].reshape(3, 3)
        assert Rotation.from_matrix(head.T @ clip.rotations["head"][f]).magnitude() < 1e-7


def test_the_nod_with_the_held_motors_welded_is_as_exact_through_the_clip_solver():
    """The same nod on the robot with its 28 unused motors welded (:func:`welded`): 6 bodies
    to solve, so the whole-clip solver takes it; it polishes the loops the file leaves open
    as the per-frame solver does: the same accuracy, and the neck's motors' curves agree
    to 1e-9 rad with the unwelded robot's started from a given state (which retarget does
    not weld: its 28 held motors are locked row by row and solved frame by frame)."""
    from looprig.core.model.rigid import RigidGroups, welded
    from looprig.core.retarget import retarget

    model, _ = load(TODDLERBOT)
    m = model.mechanism
    clip, mapping = head_nod(m, 121, 0.01)
    neck = {"neck_yaw_drive", "neck_pitch_act"}
    w = welded(m, [a for a in m.actuator_names if a not in neck])
    assert w.actuator_names == ["neck_yaw_drive", "neck_pitch_act"] and len(RigidGroups(w).solver.bodies) <= 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = retarget(w, clip, mapping)
        locked = retarget(m, clip, mapping, initial_state=m.initial_state())  # a given start: locks
    assert result.position_error.max() < 1e-8 and result.orientation_error.max() < 1e-7
    assert result.residual.max() < m.closure_gap and result.converged.all()
    assert set(locked.holding.motors) == set(m.actuator_names) - neck  # locked row by row, not welded
    assert locked.position_error.max() < 1e-8 and locked.orientation_error.max() < 1e-7
    for name in neck:
        np.testing.assert_allclose(
            result.curves.values[:, result.curves.names.index(name)],
            locked.curves.values[:, locked.curves.names.index(name)],
            atol=1e-9,
        )


def test_welding_a_differentials_source_keeps_the_others_term():
    """Welding waist_act_1 leaves both waist couplings on waist_act_2 alone (its term
    unchanged); welding both fixes waist_roll and waist_yaw; a follower cannot be welded."""
    from looprig.core.errors import MechanismError
    from looprig.core.model.rigid import welded

    model, _ = load(TODDLERBOT)
    m = model.mechanism
    one = welded(m, ["waist_act_1"])
    for c in (c for c in m.couplings if c.kind == "differential"):
        (kept,) = [k for k in one.couplings if k.name == c.name]
        assert kept.sources == ("waist_act_2",) and kept.ratios == (c.ratios[c.sources.index("waist_act_2")],)
    values = np.zeros(len(one.actuator_names))
    values[one.actuator_names.index("waist_act_2")] = 0.3
    both = np.zeros(len(m.actuator_names))
    both[m.actuator_names.index("waist_act_2")] = 0.3
    names = ["waist_roll", "waist_yaw"]
    np.testing.assert_allclose(
        JointReadout(one, [one.joint(n) for n in names]).read(solve_fk(one, values).state),
        JointReadout(m, [m.joint(n) for n in names]).read(solve_fk(m, both).state),
        atol=1e-9,
    )
    two = welded(m, ["waist_act_1", "waist_act_2"])
    assert {j.name for j in two.joints if j.kind == "fixed"} >= {"waist_roll", "waist_yaw"}
    assert not [c for c in two.couplings if c.kind == "differential"]
    with pytest.raises(MechanismError, match="follows coupling"):
        welded(
            Mechanism(
                m.bodies,
                [
                    dataclasses.replace(j, actuator=m.joint("neck_yaw_drive").actuator)
                    if j.name == "neck_yaw_driven"
                    else j
                    for j in m.joints
                ],
                m.frames,
                m.name,
                m.couplings,
            ),
            ["neck_yaw_driven"],
        )


TENDONS = """
<mujoco model="tendons">
  <worldbody>
    <body name="a"><joint name="ja" axis="0 0 1"/><geom size="0.1"/>
      <body name="b" pos="0.3 0 0"><joint name="jb" axis="0 0 1"/><geom size="0.1"/>
        <body name="c" pos="0.3 0 0"><joint name="jc" axis="0 0 1"/><geom size="0.1"/></body></body></body>
  </worldbody>
  <tendon>
    <fixed name="gear" limited="true" range="0.19 0.21">
      <joint joint="ja" coef="2"/><joint joint="jb" coef="1"/></fixed>
    {more}
  </tendon>
  <actuator><motor name="m" joint="jb"/></actuator>
</mujoco>
"""


def test_a_narrow_tendon_on_two_joints_is_a_coupling(tmp_path):
    """``2 qa + qb = 0.2`` (the middle of the range): ``qa = -0.5 qb + 0.1``; the assembly
    meets it (the file's zero pose does not), and the coupling is said."""
    model, notes = load(tmp_path / "t.xml", TENDONS.format(more=""))
    (coupling,) = model.mechanism.couplings
    assert (coupling.joint, coupling.sources, coupling.ratios) == ("ja", ("jb",), (-0.5,))
    offsets = model.joint_offsets
    assert 2 * offsets["ja"] + offsets["jb"] == pytest.approx(0.2, abs=1e-12) and offsets["ja"] > 0.05
    assert any("tendon 'gear': its narrow range [0.19, 0.21] is read as an equality" in n for n in notes)


def test_a_narrow_tendon_on_three_joints_is_a_differential_and_others_are_said(tmp_path):
    """``qa + qb - qc = 0``: ja already follows the gear, jb has the motor, so jc follows:
    ``qc = qa + qb``. A tendon on one joint, one all of whose joints already follow
    couplings and a wide one are each left out with a note naming it."""
    more = (
        '<fixed name="diff" limited="true" range="-0.01 0.01"><joint joint="ja" coef="1"/>'
        '<joint joint="jb" coef="1"/><joint joint="jc" coef="-1"/></fixed>'
        '<fixed name="lock" limited="true" range="-0.01 0.01"><joint joint="jc" coef="1"/></fixed>'
        '<fixed name="again" limited="true" range="-0.01 0.01"><joint joint="ja" coef="1"/>'
        '<joint joint="jc" coef="1"/></fixed>'
        '<fixed name="wide" limited="true" range="-1 1"><joint joint="jc" coef="1"/></fixed>'
    )
    model, notes = load(tmp_path / "t.xml", TENDONS.format(more=more))
    gear, diff = model.mechanism.couplings
    assert gear.joint == "ja"
    assert (diff.joint, diff.sources, diff.ratios) == ("jc", ("ja", "jb"), (1.0, 1.0))
    assert any(
        "tendon 'diff': its narrow range [-0.01, 0.01] is read as an equality, a differential" in n
        for n in notes
    )
    assert any("tendon 'lock' holds joints jc to a range of 0.02; left out" in n for n in notes)
    assert any(
        "tendon 'again': every one of its joints ja, jc follows another coupling; left out" in n
        for n in notes
    )
    assert any("tendon 'wide': a fixed tendon without a narrow range" in n for n in notes)
