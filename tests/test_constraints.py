"""Constraint residuals and analytic Jacobians, for every joint kind and actuator."""

import numpy as np
import pytest
from jacobians import numerical_jacobian
from looprig.core import (
    ActuatedMotion,
    Actuator,
    Body,
    ConstraintSet,
    Joint,
    JointKind,
    Mechanism,
    MechanismError,
)
from looprig.core.constraints import CLOSURE_POINTS, FrameClosure
from looprig.core.library import build
from looprig.core.mechanism import Coupling
from looprig.core.readoff import JointReadout
from looprig.core.rotations import quat_from_rotvec, quat_to_matrix, retract

ACTUATED = {
    JointKind.REVOLUTE: [ActuatedMotion.ANGLE],
    JointKind.PRISMATIC: [ActuatedMotion.DISPLACEMENT],
    JointKind.CYLINDRICAL: [ActuatedMotion.ANGLE, ActuatedMotion.DISPLACEMENT],
}


def every_kind_chain(seed: int = 0) -> Mechanism:
    """A chain ground - b0 - b1 - ... with one joint of each kind (and each actuated
    variant), random anchors and axes, bodies not world-aligned."""
    rng = np.random.default_rng(seed)
    variants = [(kind, None) for kind in JointKind] + [
        (kind, motion) for kind, motions in ACTUATED.items() for motion in motions
    ]
    bodies = [Body("ground", grounded=True)]
    joints = []
    for k, (kind, motion) in enumerate(variants):
        bodies.append(
            Body(
                f"b{k}",
                position=rng.normal(size=3),
                orientation=quat_from_rotvec(rng.normal(size=3)),
                mass=1.0 + k,
            )
        )
        axis = rng.normal(size=3)
        secondary = np.cross(axis, rng.normal(size=3)) if kind == JointKind.UNIVERSAL else None
        actuator = Actuator(motion) if motion else None
        joints.append(
            Joint(
                f"j{k}_{kind.value}",
                kind,
                bodies[-2].name,
                bodies[-1].name,
                anchor=rng.normal(size=3),
                axis=axis,
                secondary_axis=secondary,
                actuator=actuator,
            )
        )
    return Mechanism(bodies, joints, name="every_kind")


@pytest.mark.parametrize("actuated", [False, True])
def test_initial_configuration_satisfies_every_joint(actuated):
    m = every_kind_chain()
    cs = ConstraintSet(m, actuated=actuated)
    p = np.zeros(cs.n_actuators)
    assert np.abs(cs.residual(m.initial_state(), p)).max() < 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("actuated", [False, True])
