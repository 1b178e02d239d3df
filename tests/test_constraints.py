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
from looprig.core.library import build
from looprig.core.maths.rotations import quat_from_rotvec, quat_to_matrix, retract
from looprig.core.model.parts import Coupling
from looprig.core.model.primitives import CLOSURE_POINTS, FrameClosure
from looprig.core.model.readoff import JointReadout
from looprig.core.solvers.fk import solve_fk

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
    from looprig.core.model.parts import JOINT_DOF

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
    from looprig.core.maths.rotations import quat_to_matrix

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
    """The every-kind chain with three couplings sharing bodies, ratios in mixed units:
    a differential (angle from an angle and a displacement), a polynomial on two sources
    (displacement from an angle cubed and a displacement squared: terms of unequal
    degree) and a gear (angle from a displacement)."""
    m = every_kind_chain(seed)
    revolute = [j.name for j in m.joints if j.kind == JointKind.REVOLUTE]
    prismatic = [j.name for j in m.joints if j.kind == JointKind.PRISMATIC]
    couplings = [
        Coupling("aa", revolute[0], (revolute[1], prismatic[1]), (-0.7, 0.4), offset=0.1),
        Coupling(
            "pa", prismatic[0], (revolute[1], prismatic[1]), (0.05, -0.3), -0.02, ((0.03, -0.01), (2.0,))
        ),
        Coupling("ap", revolute[1], prismatic[1], 3.0),
    ]
    return Mechanism(m.bodies, m.joints, m.frames, name="coupled", couplings=couplings)


