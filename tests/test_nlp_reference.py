"""The IPOPT whole-clip reference (tests/nlp_reference.py) checked against looprig's own kinematics.

Its tree model must pose every body and frame as looprig's forward kinematics
does and read the same motor values; an unlimited clip made from known motor
curves must be solved exactly; a clip that asks for more speed than the motors
have must come back inside every limit, with the velocity limit active.
"""

import numpy as np
import pytest

pytest.importorskip("casadi", reason="the NLP reference needs casadi (IPOPT): pip install 'looprig[test]'")

from looprig.core import ActuatorReadout, FrameObjective, Joint, JointKind, Mechanism, solve_fk
from looprig.core.library import build
from looprig.core.maths.rotations import quat_from_matrix, quat_to_matrix
from nlp_reference import ReferenceModel, solve_reference

#: per mechanism: the tracked frame's objective (weights), the motor amplitude used
#: for random and smooth curves [rad or m]
CASES = {
    "boxer": (FrameObjective("hand", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0)), 0.8),
    "fourbar": (FrameObjective("coupler_point", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)), 1.0),
    "stewart": (FrameObjective("platform", (1.0, 1.0, 1.0), (0.1, 0.1, 0.1)), 0.03),
}


def frame_pose(mechanism, state, name):
    """World position (3,) [m] and axes (3, 3) of frame ``name`` from a looprig state (n, 7)."""
    frame = mechanism.frame(name)
    body = mechanism.bodies[mechanism.body_index(frame.body)]
    b = mechanism.body_index(frame.body)
    turn = quat_to_matrix(state[b, 3:]) @ quat_to_matrix(body.orientation).T  # from the initial pose
    return turn @ (frame.position - body.position) + state[b, :3], turn @ quat_to_matrix(frame.orientation)


def looprig_curve(mechanism, motors):
    """looprig's FK states (F, n, 7) of motor curves (F, A), each frame from the previous one."""
    states, state = [], None
    for m in motors:
        state = solve_fk(mechanism, m, initial_state=state).state
        states.append(state)
    return np.array(states)


def targets_of(mechanism, objective, states):
    """Target positions (F, 1, 3) and rotations (F, 1, 3, 3): the frame's poses in ``states``."""
    poses = [frame_pose(mechanism, s, objective.frame) for s in states]
    return np.array([p for p, _ in poses])[:, None], np.array([R for _, R in poses])[:, None]


def tracking_cost(mechanism, objective, states, positions, rotations):
    """sum_k 1/2 [sum w_pos (p - p^)^2 + sum_a w_a |R a - a^|^2] over looprig's states (F, n, 7)."""
    total = 0.0
    for state, p_hat, R_hat in zip(states, positions[:, 0], rotations[:, 0], strict=True):
        p, R = frame_pose(mechanism, state, objective.frame)
        total += 0.5 * np.dot(objective.position_weight, (p - p_hat) ** 2)
        total += 0.5 * np.dot(objective.orientation_weight, ((R - R_hat) ** 2).sum(0))
    return total


def wrapped(difference, is_angle):
    """Angle differences taken to (-pi, pi]; displacements as they are."""
    return np.where(is_angle, np.angle(np.exp(1j * difference)), difference)


#: more mechanisms for the model alone: every joint kind (all_joints), a delta's
#: parallelograms, a slider-crank, a 6R6P chain; motor amplitudes [rad or m]
MORE = {"all_joints": 0.05, "delta": 0.1, "slider_crank": 1.0, "chain_6r6p": 0.3}


