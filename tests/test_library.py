"""Reference mechanism library: structure, mobility, FK and IK on every mechanism.

Expected counts come from each mechanism's design (its docstring), not from a
solver run. Reachable targets are taken from assembled states reached by
walking along the mechanism's own motion (the null space of the passive
constraint Jacobian), so they are reachable by construction.
"""

from dataclasses import dataclass

import numpy as np
import pytest
from looprig.core import (
    ActuatedMotion,
    ActuatorReadout,
    ComObjective,
    ConstraintSet,
    FrameObjective,
    IKProblem,
    IKTargets,
    JointKind,
    Mechanism,
    MechanismError,
    Regularization,
    analyse_mobility,
    single_threaded_blas,
    solve_fk,
    solve_ik,
)
from looprig.core.library import NAMES, REFERENCE_MECHANISMS, build
from looprig.core.library.arms import BOXER_SINGULAR_ROLL
from looprig.core.maths.rotations import quat_from_matrix, quat_to_matrix, retract, rotvec_from_quat
from looprig.core.solvers.fk import solve_constraints


@dataclass(frozen=True)
class Expected:
    bodies: int
    joints: int
    actuators: int
    loops: int
    dof: int  # every actuator free
    dof_held: int  # every actuator held: 6 for a floating base, else 0
    frames: tuple[str, ...]  # frames tracked by the IK test


EXPECTED = {
    "fourbar": Expected(4, 4, 1, 1, 1, 0, ("coupler_point",)),
    "slider_crank": Expected(4, 4, 1, 1, 1, 0, ("slider_tip",)),
    "two_link_arm": Expected(3, 2, 2, 0, 2, 0, ("tip",)),
    "boxer": Expected(5, 4, 4, 0, 4, 0, ("hand",)),
    "dancer": Expected(12, 12, 8, 1, 6, 0, ("pelvis_frame",)),
    "walker": Expected(30, 37, 12, 8, 6 + 12, 6, ("left_foot", "right_foot", "pelvis_frame")),
    "stewart": Expected(14, 18, 6, 5, 6, 0, ("platform",)),
    "delta": Expected(11, 15, 3, 5, 3, 0, ("platform",)),
    "all_joints": Expected(9, 12, 1, 4, 1, 0, ("effector",)),
    "chain_6r6p": Expected(13, 12, 12, 0, 12, 0, ("effector",)),
}

FIXED_BASE = [name for name in EXPECTED if EXPECTED[name].dof_held == 0]


# ----------------------------------------------------------------------------- helpers
def frame_poses(m: Mechanism, frames, state):
    """Positions (K, 3) [m] and axes (K, 3, 3) of named frames in ``state``."""
    R = quat_to_matrix(state[:, 3:])
    points, axes = [], []
    R0 = quat_to_matrix(m.initial_state()[:, 3:])
    for name in frames:
        f = m.frame(name)
        b = m.body_index(f.body)
        local = R0[b].T @ (f.position - m.bodies[b].position)
        points.append(R[b] @ local + state[b, :3])
        axes.append(R[b] @ R0[b].T @ quat_to_matrix(f.orientation))
    return np.array(points), np.array(axes)


def walk_along_motion(m: Mechanism, frames, distance: float, seed: int, step: float = 0.004):
    """An assembled state whose frames moved ``distance`` [m] (the farthest one) from the
    initial pose, reached in steps of ``step`` [m] along the mechanism's motion: a random
    first direction, then each step continues the last one, re-assembled after every step."""
    cs = ConstraintSet(m, actuated=False)
    state = m.initial_state()
    start, _ = frame_poses(m, frames, state)
    direction = np.random.default_rng(seed).normal(size=cs.n_vars)
    for _ in range(200):
        _, sv, Vt = np.linalg.svd(cs.jacobian(state))
        null = Vt[int(np.sum(sv > 1e-9 * sv[0])) :]
        tangent = null.T @ (null @ direction)
        direction = tangent
        probe, _ = frame_poses(m, frames, retract(state, cs.tangent_to_bodies(1e-6 * tangent)))
        rate = np.abs(probe - frame_poses(m, frames, state)[0]).max() / 1e-6
        trial = retract(state, cs.tangent_to_bodies(step / rate * tangent))
        assembled = solve_constraints(cs, trial)
        assert assembled.converged, assembled.message
        state = assembled.state
        if np.linalg.norm(frame_poses(m, frames, state)[0] - start, axis=-1).max() >= distance:
            return state
    raise AssertionError(f"{m.name}: frames did not move {distance} m")


