"""Serial-chain IK baselines and looprig's IK on the same ball-jointed chain.

Truths used: forward kinematics of the returned pose (the tip is where the
result says), the workspace of a ball-jointed chain (a spherical shell,
``max(0, 2 max l - sum l) <= |tip - base| <= sum l``), the stretched pose for
out-of-reach targets, the law of cosines for two links, and the finite
difference of the position Jacobian.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from looprig.core import JointKind, MechanismError, TargetError, single_threaded_blas
from looprig.core.baselines.chain import SerialChain
from looprig.core.baselines.geometric import CCDSettings, TriangulationSettings, ccd, triangulation
from looprig.core.baselines.jacobian import JacobianSettings, position_jacobian
from looprig.core.baselines.methods import METHODS
from looprig.core.library import build
from looprig.core.library.serial import (
    TRIANGULATION_PAPER_LENGTHS,
    chain_of,
    chain_positions,
    chain_state,
    serial_chain,
    solve_tip_ik,
    tip_problem,
)
from looprig.core.maths.rotations import matrix_from_rotvec
from looprig.core.model.constraints import ConstraintSet

LENGTHS = (1.0, 0.8, 0.6, 0.4)  # [m]
CHAIN = SerialChain(np.array(LENGTHS))
ITERATIVE = ("ccd", "jacobian_transpose", "pseudo_inverse", "damped_least_squares")
TIGHT = 1e-9  # [m]


def tight_settings(name: str, max_iterations: int = 200):
    if name == "triangulation":
        return TriangulationSettings(tolerance=TIGHT)
    if name == "ccd":
        return CCDSettings(max_iterations=max_iterations, tolerance=TIGHT, stall_tolerance=0.0)
    return JacobianSettings(max_iterations=max_iterations, tolerance=TIGHT, stall_tolerance=0.0)


def random_reachable_targets(chain: SerialChain, count: int, seed: int) -> np.ndarray:
    """(count, 3) targets inside the reachable shell, away from its boundary."""
    rng = np.random.default_rng(seed)
    inner, outer = chain.reach
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    radii = rng.uniform(inner + 0.05 * outer, 0.95 * outer, size=count)
    return chain.base + radii[:, None] * directions


def assert_pose_consistent(chain: SerialChain, result, target):
    """Rotations are rotations, FK of them gives the reported positions, the error is |tip - target|."""
    R = result.rotations
    assert np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(3), atol=1e-10)
    assert np.allclose(np.linalg.det(R), 1.0, atol=1e-10)
    assert np.allclose(chain.positions(R), result.positions, atol=1e-10)
    assert np.allclose(np.linalg.norm(np.diff(result.positions, axis=0), axis=1), chain.lengths, atol=1e-10)
    assert np.isclose(np.linalg.norm(result.tip - target), result.error, atol=1e-12)


# ----------------------------------------------------------------------------- chain
def test_chain_workspace_is_a_spherical_shell():
    """Inner radius 2 max(l) - sum(l) when one link outweighs the others, else 0; outer sum(l)."""
    assert CHAIN.reach == (0.0, 2.8)
    long_first = SerialChain(np.array([3.0, 1.0, 1.0]))
    assert long_first.reach == (1.0, 5.0)
    assert not long_first.is_reachable([0.5, 0.0, 0.0])
    assert long_first.closest_distance([0.5, 0.0, 0.0]) == pytest.approx(0.5)
    assert long_first.closest_distance([0.0, 7.0, 0.0]) == pytest.approx(2.0)
    assert long_first.closest_distance([0.0, 0.0, 3.0]) == 0.0


def test_invalid_chains_and_targets_raise():
    with pytest.raises(MechanismError, match="positive"):
        SerialChain(np.array([1.0, 0.0]))
    with pytest.raises(MechanismError, match="direction"):
        SerialChain(np.array([1.0]), direction=np.zeros(3))
    with pytest.raises(TargetError, match="3-vector"):
        triangulation(CHAIN, [1.0, 2.0])
    with pytest.raises(TargetError, match="finite"):
        ccd(CHAIN, [np.nan, 0.0, 0.0])
    with pytest.raises(TargetError, match="shape"):
        ccd(CHAIN, [1.0, 0.0, 0.0], rotations=np.eye(3))


def test_position_jacobian_matches_finite_differences():
    """J w is the first-order tip motion of the step R_j <- Exp(sum_{k<=j} w_k) R_j."""
    rng = np.random.default_rng(3)
    R = matrix_from_rotvec(rng.normal(size=(CHAIN.n, 3)))
    P = CHAIN.positions(R)
    J = position_jacobian(P)
    h = 1e-6
    numeric = np.empty_like(J)
    for column in range(J.shape[1]):
        w = np.zeros(3 * CHAIN.n)
        w[column] = h
        Ws = np.cumsum(w.reshape(-1, 3), axis=0)
        plus = CHAIN.positions(matrix_from_rotvec(Ws) @ R)[-1]
        minus = CHAIN.positions(matrix_from_rotvec(-Ws) @ R)[-1]
        numeric[:, column] = (plus - minus) / (2 * h)
    assert np.allclose(J, numeric, atol=1e-8)


# ----------------------------------------------------------------------------- every method
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_reaches_reachable_targets(name):
    """Reachable targets are reached to 1e-9 m, and FK of the returned pose puts the tip there."""
    for target in random_reachable_targets(CHAIN, 12, seed=1):
        result = METHODS[name](CHAIN, target, tight_settings(name))
        assert result.reached, (name, target, result.error)
        assert result.error <= TIGHT
        assert_pose_consistent(CHAIN, result, target)


@pytest.mark.parametrize("name", list(METHODS))
def test_unreachable_targets_stretch_the_chain_towards_them(name):
    """Beyond reach the best pose is the straight chain pointing at the target:
    ``tip = base + L unit(target - base)``, every link along that unit vector."""
    for target in ([3.0, -2.0, 1.0], [-0.5, -4.0, 0.2], [0.0, 0.0, 10.0]):
        target = np.array(target)
        result = METHODS[name](CHAIN, target, tight_settings(name, max_iterations=2000))
        direction = target / np.linalg.norm(target)
        stretched = CHAIN.base + CHAIN.total_length * direction
        # the distance is flat about the stretched pose (second order in the tip's sideways
        # offset) and the Jacobian is singular there, so the Jacobian methods only creep up to it
        tip_tolerance = 1e-9 if name in ("triangulation", "ccd") else 3e-2
        assert np.linalg.norm(result.tip - stretched) < tip_tolerance, name
        assert result.error - CHAIN.closest_distance(target) < (1e-12 if tip_tolerance < 1e-6 else 1e-4)
        links = np.diff(result.positions, axis=0) / CHAIN.lengths[:, None]
        assert np.all(links @ direction > 1.0 - tip_tolerance)
        assert_pose_consistent(CHAIN, result, target)


@pytest.mark.parametrize("name", ITERATIVE)
def test_iterative_errors_never_increase(name):
    """CCD's joint rotations each minimise the tip distance; the Jacobian methods halve
    steps that would increase it. The error history is non-increasing and ends lower."""
    targets = [*random_reachable_targets(CHAIN, 6, seed=4), np.array([0.0, -5.0, 1.0])]
    for target in targets:
        result = METHODS[name](CHAIN, target, tight_settings(name, max_iterations=60))
        assert len(result.errors) == result.iterations + 1
        assert np.all(np.diff(result.errors) <= 1e-12), result.errors
        assert result.errors[-1] < result.errors[0]
        assert result.errors[-1] == result.error


def test_ccd_counts_sweeps_and_joint_updates():
    """One CCD iteration is a sweep over all joints, from the tip to the base (seed 001,
    Sec. 2.2); the tip-side joint turns first and points the tip straight at the target."""
    target = np.array([1.5, 1.0, 0.5])
    one = ccd(CHAIN, target, CCDSettings(max_iterations=1, tolerance=TIGHT))
    assert one.iterations == 1 and one.joint_updates == CHAIN.n
    first = ccd(CHAIN, target, CCDSettings(max_iterations=1, tolerance=10.0))
    assert first.iterations == 0 and first.joint_updates == 0  # already "reached" at 10 m
    result = ccd(CHAIN, target, CCDSettings(max_iterations=200, tolerance=1e-6))
    assert result.reached
    assert CHAIN.n * (result.iterations - 1) < result.joint_updates <= CHAIN.n * result.iterations


# ----------------------------------------------------------------------------- triangulation
def test_triangulation_is_one_pass():
    """One iteration of n joint rotations reaches every reachable target (seed 001, Sec. 3.2)."""
    for target in random_reachable_targets(CHAIN, 20, seed=5):
        result = triangulation(CHAIN, target, TriangulationSettings(tolerance=TIGHT))
        assert result.iterations == 1
        assert result.joint_updates == CHAIN.n
        assert len(result.errors) == 2
        assert result.reached


def test_triangulation_from_straight_bends_only_the_first_two_joints():
    """From the straight pose with a target the first link can triangulate
    (b - a < |t| <= a + b), link 1 turns to the triangle's angle, link 2 points at
    the target and the rest stays straight (seed 001, Sec. 3.1: "in the ideal case
    this method will rotate only the first two joints"). The rotation cost (eq. 3)
    is then the sum of the two joint angles."""
    chain = SerialChain(np.array(TRIANGULATION_PAPER_LENGTHS))
    rng = np.random.default_rng(6)
    for _ in range(20):
        direction = rng.normal(size=3)
        target = rng.uniform(23.0, 39.5) * direction / np.linalg.norm(direction)
        result = triangulation(chain, target, TriangulationSettings(tolerance=1e-9))
        angles = result.joint_angles
        assert np.all(angles[2:] < 1e-7), angles
        assert result.rotation_cost == pytest.approx(angles.sum(), abs=1e-9)
        assert result.reached


def test_triangulation_handles_targets_too_close():
    """Inside the inner radius the closest tip is at the inner radius on the target's side."""
    chain = SerialChain(np.array([3.0, 1.0, 1.0]))
    target = np.array([0.1, 0.3, 0.0])
    result = triangulation(chain, target)
    assert result.error == pytest.approx(chain.closest_distance(target), abs=1e-12)
    assert np.allclose(result.tip, target / np.linalg.norm(target), atol=1e-12)
    # a target reachable only by folding back (|t| < b - a): link 1 points away first
    chain = SerialChain(np.array([1.0, 2.0, 2.0]))
    result = triangulation(chain, [0.2, -0.1, 0.0], TriangulationSettings(tolerance=1e-9))
    assert result.reached


def test_triangulation_with_target_on_the_chain_axis_uses_the_fallback_axis():
    """Target straight ahead or behind: a x c is zero, the fallback axis is used (Sec. 3.1.1)."""
    for target in ([0.0, 2.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 0.0]):
        result = triangulation(CHAIN, target, TriangulationSettings(tolerance=1e-9))
        assert result.reached, target
        assert_pose_consistent(CHAIN, result, np.array(target))


@pytest.mark.parametrize("name", list(METHODS))
def test_two_link_planar_closed_form(name):
    """Two links l1, l2 and a target at distance c in the x-y plane (rest along +y):
    link 1 makes ``acos((l1^2 + c^2 - l2^2) / (2 l1 c))`` with the target direction and
    the elbow bends by ``pi - acos((l1^2 + l2^2 - c^2) / (2 l1 l2))`` (law of cosines);
    every method keeps the chain in the plane of the rest direction and the target."""
    l1, l2 = 0.3, 0.25
    chain = SerialChain(np.array([l1, l2]))
    for angle, c in [(0.4, 0.35), (2.0, 0.5), (-2.5, 0.1), (1.2, 0.54)]:
        target = c * np.array([np.sin(angle), np.cos(angle), 0.0])
        result = METHODS[name](chain, target, tight_settings(name, max_iterations=2000))
        assert result.reached, (name, angle, c, result.error)
        link1, link2 = np.diff(result.positions, axis=0)
        shoulder = np.arccos(np.dot(link1, target) / (l1 * c))
        elbow = np.arccos(np.clip(np.dot(link1, link2) / (l1 * l2), -1.0, 1.0))
        assert shoulder == pytest.approx(np.arccos((l1**2 + c**2 - l2**2) / (2 * l1 * c)), abs=1e-6)
        assert elbow == pytest.approx(np.pi - np.arccos((l1**2 + l2**2 - c**2) / (2 * l1 * l2)), abs=1e-6)
        assert np.abs(result.positions[:, 2]).max() < 1e-9


# ----------------------------------------------------------------------------- properties
chains = st.lists(st.floats(0.1, 2.0), min_size=1, max_size=6).map(lambda ls: SerialChain(np.array(ls)))
unit_vectors = st.tuples(*[st.floats(-1.0, 1.0)] * 3).filter(lambda v: np.linalg.norm(v) > 0.1)


@settings(max_examples=60, deadline=None)
@given(chain=chains, direction=unit_vectors, fraction=st.floats(0.0, 1.5))
def test_triangulation_gets_as_close_as_possible(chain, direction, fraction):
    """Any target: triangulation's error is the distance to the workspace shell."""
    direction = np.array(direction) / np.linalg.norm(direction)
    target = chain.base + fraction * chain.total_length * direction
    result = triangulation(chain, target)
    assert result.error == pytest.approx(chain.closest_distance(target), abs=1e-11 * chain.total_length)
    assert_pose_consistent(chain, result, target)


@settings(max_examples=25, deadline=None)
@given(
    chain=st.lists(st.floats(0.3, 2.0), min_size=1, max_size=6).map(lambda ls: SerialChain(np.array(ls))),
    direction=unit_vectors,
    fraction=st.floats(0.2, 0.9),
    name=st.sampled_from(ITERATIVE),
)
def test_iterative_methods_on_random_chains(chain, direction, fraction, name):
    """On any chain, from the straight pose: the error never increases, the pose is
    consistent, and targets well inside the reachable shell come within 1e-4 of L.
    (CCD and the Jacobian methods converge linearly, and very slowly near the shell's
    inner boundary when one link dwarfs the others, so links stay within a factor of
    7 and targets away from the boundaries.)

    Targets on the straight chain's own line are left out: there every joint already
    points the tip at the target (CCD) and ``J^T e = 0``, a stationary point of all four."""
    inner, outer = chain.reach
    radius = inner + fraction * (outer - inner)
    direction = np.array(direction) / np.linalg.norm(direction)
    assume(abs(direction @ chain.direction) < 0.999)
    target = chain.base + radius * direction
    method = METHODS[name]
    tolerance = 1e-6 * chain.total_length
    if name == "ccd":
        result = method(chain, target, CCDSettings(max_iterations=3000, tolerance=tolerance))
    else:
        result = method(chain, target, JacobianSettings(max_iterations=3000, tolerance=tolerance))
    assert np.all(np.diff(result.errors) <= 1e-12 * chain.total_length)
    assert_pose_consistent(chain, result, target)
    if chain.n > 1:
        assert result.error < 1e-4 * chain.total_length, (name, result.error, result.iterations)


# ----------------------------------------------------------------------------- looprig on the chain
def test_serial_chain_mechanism_structure():
    """n + 1 bodies, n spherical joints, 3n DoF, no loops, frame ``tip`` at L along +y."""
    m = serial_chain(LENGTHS)
    assert len(m.bodies) == len(LENGTHS) + 1 and len(m.joints) == len(LENGTHS)
    assert all(j.kind == JointKind.SPHERICAL for j in m.joints)
    assert m.grubler_dof() == 3 * len(LENGTHS)
    assert m.independent_loops() == 0
    assert np.allclose(m.frame("tip").position, [0.0, sum(LENGTHS), 0.0])
    chain = chain_of(m)
    assert np.allclose(chain.lengths, LENGTHS) and np.allclose(chain.direction, [0.0, 1.0, 0.0])
    assert np.allclose(chain_positions(m, m.initial_state()), chain.positions(chain.rest_rotations()))
    with pytest.raises(MechanismError, match="positive"):
        serial_chain((1.0, -1.0))
    with pytest.raises(MechanismError, match="serial_chain"):
        chain_of(build("two_link_arm"))


def test_chain_state_is_assembled_and_round_trips():
    """A baseline's pose becomes a looprig state with every joint closed, and back."""
    m = serial_chain(LENGTHS)
    result = triangulation(CHAIN, [0.9, -1.2, 0.7])
    state = chain_state(m, result.rotations)
    assert np.abs(ConstraintSet(m, actuated=False).residual(state)).max() < 1e-12
    assert np.allclose(chain_positions(m, state), result.positions, atol=1e-12)


def test_looprig_ik_reaches_a_target_from_the_straight_pose():
    """looprig's SQP moves the tip onto a reachable target a moderate bend away; the
    state stays assembled and FK of the returned link rotations gives the tip."""
    m = serial_chain(LENGTHS)
    problem = tip_problem(m)
    R = matrix_from_rotvec(np.array([[0.3, 0.0, 0.2], [0.0, 0.0, -0.4], [0.2, 0.1, 0.0], [0.0, 0.3, 0.0]]))
    target = CHAIN.positions(R)[-1]
    with single_threaded_blas():
        result = solve_tip_ik(problem, target, tolerance=1e-6)
    assert result.reached, result.error
    assert result.details.residual < 1e-9
    assert np.allclose(CHAIN.positions(result.rotations), result.positions, atol=1e-8)
    assert np.linalg.norm(result.tip - target) == pytest.approx(result.error, abs=1e-9)


def test_looprig_ik_started_from_triangulation_is_already_there():
    """Triangulation's answer is an exact, assembled starting state for looprig's IK."""
    chain = SerialChain(np.array(TRIANGULATION_PAPER_LENGTHS))
    m = serial_chain(TRIANGULATION_PAPER_LENGTHS)
    problem = tip_problem(m)
    target = np.array([8.2, -13.8, -27.5])
    guess = triangulation(chain, target)
    with single_threaded_blas():
        result = solve_tip_ik(problem, target, chain_state(m, guess.rotations), tolerance=1e-6)
    assert result.reached and result.details.converged
    assert result.iterations <= 2
    assert np.allclose(result.positions, guess.positions, atol=1e-6)