@pytest.mark.parametrize("name", list(CASES) + list(MORE))
def test_tree_model_poses_bodies_and_frames_as_looprig_fk(name):
    mechanism = build(name)
    if name in CASES:
        objective, amplitude = CASES[name]
    else:
        objective, amplitude = FrameObjective(mechanism.frames[0].name, 1.0, 1.0), MORE[name]
    model = ReferenceModel(mechanism, [objective])
    readout = ActuatorReadout(mechanism)
    rng = np.random.default_rng(22)
    for _ in range(4):
        motors = rng.uniform(-amplitude, amplitude, len(readout.names))
        state = solve_fk(mechanism, motors).state
        poses = model.poses(model.assemble(motors))
        assert np.abs(poses["closure"]).max(initial=0.0) < 1e-12
        np.testing.assert_allclose(poses["body_positions"][0], state[:, :3], rtol=0, atol=1e-9)
        np.testing.assert_allclose(
            poses["body_rotations"][0], quat_to_matrix(state[:, 3:]), rtol=0, atol=1e-9
        )
        p, R = frame_pose(mechanism, state, objective.frame)
        np.testing.assert_allclose(poses["positions"][0, 0], p, rtol=0, atol=1e-9)
        np.testing.assert_allclose(poses["rotations"][0, 0], R, rtol=0, atol=1e-9)
        # the motors read back, from looprig's state and from the model's bodies alike
        ours = np.concatenate(
            [poses["body_positions"][0], quat_from_matrix(poses["body_rotations"][0])], axis=-1
        )
        for read in (readout.read(state), readout.read(ours)):
            assert np.abs(wrapped(read - motors, readout.is_angle)).max() < 1e-9


def with_reversed_joints(mechanism, names):
    """The mechanism with the joints ``names`` declared the other way round (parent and
    child swapped; a universal joint's two axes swapped too, as each belongs to one side)."""
    joints = []
    for j in mechanism.joints:
        if j.name in names:
            axes = (j.secondary_axis, j.axis) if j.kind == JointKind.UNIVERSAL else (j.axis, j.secondary_axis)
            j = Joint(j.name, j.kind, j.child, j.parent, j.anchor, *axes, actuator=j.actuator)
        joints.append(j)
    return Mechanism(mechanism.bodies, joints, mechanism.frames, mechanism.name, mechanism.couplings)


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("boxer", ["shoulder_roll", "elbow"]),  # actuated joints walked from child to parent
        ("fourbar", ["coupler_joint"]),
        ("stewart", ["leg1_base", "leg1", "leg1_top", "leg2_top"]),  # tree and loop joints
    ],
)
def test_joints_walked_from_child_to_parent(name, names):
    """The tree walks these joints against their declaration (inverse screws, negated
    coordinates): bodies, frames and motors still agree with looprig's FK."""
    mechanism = with_reversed_joints(build(name), names)
    objective, amplitude = CASES[name]
    model = ReferenceModel(mechanism, [objective])
    walked = {t.joint.name for t in model.tree if t.reversed}
    assert walked and walked <= set(names)
    readout = ActuatorReadout(mechanism)
    rng = np.random.default_rng(7)
    for _ in range(3):
        motors = rng.uniform(-amplitude, amplitude, len(readout.names))
        state = solve_fk(mechanism, motors).state
        poses = model.poses(model.assemble(motors))
        np.testing.assert_allclose(poses["body_positions"][0], state[:, :3], rtol=0, atol=1e-9)
        np.testing.assert_allclose(
            poses["body_rotations"][0], quat_to_matrix(state[:, 3:]), rtol=0, atol=1e-9
        )
        assert np.abs(wrapped(readout.read(state) - motors, readout.is_angle)).max() < 1e-9