def relative_poses(states, reference):
    """Positions (n, 3) and rotations (n, 3, 3) of body ``states`` (n, 7) in the frame
    of the body whose state is ``reference`` (7,)."""
    R, Rr = quat_to_matrix(states[:, 3:]), quat_to_matrix(reference[3:])
    return (states[:, :3] - reference[:3]) @ Rr, np.einsum("ba,nbc->nac", Rr, R)


def reference_body(m: Mechanism) -> int:
    """The pelvis of a floating-base robot, else a grounded body."""
    return m.body_index("pelvis") if m.name == "walker" else int(np.flatnonzero(m.grounded_mask)[0])


def rotation_angle(R) -> np.ndarray:
    return np.linalg.norm(rotvec_from_quat(quat_from_matrix(R)), axis=-1)


# ----------------------------------------------------------------------------- registry
def test_registry_holds_every_reference_mechanism():
    assert set(NAMES) == set(EXPECTED) == set(REFERENCE_MECHANISMS)
    with pytest.raises(MechanismError, match=r"no reference mechanism 'walkr'.*walker"):
        build("walkr")


@pytest.mark.parametrize("name", NAMES)
def test_structure_mobility_and_assembled_initial_state(name):
    m, expected = build(name), EXPECTED[name]
    report = analyse_mobility(m)
    assert m.name == name
    assert (report.bodies, report.joints, report.actuators) == (
        expected.bodies,
        expected.joints,
        expected.actuators,
    )
    assert report.loops == expected.loops
    assert report.dof == expected.dof
    assert report.dof_with_actuators == expected.dof_held
    passive, actuated = ConstraintSet(m, actuated=False), ConstraintSet(m, actuated=True)
    assert np.abs(passive.residual(m.initial_state())).max() < 1e-10
    assert np.abs(actuated.residual(m.initial_state(), np.zeros(expected.actuators))).max() < 1e-10
    for frame in expected.frames:
        m.frame(frame)  # raises for a missing frame


@pytest.mark.parametrize("name", NAMES)
def test_actuators_have_consecutive_hardware_ids(name):
    actuators = [j.actuator for j in build(name).actuated_joints]
    assert sorted(a.hardware_id for a in actuators) == list(range(1, len(actuators) + 1))


@pytest.mark.parametrize("name", ["boxer", "dancer", "walker", "all_joints", "chain_6r6p"])
def test_actuators_have_finite_limits_around_the_initial_pose(name):
    for joint in build(name).actuated_joints:
        a = joint.actuator
        assert -np.pi <= a.lower < 0.0 < a.upper <= np.pi, joint.name
        assert 0.0 < a.velocity_limit < np.inf and 0.0 < a.acceleration_limit < np.inf


# ----------------------------------------------------------------------------- FK
@pytest.mark.parametrize("name", NAMES)
def test_fk_reassembles_a_moved_state_from_its_actuator_readout(name):
    """Actuator values read off a moved assembled state (consistent even for the
    over-actuated Dancer) drive FK from the initial pose back to that state; a
    floating base is compared relative to the pelvis."""
    m = build(name)
    frames = EXPECTED[name].frames
    with single_threaded_blas():
        moved = walk_along_motion(m, frames, 0.02, seed=1)
        p = ActuatorReadout(m).read(moved)
        result = solve_fk(m, p)
    assert result.converged
    ref, moving = reference_body(m), ~m.grounded_mask
    got_c, got_R = relative_poses(result.state[moving], result.state[ref])
    want_c, want_R = relative_poses(moved[moving], moved[ref])
    assert np.abs(got_c - want_c).max() < 1e-8
    assert np.abs(got_R - want_R).max() < 1e-8


@pytest.mark.parametrize("name", [n for n in NAMES if n != "dancer"])
def test_fk_follows_small_independent_actuator_offsets(name):
    m = build(name)
    readout = ActuatorReadout(m)
    rng = np.random.default_rng(2)
    scale = np.where(readout.is_angle, 0.05, 0.005)  # [rad] or [m]
    p = scale * rng.uniform(-1.0, 1.0, size=len(scale))
    with single_threaded_blas():
        result = solve_fk(m, p)
    assert result.converged
    assert np.abs(readout.read(result.state) - p).max() < 1e-9


