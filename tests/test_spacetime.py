"""Space-time retargeting under hard motor limits (core.spacetime): the optimum against
an independent IPOPT solve of the same problem (tests/nlp_reference.py), every limit
held, the motor rows' linearisation against finite differences, and a clip already
inside its limits left unchanged by retarget's limit_mode "hold"."""

import numpy as np
import pytest
from looprig.core import IKProblem
from looprig.core.curves import all_violations
from looprig.core.kkt import ReducedKKT
from looprig.core.library import build
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.rotations import quat_to_matrix, retract
from looprig.core.spacetime import _motions, excess, limit_rows, solve_spacetime
from looprig.core.step import build_step
from looprig.core.terms import Reference, Targets
from test_nlp_reference import CASES, looprig_curve, targets_of


def too_fast_clip(name, frames=25, rate=50.0, speed_factor=2.0):
    """Targets from known motor curves ``speed_factor`` times as fast as the slowest
    motor's limit (as tests/test_nlp_reference.py), their exact states and motors."""
    mechanism = build(name)
    objective, amplitude = CASES[name]
    actuators = [j.actuator for j in mechanism.actuated_joints]
    speed = np.array([a.velocity_limit for a in actuators])
    frequency = speed_factor * speed.min() / (2 * np.pi * amplitude)
    t = np.arange(frames) / rate
    truth = amplitude * np.sin(2 * np.pi * frequency * t[:, None] + np.arange(len(actuators)))
    states = looprig_curve(mechanism, truth)
    positions, rotations = targets_of(mechanism, objective, states)
    return mechanism, objective, positions, rotations, states, truth, rate


@pytest.mark.parametrize("name", list(CASES))
def test_optimum_equals_ipopt(name):
    nlp = pytest.importorskip("nlp_reference")
    mechanism, objective, positions, rotations, states, truth, rate = too_fast_clip(name)
    problem = IKProblem(mechanism, [objective])
    solution = solve_spacetime(problem, Targets(positions, rotations), states, truth, rate)
    assert solution.converged
    for rows in limit_rows(problem.actuator_limits, len(truth), rate):
        assert excess(rows, solution.actuators).max() <= 1e-8, rows.quantity
    assert solution.residual.max() < 1e-9
    reference = min(
        (
            nlp.solve_reference(mechanism, [objective], positions, rotations, rate, start)
            for start in (truth, solution.actuators)
        ),
        key=lambda s: s.objective,
    )
    assert solution.objective == pytest.approx(reference.objective, rel=1e-4)


@pytest.mark.parametrize("name", ["boxer", "fourbar", "stewart"])
def test_motor_rows_are_the_first_order_change(name):
    """Moving a frame by ``delta + T u`` changes its motors by ``P (delta + T u)`` up to
    second order: halving u quarters the error (the QP's rows are right)."""
    mechanism, objective, positions, rotations, states, truth, _ = too_fast_clip(name, frames=3)
    problem = IKProblem(mechanism, [objective])
    cs = problem.constraints
    reference = Reference(states, quat_to_matrix(states[..., 3:]), truth)
    at = build_step(problem, problem.point(states, Targets(positions, rotations), reference))
    kkt = ReducedKKT(problem.tree, at.point.R, at.model, at.row_blocks, at.loop_jacobian, np.zeros(3), 0.0)
    T, delta = _motions(kkt, at.constraint)
    P = problem.readout.jacobian(at.point.state, at.point.R, cs.column_of_body, cs.n_vars)
    u = np.random.default_rng(1).normal(size=T.shape[::2])
    errors = []
    for eps in (1e-3, 5e-4):
        d = delta + eps * (T @ u[..., None])[..., 0]
        moved = problem.readout.read(retract(states, cs.tangent_to_bodies(d)), previous=truth)
        errors.append(np.abs(moved - truth - (P @ d[..., None])[..., 0]).max())
        # the step keeps the joints together to first order too
        residual = cs.evaluate(retract(states, cs.tangent_to_bodies(d)), jacobian=False)[0]
        assert np.abs(residual).max() < 10 * eps**2
    assert errors[1] < 0.3 * errors[0]


def test_hold_leaves_a_clip_inside_its_limits_unchanged():
    """The Boxer at a third of its motors' speed: limit_mode hold gives the exact answer,
    the same curves as report, and no frame is limited."""
    mechanism, objective, positions, rotations, _, _, rate = too_fast_clip("boxer", 40, 50.0, 0.3)
    samples = TrackSamples(np.arange(40) / rate, {"hand": positions[:, 0]}, {"hand": rotations[:, 0]})
    target = TargetSpec("hand", "hand", objective.position_weight, objective.orientation_weight)
    results = {
        mode: retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode=mode))
        for mode in ("report", "hold")
    }
    assert not all_violations(results["report"].curves)
    np.testing.assert_array_equal(results["hold"].curves.values, results["report"].curves.values)
    assert results["hold"].summary()["limited_frames"] == 0


def test_hold_keeps_every_limit_on_the_samples():
    """The Boxer at twice its motors' speed, retargeted with limit_mode hold: every range,
    speed and acceleration limit holds on the samples (differences between frames), and
    the frames that miss their targets are reported as limited, not unreachable."""
    mechanism, objective, positions, rotations, _, _, rate = too_fast_clip("boxer", 40, 50.0, 2.0)
    samples = TrackSamples(np.arange(40) / rate, {"hand": positions[:, 0]}, {"hand": rotations[:, 0]})
    target = TargetSpec("hand", "hand", objective.position_weight, objective.orientation_weight)
    report = retarget(mechanism, samples, RetargetMapping((target,), rate=rate))
    held = retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode="hold"))
    limits = IKProblem(mechanism).actuator_limits
    families = limit_rows(limits, 40, rate)
    assert max(excess(rows, report.curves.values).max() for rows in families) > 0.5
    assert max(excess(rows, held.curves.values).max() for rows in families) <= 1e-8
    summary = held.summary()
    assert summary["limited_frames"] > 0 and summary["unreachable_frames"] == 0