@pytest.mark.parametrize("name", list(CASES))
def test_unlimited_clip_of_known_motors_is_solved_exactly(name):
    mechanism = build(name)
    objective, amplitude = CASES[name]
    A, F, rate = len(mechanism.actuated_joints), 12, 30.0
    t = np.arange(F) / rate
    truth = amplitude * np.sin(2 * np.pi * 0.7 * t[:, None] + np.arange(A))
    positions, rotations = targets_of(mechanism, objective, looprig_curve(mechanism, truth))
    start = truth + np.random.default_rng(5).normal(scale=0.1 * amplitude, size=truth.shape)
    none = np.full(A, np.inf)
    solution = solve_reference(
        mechanism, [objective], positions, rotations, rate, start,
        lower=-none, upper=none, velocity=none, acceleration=none,
    )  # fmt: skip
    assert solution.success, solution.status
    assert solution.objective < 1e-20
    assert solution.closure_residual < 1e-10
    readout = ActuatorReadout(mechanism)
    assert np.abs(wrapped(solution.motors - truth, readout.is_angle)).max() < 1e-8
    np.testing.assert_allclose(solution.positions, positions, rtol=0, atol=1e-10)
    tracked = np.array(objective.orientation_weight) > 0  # the frame axes whose directions are tracked
    np.testing.assert_allclose(solution.rotations[..., tracked], rotations[..., tracked], rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_binding_velocity_limit_holds_every_limit(name):
    """Known curves about twice as fast as the motors' declared speed (the Boxer's 3.14
    rad/s, the crank's 6 rad/s, the legs' 0.5 m/s): the optimum under the declared
    limits moves every motor within its range, speed and acceleration to 1e-12, runs
    at least one motor at its speed or acceleration limit, misses the targets
    (objective > 0, and the objective is the tracking cost of the returned motors
    under looprig's FK), and is no worse than holding the first frame's pose still."""
    mechanism = build(name)
    objective, amplitude = CASES[name]
    actuators = [j.actuator for j in mechanism.actuated_joints]
    A, F, rate = len(actuators), 25, 50.0
    speed = np.array([a.velocity_limit for a in actuators])
    frequency = 2.0 * speed.min() / (2 * np.pi * amplitude)  # peak speed 2x the slowest motor's limit
    t = np.arange(F) / rate
    truth = amplitude * np.sin(2 * np.pi * frequency * t[:, None] + np.arange(A))
    positions, rotations = targets_of(mechanism, objective, looprig_curve(mechanism, truth))
    solution = solve_reference(mechanism, [objective], positions, rotations, rate, np.zeros((F, A)))
    assert solution.success, solution.status
    assert solution.closure_residual < 1e-10
    m = solution.motors
    lower, upper = np.array([a.lower for a in actuators]), np.array([a.upper for a in actuators])
    acceleration = np.array([a.acceleration_limit for a in actuators])
    # IPOPT keeps its iterates strictly inside (bound_relax_factor 0): held to round-off
    assert np.all(m >= lower - 1e-12) and np.all(m <= upper + 1e-12)
    velocity = np.abs(np.diff(m, axis=0))
    assert np.all(velocity <= speed / rate + 1e-12)
    assert np.all(np.abs(np.diff(m, 2, axis=0)) <= acceleration / rate**2 + 1e-12)
    # a speed or acceleration row binds (interior differences, or the ends as read)
    ends_v = np.abs([-1.5 * m[0] + 2 * m[1] - 0.5 * m[2], 0.5 * m[-3] - 2 * m[-2] + 1.5 * m[-1]])
    ends_a = np.abs([2 * m[0] - 5 * m[1] + 4 * m[2] - m[3], -m[-4] + 4 * m[-3] - 5 * m[-2] + 2 * m[-1]])
    usage = max(
        (np.vstack([velocity, ends_v]) / (speed / rate)).max(),
        (np.vstack([np.abs(np.diff(m, 2, axis=0)), ends_a]) / (acceleration / rate**2)).max(),
    )
    assert usage >= 1 - 1e-6
    states = looprig_curve(mechanism, m)
    cost = tracking_cost(mechanism, objective, states, positions, rotations)
    assert solution.objective > 1e-6
    assert solution.objective == pytest.approx(cost, rel=1e-9)
    held = looprig_curve(mechanism, np.repeat(truth[:1], F, axis=0))
    assert solution.objective <= tracking_cost(mechanism, objective, held, positions, rotations)