def test_dancer_fk_refuses_actuator_values_that_disagree():
    """8 servos for 6 DoF: moving one servo alone asks for an impossible pose."""
    m = build("dancer")
    p = np.zeros(8)
    p[m.actuator_names.index("left_knee")] = 0.05
    with single_threaded_blas():
        result = solve_fk(m, p, raise_on_failure=False)
    assert not result.converged
    assert result.residual > 1e-4


# ----------------------------------------------------------------------------- IK
def check_ik(m: Mechanism, problem: IKProblem, targets: IKTargets):
    with single_threaded_blas():
        result = solve_ik(problem, targets, m.initial_state())
    assert result.residual < 1e-9 * problem.constraints.length_scale
    positions, axes = frame_poses(m, [f.frame for f in problem.frames], result.state)
    assert np.linalg.norm(positions - targets.positions, axis=-1).max() < 1e-6
    assert rotation_angle(np.swapaxes(axes, -1, -2) @ targets.rotations).max() < 1e-6
    return result


@pytest.mark.parametrize("name", NAMES)
def test_ik_meets_a_reachable_target_a_few_centimetres_away(name):
    """Tracked frames (position and orientation) moved 3 cm along the mechanism's
    motion; warm start from the initial pose, small state regularizer. The solved
    actuator values, fed to FK, put the frames on the targets too."""
    m = build(name)
    frames = EXPECTED[name].frames
    problem = IKProblem(
        m,
        [FrameObjective(f, (1, 1, 1), (1, 1, 1)) for f in frames],
        regularization=Regularization(1e-8),
    )
    with single_threaded_blas():
        moved = walk_along_motion(m, frames, 0.03, seed=3)
    targets = IKTargets(*frame_poses(m, frames, moved))
    result = check_ik(m, problem, targets)
    with single_threaded_blas():
        replay = solve_fk(m, result.actuators, initial_state=result.state)
    positions, _ = frame_poses(m, frames, replay.state)
    assert np.linalg.norm(positions - targets.positions, axis=-1).max() < 1e-6


@pytest.mark.parametrize(
    ("frame", "offset"),
    [
        ("pelvis_frame", (0.01, 0.0, -0.03)),
        ("pelvis_frame", (0.0, 0.02, 0.0)),
        ("left_foot", (0.02, 0.0, 0.03)),
    ],
)
def test_walker_ik_moves_one_frame_while_holding_the_others(frame, offset):
    m = build("walker")
    frames = EXPECTED["walker"].frames
    problem = IKProblem(
        m,
        [FrameObjective(f, (1, 1, 1), (1, 1, 1)) for f in frames],
        regularization=Regularization(1e-8),
    )
    positions, axes = frame_poses(m, frames, m.initial_state())
    positions[frames.index(frame)] += offset
    check_ik(m, problem, IKTargets(positions, axes))


def test_walker_ik_shifts_the_centre_of_mass_over_the_left_foot():
    """Feet held, CoM moved 3 cm left (horizontal axes only, as the paper's Walker)."""
    m = build("walker")
    feet = ("left_foot", "right_foot")
    problem = IKProblem(
        m,
        [FrameObjective(f, (1, 1, 1), (1, 1, 1)) for f in feet],
        ComObjective((1, 1, 0)),
        Regularization(1e-8),
    )
    com0 = m.masses @ m.initial_state()[:, :3] / m.masses.sum()
    target = com0 + np.array([0.0, 0.03, 0.0])
    result = check_ik(m, problem, IKTargets(*frame_poses(m, feet, m.initial_state()), target))
    assert result.com_error < 1e-6


# ----------------------------------------------------------------------------- per mechanism
def fk_in_steps(m: Mechanism, p: np.ndarray, steps: int = 4) -> np.ndarray:
    """FK for actuator values ``p`` reached in ``steps`` warm-started increments
    from the initial pose (one dot-product row per angle actuator cannot start
    a quarter turn away from its target)."""
    state = m.initial_state()
    for t in np.linspace(0.0, 1.0, steps + 1)[1:]:
        state = solve_fk(m, t * p, initial_state=state).state
    return state