def coupling_formula(m: Mechanism, state: np.ndarray) -> np.ndarray:
    """``q_joint - offset - sum_k (r_k q_k + sum_p c_kp q_k^p)`` per coupling (K,), each term
    written out from the coupling's fields (no shared code with the rows)."""
    out = []
    for c in m.couplings:
        q = JointReadout(m, [m.joint(c.joint), *(m.joint(s) for s in c.sources)]).read(state)
        total = c.offset
        for k, (x, ratio) in enumerate(zip(q[1:], c.ratios, strict=True)):
            higher = c.polynomial[k] if c.polynomial else ()
            total += ratio * x + sum(coef * x ** (p + 2) for p, coef in enumerate(higher))
        out.append(q[0] - total)
    return np.array(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("actuated", [False, True])
def test_coupling_rows_and_jacobian(seed, actuated):
    """Rows s (q_a - offset - sum_k P_k(q_k)), s = L for an angle; analytic Jacobian against
    central differences through retract; batched evaluation equals per-state; CSR equals
    dense; a subset of rows equals those rows of the whole."""
    m = coupled_chain(seed)
    cs = ConstraintSet(m, actuated=actuated)
    plain = ConstraintSet(every_kind_chain(seed), actuated=actuated)
    assert cs.n_rows == plain.n_rows + 3
    rng = np.random.default_rng(200 + seed)
    states = retract(m.initial_state(), rng.normal(scale=0.3, size=(2, len(m.bodies), 6)))
    p = rng.normal(size=cs.n_actuators)
    readout = JointReadout(m, [m.joint(c.joint) for c in m.couplings])
    scale = np.where(readout.is_angle, cs.length_scale, 1.0)
    expected = scale * coupling_formula(m, states[0])
    assert np.abs(expected).min() > 1e-3  # the states are off every coupling
    np.testing.assert_allclose(cs.residual(states[0], p)[-3:], expected, atol=1e-12)
    analytic = cs.jacobian(states[0], p)
    numeric = numerical_jacobian(lambda s: cs.residual(s, p), states[0], cs.free_bodies)
    assert np.abs(analytic[-3:]).max() > 0.1
    assert np.abs(analytic - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
    assert np.allclose(cs.jacobian(states[0], p, sparse=True).toarray(), analytic)
    batched = cs.jacobian(states, p)
    assert np.allclose(batched[1], cs.jacobian(states[1], p)) and np.allclose(batched[0], analytic)
    rows = np.array([cs.n_rows - 1, 0, cs.n_rows - 3])
    _, blocks = cs.evaluate(states[0], p)
    assert np.array_equal(cs.dense(blocks, (), rows), analytic[rows])
    assert [cs.worst_joint(np.eye(cs.n_rows)[r]) for r in range(cs.n_rows - 3, cs.n_rows)] == [
        "aa",
        "pa",
        "ap",
    ]


def fan(coupling: Coupling) -> Mechanism:
    """ground -r0- base, and three hinges base -r1- a, base -r2- b, base -r3- c about
    different axes: the coupled joint's sources share their parent, a moving body, so
    one coupling row has two blocks on the same body (accumulated). r0, r1, r2 actuated."""
    bodies = [Body("ground", grounded=True)] + [
        Body(name, position=np.array(p, float)) for name, p in [("base", (0, 0, 0.2))] + FAN_ARMS
    ]
    hinges = [("r0", "ground", "base", (0, 0, 0), (0, 0, 1))] + [
        (f"r{k + 1}", "base", name, (0, 0, 0.2), axis)
        for k, ((name, _), axis) in enumerate(zip(FAN_ARMS, FAN_AXES, strict=True))
    ]
    joints = [
        Joint(
            name,
            JointKind.REVOLUTE,
            parent,
            child,
            np.array(anchor, float),
            np.array(axis, float),
            actuator=Actuator() if name != "r3" else None,
        )
        for name, parent, child, anchor, axis in hinges
    ]
    return Mechanism(bodies, joints, name="fan", couplings=[coupling])


FAN_ARMS = [("a", (0.3, 0, 0.2)), ("b", (0, 0.3, 0.2)), ("c", (-0.2, -0.2, 0.3))]
FAN_AXES = [(0, 1, 0), (1, 0, 0), (1, 1, 1)]


def test_differential_fan_jacobian_with_sources_on_one_body():
    """r3 = 0.5 r1 - 0.25 r2 + 0.1: the row's blocks on ``base`` come from all three joints
    (r1's and r2's parent, r3's parent); the analytic Jacobian equals central differences."""
    m = fan(Coupling("diff", "r3", ("r1", "r2"), (0.5, -0.25), 0.1))
    cs = ConstraintSet(m, actuated=False)
    state = retract(m.initial_state(), np.random.default_rng(5).normal(scale=0.4, size=(5, 6)))
    numeric = numerical_jacobian(cs.residual, state, cs.free_bodies)
    analytic = cs.jacobian(state)
    assert np.abs(analytic[-1, :6]).max() > 0.05  # the shared body's block
    assert np.abs(analytic - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
    assert np.allclose(cs.jacobian(state, sparse=True).toarray(), analytic)


@pytest.mark.parametrize(
    "coupling, formula",
    [
        (
            Coupling("diff", "r3", ("r1", "r2"), (0.5, -0.25), 0.1),
            lambda r1, r2: 0.1 + 0.5 * r1 - 0.25 * r2,
        ),
        (  # MuJoCo's polycoef "0.05 0.8 -0.3 0.2 0.1" on r1
            Coupling("poly", "r3", "r1", 0.8, 0.05, ((-0.3, 0.2, 0.1),)),
            lambda r1, r2: 0.05 + 0.8 * r1 - 0.3 * r1**2 + 0.2 * r1**3 + 0.1 * r1**4,
        ),
    ],
)
def test_forward_kinematics_meets_the_coupling_in_closed_form(coupling, formula):
    """Forward kinematics of the fan at motor values (r0, r1, r2): the read-off of r3 is
    the coupling's formula of r1 and r2, to the solver's tolerance; the state meets every
    joint row, and its Jacobian with the coupling row has full rank (the coupled joint's
    one degree of freedom is taken)."""
    m = fan(coupling)
    for values in ([0.3, 0.6, -0.4], [-1.0, -0.9, 1.2]):
        state = solve_fk(m, values).state
        r = JointReadout(m, [m.joint(f"r{k}") for k in range(4)]).read(state)
        np.testing.assert_allclose(r[:3], values, atol=1e-9)
        assert abs(r[3] - formula(r[1], r[2])) < 1e-9 and abs(r[3]) > 0.1
    assert np.linalg.matrix_rank(ConstraintSet(m, actuated=False).jacobian(state)) == 4 * 5 + 1


def test_coupling_shifted_about_other_values_is_the_same_equation():
    """``shifted(v)`` re-expresses the coupling in q' = q - v: its value at q' equals the
    original's at q minus v_joint, for a polynomial on two sources (Taylor shift)."""
    c = Coupling("c", "j", ("a", "b"), (0.7, -1.2), 0.3, ((0.5, -0.25, 0.125), (0.0, 2.0)))
    v = {"j": 0.4, "a": -0.6, "b": 0.9}
    moved = c.shifted(v)
    for x in np.random.default_rng(3).normal(size=(5, 2)):
        assert moved.value(x - [v["a"], v["b"]]) == pytest.approx(c.value(x) - v["j"], abs=1e-13)
    linear = Coupling("g", "j", "a", -0.5, 0.1).shifted(v)
    assert (linear.ratios, linear.polynomial) == ((-0.5,), ())
    assert linear.offset == pytest.approx(0.1 - 0.5 * -0.6 - 0.4)


def test_coupling_validation_names_the_problem():
    m = every_kind_chain()
    revolute = [j.name for j in m.joints if j.kind == JointKind.REVOLUTE]
    spherical = next(j.name for j in m.joints if j.kind == JointKind.SPHERICAL)
    cases = [
        (Coupling("c", "nothing", revolute[0]), "no joint 'nothing'"),
        (Coupling("c", spherical, revolute[0]), "is spherical; couplings join revolute and prismatic"),
        (Coupling("c", revolute[0], revolute[0]), "to itself"),
        (Coupling("c", revolute[0], revolute[1], np.inf), "must be finite"),
    ]
    for coupling, message in cases:
        with pytest.raises(MechanismError, match=message):
            Mechanism(m.bodies, m.joints, couplings=[coupling])
    prismatic = [j.name for j in m.joints if j.kind == JointKind.PRISMATIC]
    more = [
        (Coupling("c", revolute[0], (revolute[1], prismatic[0]), (1.0,)), "one ratio per source"),
        (Coupling("c", revolute[0], (revolute[1], revolute[1]), (1.0, 2.0)), "named twice"),
        (Coupling("c", revolute[0], (revolute[1], revolute[0]), (1.0, 2.0)), "to itself"),
        (Coupling("c", revolute[0], (), ()), "at least one source"),
        (Coupling("c", revolute[0], revolute[1], 1.0, 0.0, ((1.0,), (2.0,))), "one tuple .* per source"),
        (Coupling("c", revolute[0], revolute[1], 1.0, 0.0, ((1.0, np.nan),)), "must be finite"),
        (Coupling("c", revolute[0], revolute[1], "one"), "must be numbers"),
    ]
    for coupling, message in more:
        with pytest.raises(MechanismError, match=message):
            Mechanism(m.bodies, m.joints, couplings=[coupling])
    twice = [Coupling("c1", revolute[0], revolute[1]), Coupling("c2", revolute[0], revolute[1])]
    with pytest.raises(MechanismError, match="already set by coupling 'c1'"):
        Mechanism(m.bodies, m.joints, couplings=twice)
