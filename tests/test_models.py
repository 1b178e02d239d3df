"""The public closed-chain robot models in ../shared/models (see its README).

Each loads into a valid Mechanism with the counts below; its loop closures hold
in the initial configuration, and forward kinematics from there (actuators at
zero, and moved a little) converges with every joint together.

Counts: bodies = links (URDF) or MuJoCo's nbody incl. the world, plus one
massless body per extra joint in a multi-joint MJCF body; joints = tree joints
(MJCF bodies without joints get a fixed joint) + one closure joint per loop.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
from looprig.cad_import import FileFormatWarning, load_model, save_mechanism
from looprig.cad_import.native_read import load_native
from looprig.core import ConstraintSet, JointKind, analyse_mobility, solve_fk

MODELS = Path(__file__).parents[2] / "shared" / "models"

pytestmark = pytest.mark.skipif(
    not MODELS.is_dir(), reason=f"robot model corpus not found at {MODELS} (shared/models beside the repo)"
)

REACHY_MOTORS = [f"stewart_{k}" for k in range(1, 7)]

# file, load options, bodies, joints, actuators, closures, closure kind (None: mixed),
# mobility with actuators free
CASES = [
    ("reachy_mini/urdf/robot.urdf", {"actuated": REACHY_MOTORS}, 45, 49, 6, 5, JointKind.SPHERICAL, 15),
    ("reachy_mini/mjcf/reachy_mini.xml", {}, 19, 23, 9, 5, JointKind.SPHERICAL, 15),
    ("agility_cassie/cassie.xml", {}, 26, 29, 10, 4, JointKind.SPHERICAL, 22),
    ("robotiq_2f85/2f85.xml", {}, 15, 16, 1, 2, JointKind.SPHERICAL, 3),
    ("gepetto_5bar_linkage/robot.urdf", {}, 8, 8, 2, 1, JointKind.FIXED, 3),
    ("gepetto_digit_like/robot.urdf", {}, 36, 38, 6, 3, JointKind.FIXED, 9),
    ("mujoco_testdata_equality/equality_site.xml", {}, 4, 6, 0, 3, None, 3),
    ("mujoco_testdata_equality/jdotv_weld_3d.xml", {}, 3, 3, 0, 1, JointKind.FIXED, 3),
]


def load(relative, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FileFormatWarning)
        return load_model(MODELS / relative, **options)


@pytest.fixture(scope="module")
def imported():
    cache = {}

    def get(relative, options):
        key = (relative, tuple(sorted((k, tuple(v)) for k, v in options.items())))
        if key not in cache:
            cache[key] = load(relative, **options)
        return cache[key]

    return get


@pytest.mark.parametrize(
    ("relative", "options", "bodies", "joints", "actuators", "closures", "kind", "dof"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_model_counts_and_closures(
    imported, relative, options, bodies, joints, actuators, closures, kind, dof
):
    result = imported(relative, options)
    m = result.mechanism
    assert (len(m.bodies), len(m.joints), len(m.actuated_joints)) == (bodies, joints, actuators)
    # a tree has one joint per non-root body; the closure joints follow the tree joints
    assert len(m.joints) - (len(m.bodies) - 1) == closures
    closure_kinds = [j.kind for j in m.joints[len(m.joints) - closures :]]
    if kind is not None:
        assert closure_kinds == [kind] * closures
    assert np.abs(ConstraintSet(m, actuated=False).residual(m.initial_state())).max() < 1e-10
    report = analyse_mobility(m)
    assert report.dof == dof


@pytest.mark.parametrize(
    ("relative", "options"), [(c[0], c[1]) for c in CASES if c[4]], ids=[c[0] for c in CASES if c[4]]
)
def test_fk_from_the_initial_pose_keeps_the_loops_closed(imported, relative, options):
    m = imported(relative, options).mechanism
    zero = np.zeros(len(m.actuated_joints))
    at_rest = solve_fk(m, zero)
    assert at_rest.converged and at_rest.residual < 1e-10
    np.testing.assert_allclose(at_rest.state[:, :3], m.initial_state()[:, :3], atol=1e-9)
    # a small move of every actuator, within its limits
    step = np.array(
        [
            np.clip(0.02, j.actuator.lower, j.actuator.upper)
            if j.actuator.upper > 0
            else np.clip(-0.02, j.actuator.lower, j.actuator.upper)
            for j in m.actuated_joints
        ]
    )
    moved = solve_fk(m, step)
    assert moved.converged
    assert np.abs(ConstraintSet(m, actuated=False).residual(moved.state)).max() < 1e-9
    assert np.abs(moved.state[:, :3] - m.initial_state()[:, :3]).max() > 1e-4  # it did move


def test_gepetto_zero_pose_is_assembled_by_the_loader(imported):
    """The Gepetto closures are 0.3-0.4 m apart at the zero configuration; the loader closes them
    (6d closures: the two frames coincide in position and orientation)."""
    pairs = {
        "gepetto_5bar_linkage/robot.urdf": [("sphere", "sphere_2")],
        "gepetto_digit_like/robot.urdf": [(f"closedloop{k}_B", f"closedloop{k}_A") for k in (1, 2, 3)],
    }
    for relative, frames in pairs.items():
        result = imported(relative, {})
        assert result.closure_residual > 0.25
        m = result.mechanism
        for a, b in frames:
            np.testing.assert_allclose(m.frame(a).position, m.frame(b).position, atol=1e-10)
            qa, qb = m.frame(a).orientation, m.frame(b).orientation
            assert abs(abs(qa @ qb) - 1.0) < 1e-10
        assert max(abs(v) for v in result.joint_offsets.values()) > 0.01


def test_reachy_urdf_closing_frames_coincide_and_match_the_mjcf(imported):
    urdf = imported("reachy_mini/urdf/robot.urdf", {"actuated": REACHY_MOTORS}).mechanism
    mjcf = imported("reachy_mini/mjcf/reachy_mini.xml", {}).mechanism
    for k in range(1, 6):
        np.testing.assert_allclose(
            urdf.frame(f"closing_{k}_1").position, urdf.frame(f"closing_{k}_2").position, atol=1e-12
        )
        # the same head in both files: closing frames at the same place (URDF vs MJCF sites)
        np.testing.assert_allclose(
            urdf.frame(f"closing_{k}_1").position, mjcf.frame(f"closing_{k}_1").position, atol=1e-5
        )
    assert {f"closing_{k}_{s}" for k in range(1, 6) for s in (1, 2)} <= {f.name for f in mjcf.frames}


def test_robotiq_one_tendon_actuator_drives_both_fingers_symmetrically(imported):
    """The 2F-85: one actuator on the tendon ``split = 0.5 right + 0.5 left`` whose joints the
    equality ``right = left`` couples, so its value is the tendon length (the left driver's
    angle) with the servo range 0..0.8 rad. Each finger is a planar loop of five pins
    (driver, coupler, follower, spring link; MuJoCo's connect is the fifth): two degrees of
    freedom, the spring link's held by a spring in the real gripper. So dof 3 = 2 fingers x 2
    - 1 coupling, and the actuator leaves the two spring DOFs (Grübler's count: 1).
    Driven by FK, the fingers close as mirror images through the gripper's y-z plane."""
    m = imported("robotiq_2f85/2f85.xml", {}).mechanism
    (actuator_joint,) = m.actuated_joints
    assert actuator_joint.name == "left_driver_joint"
    assert actuator_joint.actuator.hardware_id == "fingers_actuator"
    assert (actuator_joint.actuator.lower, actuator_joint.actuator.upper) == pytest.approx(
        (0.0, 0.8), abs=1e-9
    )
    (coupling,) = m.couplings
    assert (coupling.joint, coupling.sources, coupling.ratios, coupling.offset) == (
        "right_driver_joint",
        ("left_driver_joint",),
        (1.0,),
        0.0,
    )
    report = analyse_mobility(m)
    assert (report.coupling_rows, report.dof, report.dof_with_actuators, report.grubler) == (1, 3, 2, 1)
    cs = ConstraintSet(m, actuated=False)
    mirror = np.diag([-1.0, 1.0, 1.0])  # the gripper's fingers mirror through its x = 0 plane
    previous = m.initial_state()
    for p in np.linspace(0.0, 0.8, 5):
        result = solve_fk(m, [p], initial_state=previous)
        assert result.converged and np.abs(cs.residual(result.state)).max() < 1e-10  # loops closed
        previous = result.state
        for part in ("driver", "coupler", "follower", "pad"):
            right = result.state[m.body_index(f"right_{part}"), :3]
            left = result.state[m.body_index(f"left_{part}"), :3]
            np.testing.assert_allclose(right, mirror @ left, atol=1e-7)
    opened = m.initial_state()
    gap = [
        np.linalg.norm(s[m.body_index("right_pad"), :3] - s[m.body_index("left_pad"), :3])
        for s in (opened, previous)
    ]
    assert gap[1] < gap[0] - 0.01  # the pads closed by more than a centimetre


def test_models_round_trip_through_the_native_file(imported, tmp_path):
    for relative, options, *_ in CASES[:2] + CASES[4:5]:
        result = imported(relative, options)
        path = save_mechanism(result, tmp_path / "robot.looprig.json")
        again = load_native(path)
        assert [b.name for b in again.mechanism.bodies] == [b.name for b in result.mechanism.bodies]
        assert again.meshes.keys() == {k for k, v in result.meshes.items() if v}
        for body_a, body_b in zip(result.mechanism.bodies, again.mechanism.bodies, strict=True):
            assert body_a.mesh == body_b.mesh
            np.testing.assert_array_equal(body_a.position, body_b.position)


@pytest.mark.parametrize(("relative", "options"), [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_kinematics_only_load_gives_the_same_mechanism(imported, relative, options):
    """meshes=False (what `looprig info` needs) reads only the meshes masses depend on; the
    bodies, masses, inertias, joints and initial pose are the same."""
    full = imported(relative, options).mechanism
    lean = load(relative, meshes=False, **options).mechanism
    assert [b.name for b in lean.bodies] == [b.name for b in full.bodies]
    np.testing.assert_allclose(lean.initial_state(), full.initial_state(), atol=1e-12)
    np.testing.assert_allclose(lean.masses, full.masses, rtol=1e-12)
    for a, b in zip(lean.bodies, full.bodies, strict=True):
        assert (a.inertia is None) == (b.inertia is None)
        if a.inertia is not None:
            np.testing.assert_allclose(a.inertia, b.inertia, rtol=1e-9, atol=1e-15)
    assert [(j.name, j.kind) for j in lean.joints] == [(j.name, j.kind) for j in full.joints]
    assert lean.actuator_names == full.actuator_names


def test_robotiq_retargeted_from_its_pads_reads_back_the_motor(imported):
    """IK (state-based, coupling row among the constraints) on the two pad frames of FK
    poses along the closing stroke: every frame converges, the one actuator reads back the
    stroke's value (within 1e-6 rad, the solver's curve accuracy) and the coupled drivers stay equal."""
    from looprig.core import FrameObjective, IKProblem, IKTargets, solve_ik
    from looprig.core.maths.rotations import quat_to_matrix
    from looprig.core.model.readoff import JointReadout

    m = imported("robotiq_2f85/2f85.xml", {}).mechanism
    pads = [m.frame("left_pad"), m.frame("right_pad")]
    s0 = m.initial_state()
    local = [
        (
            m.body_index(f.body),
            quat_to_matrix(s0[m.body_index(f.body), 3:]).T @ (f.position - s0[m.body_index(f.body), :3]),
        )
        for f in pads
    ]
    problem = IKProblem(m, frames=[FrameObjective(f.name) for f in pads])
    drivers = JointReadout(m, [m.joint("left_driver_joint"), m.joint("right_driver_joint")])
    state = s0
    for p in np.linspace(0.1, 0.8, 8):
        goal = solve_fk(m, [p], initial_state=state).state
        targets = np.array([quat_to_matrix(goal[b, 3:]) @ x + goal[b, :3] for b, x in local])
        result = solve_ik(problem, IKTargets(targets, np.repeat(np.eye(3)[None], 2, axis=0)), state)
        state = result.state
        assert result.converged and result.position_error.max() < 1e-9
        assert result.actuators[0] == pytest.approx(p, abs=1e-6)
        left, right = drivers.read(state)
        assert left == pytest.approx(right, abs=1e-10)


#: every MJCF and URDF robot file of the corpus (the two MJCF fragments kept beside Reachy Mini's
#: model, joints_properties.xml and additional.xml, are merged into it and are no models)
FRAGMENTS = {"joints_properties.xml", "additional.xml"}
ROBOT_FILES = sorted(
    str(p.relative_to(MODELS))
    for p in [*MODELS.rglob("*.xml"), *MODELS.rglob("*.urdf")]
    if p.name not in FRAGMENTS and "assets" not in p.parts
)


@pytest.mark.parametrize("relative", ROBOT_FILES)
def test_looprig_info_reads_every_robot_file(relative, capsys):
    """``looprig info`` (what a new user runs first, after ``make demo``) exits 0 on each of
    the corpus's 11 files and names its motors with where their limits came from."""
    from looprig.cli import main

    assert len(ROBOT_FILES) == 11
    assert main(["info", str(MODELS / relative)]) == 0
    out = capsys.readouterr().out
    assert "dof" in out and all("velocity limit" in line for line in out.splitlines() if "actuator " in line)