def hand_jacobian(m: Mechanism, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """(6, 4) central differences of the hand's position and rotation vector in p."""
    columns = []
    base = fk_in_steps(m, p)
    for k in range(len(p)):
        poses = []
        for sign in (1.0, -1.0):
            q = p.copy()
            q[k] += sign * h
            position, axes = frame_poses(m, ["hand"], solve_fk(m, q, initial_state=base).state)
            poses.append((position[0], axes[0]))
        (x1, R1), (x2, R2) = poses
        turn = rotvec_from_quat(quat_from_matrix(R1 @ R2.T))
        columns.append(np.concatenate([x1 - x2, turn]) / (2 * h))
    return np.array(columns).T


def test_boxer_shoulder_is_singular_with_the_arm_raised_sideways():
    """At shoulder roll pi/2 the pitch axis lines up with the yaw axis through the
    shoulder centre: the hand's 6x4 Jacobian drops from rank 4 to rank 3."""
    m = build("boxer")
    roll = m.actuator_names.index("shoulder_roll")
    raised = np.zeros(4)
    raised[roll] = BOXER_SINGULAR_ROLL
    joint = m.joint("shoulder_roll")
    assert joint.actuator.lower < BOXER_SINGULAR_ROLL < joint.actuator.upper
    with single_threaded_blas():
        neutral_sv = np.linalg.svd(hand_jacobian(m, np.zeros(4)), compute_uv=False)
        raised_sv = np.linalg.svd(hand_jacobian(m, raised), compute_uv=False)
    assert neutral_sv[-1] > 1e-2 * neutral_sv[0]
    assert raised_sv[-1] < 1e-6 * raised_sv[0] and raised_sv[-2] > 1e-2 * raised_sv[0]
    with single_threaded_blas():
        hand, _ = frame_poses(m, ["hand"], fk_in_steps(m, raised))
    shoulder = m.joint("shoulder_yaw").anchor
    assert np.isclose(hand[0][2], shoulder[2])  # raised to shoulder height


def test_all_joints_uses_every_joint_kind_and_needs_every_joint():
    """Removing any joint either detaches a body or adds a degree of freedom."""
    m = build("all_joints")
    kinds = {j.kind for j in m.joints}
    assert kinds == set(JointKind) - {JointKind.FREE}
    for joint in m.joints:
        others = [j for j in m.joints if j is not joint]
        try:
            reduced = Mechanism(m.bodies, others, m.frames)
        except MechanismError:
            continue  # the joint was the only link of some body
        assert analyse_mobility(reduced).dof > 1, joint.name


def test_all_joints_crank_turns_fully_with_one_degree_of_freedom():
    m = build("all_joints")
    cs = ConstraintSet(m, actuated=True)
    state = m.initial_state()
    with single_threaded_blas():
        for angle in np.linspace(0.0, 2 * np.pi, 13)[1:]:
            result = solve_fk(m, [angle], initial_state=state, constraints=cs)
            state = result.state
            assert analyse_mobility(m, state).dof == 1
    assert np.abs(state - m.initial_state()).max() < 1e-8  # back where it started


def test_chain_6r6p_alternates_six_revolute_and_six_prismatic_actuators():
    m = build("chain_6r6p")
    motions = [j.actuator.motion for j in m.actuated_joints]
    assert motions == [ActuatedMotion.DISPLACEMENT, ActuatedMotion.ANGLE] * 6
    kinds = [j.kind for j in m.joints]
    assert kinds == [JointKind.PRISMATIC, JointKind.REVOLUTE] * 6


def test_walker_masses_make_the_centre_of_mass_meaningful():
    """The pelvis is the heaviest body; the CoM lies between the feet, above the hips'
    half-height; the world body carries no appreciable mass."""
    m = build("walker")
    masses = dict(zip(m.body_names, m.masses, strict=True))
    assert max(masses, key=masses.get) == "pelvis"
    assert masses["world"] < 1e-5 * m.masses.sum()
    com = m.masses @ m.initial_state()[:, :3] / m.masses.sum()
    feet, _ = frame_poses(m, ["left_foot", "right_foot"], m.initial_state())
    assert feet[1, 1] < com[1] < feet[0, 1]
    assert com[2] > 0.5 * m.joint("left_hip_pitch").anchor[2]