def test_jacobian_matches_finite_differences(seed, actuated):
    m = every_kind_chain(seed)
    cs = ConstraintSet(m, actuated=actuated)
    rng = np.random.default_rng(100 + seed)
    state = retract(m.initial_state(), rng.normal(scale=0.5, size=(len(m.bodies), 6)))
    p = rng.normal(size=cs.n_actuators)
    analytic = cs.jacobian(state, p)
    numeric = numerical_jacobian(lambda s: cs.residual(s, p), state, cs.free_bodies)
    assert np.abs(analytic - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
    assert np.allclose(cs.jacobian(state, p, sparse=True).toarray(), analytic)


def test_rows_per_kind_match_the_joint_dof():
    """Each joint removes 6 - dof freedoms with the minimal number of rows."""
    from looprig.core.mechanism import JOINT_DOF

    m = every_kind_chain()
    cs = ConstraintSet(m, actuated=False)
    rows = np.bincount(cs.row_joint, minlength=len(m.joints))
    for joint, count in zip(m.joints, rows, strict=True):
        assert count == 6 - JOINT_DOF[joint.kind], joint.name


def test_batched_evaluation_equals_per_frame():
    m = every_kind_chain(3)
    cs = ConstraintSet(m, actuated=True)
    rng = np.random.default_rng(7)
    states = retract(
        np.broadcast_to(m.initial_state(), (4, 2, len(m.bodies), 7)),
        rng.normal(scale=0.3, size=(4, 2, len(m.bodies), 6)),
    )
    p = rng.normal(size=(4, 2, cs.n_actuators))
    batch_r = cs.residual(states, p)
    batch_J = cs.jacobian(states, p)
    for a in range(4):
        for b in range(2):
            assert np.allclose(batch_r[a, b], cs.residual(states[a, b], p[a, b]))
            assert np.allclose(batch_J[a, b], cs.jacobian(states[a, b], p[a, b]))


def test_rotational_rows_are_scaled_by_mean_joint_distance():
    """Paper III.C: dot-product rows carry the mean anchor distance L [m]."""
    m = build("fourbar")
    cs = ConstraintSet(m, actuated=False)
    anchors = np.array([j.anchor for j in m.joints])
    pairs = [np.linalg.norm(a - b) for i, a in enumerate(anchors) for b in anchors[i + 1 :]]
    assert np.isclose(cs.length_scale, np.mean(pairs))
    # tilt the coupler out of plane by a small angle: its hinge rows grow by ~L * angle
    state = m.initial_state()
    tilted = retract(state, np.array([[0] * 6, [0] * 6, [0, 0, 0, 1e-6, 0, 0], [0] * 6], float))
    dot_rows = cs.residual(tilted)[12:]
    assert np.isclose(np.abs(dot_rows).max(), cs.length_scale * 1e-6, rtol=1e-3)


@pytest.mark.parametrize("seed", [0, 1])
def test_actuator_read_off_jacobian_matches_finite_differences(seed):
    """d(read-off)/d(state) for angle and displacement actuators, on and off the manifold."""
    from looprig.core import ActuatorReadout
    from looprig.core.rotations import quat_to_matrix

    m = every_kind_chain(seed)
    cs = ConstraintSet(m, actuated=False)
    readout = ActuatorReadout(m)
    rng = np.random.default_rng(seed)
    state = retract(m.initial_state(), rng.normal(scale=0.3, size=(len(m.bodies), 6)))
    analytic = readout.jacobian(state, quat_to_matrix(state[:, 3:]), cs.column_of_body, cs.n_vars)
    numeric = numerical_jacobian(
        lambda s: readout.read(s, previous=readout.read(state)), state, cs.free_bodies
    )
    assert np.abs(analytic - numeric).max() < 1e-7


def open_closures(m: Mechanism, rng) -> list[FrameClosure]:
    """One closure of each kind between random bodies, frames apart (loops written open)."""
    names = m.body_names
    closures = []
    for k, kind in enumerate(CLOSURE_POINTS):
        i, j = rng.choice(len(names), size=2, replace=False)
        frames = [np.eye(4), np.eye(4)]
        for T in frames:
            T[:3, :3] = quat_to_matrix(quat_from_rotvec(rng.normal(size=3)))
            T[:3, 3] = rng.normal(size=3)
        closures.append(FrameClosure(f"c{k}", kind, names[i], names[j], *frames, axis=rng.normal(size=3)))
    return closures


@pytest.mark.parametrize("seed", [0, 1])
def test_closure_rows_jacobian_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    m = every_kind_chain(seed)
    cs = ConstraintSet(m, actuated=False, closures=open_closures(m, rng))
    assert cs.n_rows == ConstraintSet(m, actuated=False).n_rows + 3 * (1 + 2 + 3)
    state = retract(m.initial_state(), rng.normal(scale=0.5, size=(len(m.bodies), 6)))
    analytic = cs.jacobian(state)
    numeric = numerical_jacobian(cs.residual, state, cs.free_bodies)
    assert np.abs(analytic - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
    last = np.flatnonzero(cs.row_joint == len(m.joints) + 2)[-1]  # closures follow the joints
    assert cs.worst_joint(np.eye(cs.n_rows)[last]) == "c2"


def test_closure_rows_vanish_exactly_when_the_frames_coincide():
    """Fixed: three points coincide iff the frames do; a half turn is no solution (unlike
    dot-product rows, which a 180 degree flip also satisfies)."""
    m = every_kind_chain()
    s = m.initial_state()
    R = quat_to_matrix(s[:, 3:])
    i, j = 1, 2
    T_world = np.eye(4)
    T_world[:3, :3] = quat_to_matrix(quat_from_rotvec([0.3, -0.2, 0.5]))
    T_world[:3, 3] = [0.1, 0.2, 0.3]
    T_i, T_j = np.eye(4), np.eye(4)
    for T, b in ((T_i, i), (T_j, j)):
        T[:3, :3] = R[b].T @ T_world[:3, :3]
        T[:3, 3] = R[b].T @ (T_world[:3, 3] - s[b, :3])
    flipped = T_j.copy()
    flipped[:3, :3] = T_j[:3, :3] @ np.diag([1.0, -1.0, -1.0])
    for kind in CLOSURE_POINTS:
        names = m.body_names
        closed = ConstraintSet(m, False, [FrameClosure("c", kind, names[i], names[j], T_i, T_j, [1.0, 0, 0])])
        assert np.abs(closed.residual(s)).max() < 1e-12
        half = ConstraintSet(
            m, False, [FrameClosure("c", kind, names[i], names[j], T_i, flipped, [1.0, 0, 0])]
        )
        gap = np.abs(half.residual(s)).max()
        assert gap < 1e-12 if kind != JointKind.FIXED else gap > 0.1 * half.length_scale


def coupled_chain(seed: int = 0) -> Mechanism:
    """The every-kind chain with three couplings: angle from angle, displacement from
    angle, angle from displacement (ratios with mixed units), sharing bodies."""
    m = every_kind_chain(seed)
    revolute = [j.name for j in m.joints if j.kind == JointKind.REVOLUTE]
    prismatic = [j.name for j in m.joints if j.kind == JointKind.PRISMATIC]
    couplings = [
        Coupling("aa", revolute[0], revolute[1], ratio=-0.7, offset=0.1),
        Coupling("pa", prismatic[0], revolute[1], ratio=0.05, offset=-0.02),
        Coupling("ap", revolute[1], prismatic[1], ratio=3.0),
    ]
    return Mechanism(m.bodies, m.joints, m.frames, name="coupled", couplings=couplings)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("actuated", [False, True])
def test_coupling_rows_and_jacobian(seed, actuated):
    """Rows s (q_a - k q_b - c), s = L for an angle; analytic Jacobian against central
    differences through retract; batched evaluation equals per-state; CSR equals dense."""
    m = coupled_chain(seed)
    cs = ConstraintSet(m, actuated=actuated)
    plain = ConstraintSet(every_kind_chain(seed), actuated=actuated)
    assert cs.n_rows == plain.n_rows + 3
    rng = np.random.default_rng(200 + seed)
    states = retract(m.initial_state(), rng.normal(scale=0.3, size=(2, len(m.bodies), 6)))
    p = rng.normal(size=cs.n_actuators)
    readout = JointReadout(
        m, [m.joint(c.joint) for c in m.couplings] + [m.joint(c.source) for c in m.couplings]
    )
    q = readout.read(states[0])
    expected = [(q[k] - c.ratio * q[3 + k] - c.offset) for k, c in enumerate(m.couplings)]
    scale = np.where(readout.is_angle[:3], cs.length_scale, 1.0)
    np.testing.assert_allclose(cs.residual(states[0], p)[-3:], scale * np.array(expected), atol=1e-12)
    analytic = cs.jacobian(states[0], p)
    numeric = numerical_jacobian(lambda s: cs.residual(s, p), states[0], cs.free_bodies)
    assert np.abs(analytic - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
    assert np.allclose(cs.jacobian(states[0], p, sparse=True).toarray(), analytic)
    batched = cs.jacobian(states, p)
    assert np.allclose(batched[1], cs.jacobian(states[1], p)) and np.allclose(batched[0], analytic)
    assert [cs.worst_joint(np.eye(cs.n_rows)[r]) for r in range(cs.n_rows - 3, cs.n_rows)] == [
        "aa",
        "pa",
        "ap",
    ]


def test_coupling_validation_names_the_problem():
    m = every_kind_chain()
    revolute = [j.name for j in m.joints if j.kind == JointKind.REVOLUTE]
    spherical = next(j.name for j in m.joints if j.kind == JointKind.SPHERICAL)
    cases = [
        (Coupling("c", "nothing", revolute[0]), "no joint 'nothing'"),
        (Coupling("c", spherical, revolute[0]), "is spherical; couplings join revolute and prismatic"),
        (Coupling("c", revolute[0], revolute[0]), "to itself"),
        (Coupling("c", revolute[0], revolute[1], ratio=np.inf), "must be finite"),
    ]
    for coupling, message in cases:
        with pytest.raises(MechanismError, match=message):
            Mechanism(m.bodies, m.joints, couplings=[coupling])
    twice = [Coupling("c1", revolute[0], revolute[1]), Coupling("c2", revolute[0], revolute[1])]
    with pytest.raises(MechanismError, match="already set by coupling 'c1'"):
        Mechanism(m.bodies, m.joints, couplings=twice)
