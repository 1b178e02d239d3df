"""Space-time retargeting under hard motor limits (core.spacetime): the optimum against
an independent IPOPT solve of the same problem (tests/nlp_reference.py), every limit
held, the motor rows' linearisation against finite differences, and a clip already
inside its limits left unchanged by retarget's limit_mode "hold"."""

import numpy as np
import pytest
from looprig.core import IKProblem
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import LimitCheckSettings, all_violations
from looprig.core.library import build
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.solvers.joint_space import JointScrews
from looprig.core.solvers.spacetime.linearization import linearize
from looprig.core.solvers.spacetime.records import SpaceTimeClip, SpaceTimeSettings
from looprig.core.solvers.spacetime.rows import excess, held_limits, limit_rows
from looprig.core.solvers.spacetime.solve import solve_spacetime
from looprig.core.solvers.spacetime.starts import coarse_stride, rewound_start
from looprig.core.solvers.step import build_step
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


def same_limits(problem) -> dict:
    """The limits the space-time solve holds (each a hair inside the declared ones,
    :attr:`SpaceTimeSettings.margin`), as IPOPT's keyword arguments: the same problem."""
    held = held_limits(problem.actuator_limits, SpaceTimeSettings().margin)
    return {
        "lower": held.lower,
        "upper": held.upper,
        "velocity": held.velocity,
        "acceleration": held.acceleration,
    }


@pytest.mark.parametrize("name", list(CASES))
def test_optimum_equals_ipopt(name):
    nlp = pytest.importorskip("nlp_reference")
    mechanism, objective, positions, rotations, states, truth, rate = too_fast_clip(name)
    problem = IKProblem(mechanism, [objective])
    solution = solve_spacetime(SpaceTimeClip(problem, Targets(positions, rotations), states, truth, rate))
    assert solution.converged
    for rows in limit_rows(problem.actuator_limits, len(truth), rate):
        assert excess(rows, solution.actuators).max() <= 1e-8, rows.quantity
    assert solution.residual.max() < 1e-9
    reference = min(
        (
            nlp.solve_reference(
                mechanism, [objective], positions, rotations, rate, start, **same_limits(problem)
            )
            for start in (truth, solution.actuators)
        ),
        key=lambda s: s.objective,
    )
    assert solution.objective == pytest.approx(reference.objective, rel=1e-4)


@pytest.mark.parametrize("name", ["boxer", "fourbar", "stewart"])
def test_steps_keep_the_robot_together_and_move_motors_linearly(name):
    """A step ``theta = q0 + W u`` along the tree (retract) keeps every tree joint as it
    was and closes the loops to second order (halving u quarters what is left), and the
    motors move by exactly ``b + B u`` (each is a tree joint)."""
    mechanism, objective, positions, rotations, states, truth, _ = too_fast_clip(name, frames=3)
    problem = IKProblem(mechanism, [objective])
    cs, tree = problem.constraints, problem.tree
    reference = Reference(states, quat_to_matrix(states[..., 3:]), truth)
    at = build_step(problem, problem.point(states, Targets(positions, rotations), reference))
    screws = JointScrews(tree, len(mechanism.bodies))
    lin = linearize(problem, screws, at, truth, None, 0.0)
    u = np.random.default_rng(1).normal(size=lin.g.shape)
    loops = []
    for eps in (1e-2, 5e-3):
        theta = lin.q0 + eps * (lin.W @ u[..., None])[..., 0]
        moved = tree.retract(states, at.point.R, theta)
        values = problem.readout.read(moved, previous=truth)
        np.testing.assert_allclose(values, lin.b + eps * (lin.B @ u[..., None])[..., 0], atol=1e-12)
        residual = cs.evaluate(moved, jacobian=False)[0]
        tree_rows = np.setdiff1d(np.arange(cs.n_rows), tree.loop_rows)
        assert np.abs(residual[:, tree_rows]).max() < 1e-12
        loops.append(np.abs(residual[:, tree.loop_rows]).max(initial=0.0))
    assert loops[1] <= 0.3 * loops[0] + 1e-14


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
    speed and acceleration limit holds on the samples (differences between frames) and
    as the limit checks read the curves, and the frames that miss their targets are
    reported as limited, not unreachable."""
    mechanism, objective, positions, rotations, _, _, rate = too_fast_clip("boxer", 40, 50.0, 2.0)
    samples = TrackSamples(np.arange(40) / rate, {"hand": positions[:, 0]}, {"hand": rotations[:, 0]})
    target = TargetSpec("hand", "hand", objective.position_weight, objective.orientation_weight)
    report = retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode="report"))
    held = retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode="hold"))
    limits = IKProblem(mechanism).actuator_limits
    families = limit_rows(limits, 40, rate)
    assert max(excess(rows, report.curves.values).max() for rows in families) > 0.5
    assert max(excess(rows, held.curves.values).max() for rows in families) <= 1e-8
    assert all_violations(report.curves) and not all_violations(held.curves)
    summary = held.summary()
    assert summary["limited_frames"] > 0 and summary["unreachable_frames"] == 0


def test_hold_changes_only_the_frames_around_a_broken_limit():
    """A four-bar crank that turns gently, with one quick flick of the crank in the
    middle (about three times its speed limit): limit_mode hold solves again a window around the
    flick only. Every frame outside it is the exact answer bit for bit, and every
    limit holds."""
    mechanism = build("fourbar")
    objective, _ = CASES["fourbar"]
    crank = mechanism.joint("crank_joint").actuator
    rate, frames = 100.0, 301
    t = np.arange(frames) / rate
    flick = 1.0 * np.exp(-(((t - 1.5) / 0.05) ** 2))  # peak speed about 17 rad/s
    truth = (0.3 * np.sin(0.5 * t) + flick)[:, None]
    assert np.abs(np.diff(truth[:, 0])).max() * rate > 2 * crank.velocity_limit
    positions, rotations = targets_of(mechanism, objective, looprig_curve(mechanism, truth))
    samples = TrackSamples(t, {"p": positions[:, 0]}, {"p": rotations[:, 0]})
    target = TargetSpec("p", objective.frame, objective.position_weight, objective.orientation_weight)
    exact, held = (
        retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode=mode))
        for mode in ("report", "hold")
    )
    changed = np.any(held.curves.values != exact.curves.values, axis=1)
    assert changed.any() and not all_violations(held.curves)
    assert not changed[:50].any() and not changed[-50:].any()  # 1 s of the clip untouched each side
    np.testing.assert_array_equal(held.states[~changed], exact.states[~changed])
    assert held.summary()["limit_solve"]["frames_solved_again"] < frames


def test_a_looped_clip_holds_every_limit_across_its_seam():
    """A four-bar crank swinging through three quarters of a slow period: played once it
    keeps every limit, but looped its last frame jumps back to its first (60 rad/s).
    With ``cyclic`` the hold solves the seam again: every limit holds across it (the
    check's cyclic differences; three loops in a row checked as one clip), and the middle
    of the clip, far from the seam, is the exact answer bit for bit."""
    mechanism = build("fourbar")
    objective, _ = CASES["fourbar"]
    rate, frames = 100.0, 301
    t = np.arange(frames) / rate
    truth = (0.6 * np.sin(2 * np.pi * t / 4.0))[:, None]
    positions, rotations = targets_of(mechanism, objective, looprig_curve(mechanism, truth))
    samples = TrackSamples(t, {"p": positions[:, 0]}, {"p": rotations[:, 0]})
    target = TargetSpec("p", objective.frame, objective.position_weight, objective.orientation_weight)
    once, exact, looped = (
        retarget(mechanism, samples, RetargetMapping((target,), rate=rate, limit_mode=mode, cyclic=cyclic))
        for mode, cyclic in (("hold", False), ("report", True), ("hold", True))
    )
    assert not all_violations(once.curves)
    np.testing.assert_array_equal(once.curves.values, exact.curves.values)
    assert any(a["violations"] for a in exact.summary()["actuators"])  # the seam, read looped
    assert not all_violations(looped.curves, LimitCheckSettings(cyclic=True))
    three = ActuatorCurves.from_mechanism(mechanism, np.tile(looped.curves.values, (3, 1)), rate)
    assert not all_violations(three)
    middle = slice(100, 200)
    np.testing.assert_array_equal(looped.curves.values[middle], exact.curves.values[middle])
    assert looped.summary()["limited_frames"] > 0


def random_clip(name, seed, frames=40, rate=50.0):
    """A seeded clip of known motor curves: a smooth random motion (two sines a motor,
    random phases) 1 to 3 times as fast as the slowest motor's limit, on the Boxer
    passing its shoulder's singular roll, or ending in a dead stop (every motor frozen
    from a random frame on); targets from forward kinematics."""
    rng = np.random.default_rng(seed)
    mechanism = build(name)
    objective, amplitude = CASES[name]
    actuators = [j.actuator for j in mechanism.actuated_joints]
    speed = np.array([a.velocity_limit for a in actuators])
    t = np.arange(frames) / rate
    factor = rng.uniform(1.0, 3.0)
    frequency = factor * speed.min() / (2 * np.pi * amplitude)
    phases = rng.uniform(0, 2 * np.pi, (2, len(actuators)))
    truth = (
        0.5
        * amplitude
        * (
            np.sin(2 * np.pi * frequency * t[:, None] + phases[0])
            + np.sin(np.pi * frequency * t[:, None] + phases[1])
        )
    )
    if name == "boxer" and seed % 2:  # the shoulder's roll through its singular pi / 2
        truth[:, 1] = np.linspace(0.3, np.pi - 0.3, frames)
    if seed % 3 == 0:  # a dead stop
        stop = rng.integers(frames // 3, 2 * frames // 3)
        truth[stop:] = truth[stop]
    states = looprig_curve(mechanism, truth)
    positions, rotations = targets_of(mechanism, objective, states)
    return mechanism, objective, positions, rotations, states, truth, rate


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", list(CASES))
def test_random_clips_hold_every_limit_at_the_optimum(name, seed):
    """Seeded clips (near the Boxer's singularity, dead stops, 1-3x too fast): every
    limit held, the tracking RMS within 10 % of IPOPT's best from the exact and the
    rewound starts (within 1e-4 where both find the same optimum, as they do here)."""
    nlp = pytest.importorskip("nlp_reference")
    mechanism, objective, positions, rotations, states, truth, rate = random_clip(name, seed)
    problem = IKProblem(mechanism, [objective])
    solution = solve_spacetime(SpaceTimeClip(problem, Targets(positions, rotations), states, truth, rate))
    assert solution.converged
    for rows in limit_rows(problem.actuator_limits, len(truth), rate):
        assert excess(rows, solution.actuators).max() <= 1e-8, rows.quantity
    starts = [truth, solution.actuators]  # IPOPT from the exact curve, from ours, from the rewound
    rewound = rewound_start(problem, states, truth, rate, problem.actuator_limits)
    if rewound is not None:
        starts.append(rewound[1])
    reference = min(
        (
            nlp.solve_reference(mechanism, [objective], positions, rotations, rate, s, **same_limits(problem))
            for s in starts
        ),
        key=lambda s: s.objective,
    )
    # within 10 %, or a micrometre where the limits hardly bind (both meet the targets)
    assert np.sqrt(solution.objective) <= 1.10 * np.sqrt(reference.objective) + 1e-6


@pytest.mark.parametrize(("name", "seed"), [("boxer", 1), ("fourbar", 0), ("stewart", 2)])
def test_a_long_clip_started_from_its_coarse_answer_finds_the_same_optimum(name, seed):
    """A long clip at a high rate is first solved on every 4th frame (each start), then
    as a whole from that answer: every limit held and the same optimum as the whole clip
    solved from its exact answer directly, or better (the Boxer's passes its singular
    roll, the four-bar's stops dead)."""
    mechanism, objective, positions, rotations, states, truth, rate = random_clip(name, seed, 320, 400.0)
    problem = IKProblem(mechanism, [objective])
    targets = Targets(positions, rotations)
    assert coarse_stride(len(truth), rate, SpaceTimeSettings().coarse_rate) == 4
    clip = SpaceTimeClip(problem, targets, states, truth, rate)
    warm = solve_spacetime(clip)
    cold = solve_spacetime(clip, settings=SpaceTimeSettings(coarse_rate=np.inf))
    assert warm.converged and cold.converged
    for rows in limit_rows(problem.actuator_limits, len(truth), rate):
        assert excess(rows, warm.actuators).max() <= 1e-8, rows.quantity
    assert warm.start == cold.start
    assert warm.objective <= cold.objective * (1 + 1e-5) + 1e-10  # as good (here and there better)


def test_the_demo_dance_is_the_same_held_or_reported():
    """The bundled dance keeps every servo limit: held (the default) it is the exact
    answer, the same curves as limit_mode report."""
    import dataclasses

    from looprig.demo import demo_inputs

    mechanism, samples, mapping, _ = demo_inputs()
    assert mapping.limit_mode == "hold"
    held = retarget(mechanism, samples, mapping)
    reported = retarget(mechanism, samples, dataclasses.replace(mapping, limit_mode="report"))
    assert not all_violations(reported.curves)
    np.testing.assert_array_equal(held.curves.values, reported.curves.values)


@pytest.mark.parametrize("speed", [2.0, 3.0])
def test_the_demo_dance_played_faster_holds_every_servo_limit(speed):
    """The Dancer (two loops, eight servos for six degrees of freedom) on its dance
    played two and three times as fast at 100 Hz: the exact answer breaks the servos'
    limits; held, the solve converges (its steps open the loops to second order: the
    line search's second-order correction closes them again) and every limit holds on
    the curves."""
    import dataclasses

    from looprig.demo import demo_inputs

    mechanism, samples, mapping, _ = demo_inputs()
    samples = dataclasses.replace(samples, times=samples.times / speed)
    mapping = dataclasses.replace(mapping, rate=100.0)
    reported = retarget(mechanism, samples, dataclasses.replace(mapping, limit_mode="report"))
    assert all_violations(reported.curves)
    held = retarget(mechanism, samples, mapping)
    solve = held.summary()["limit_solve"]
    assert solve["converged"], solve
    assert not all_violations(held.curves)
    assert held.residual.max() <= 1e-9


@pytest.mark.parametrize("rate", [None, 100.0])
def test_the_demo_dance_played_in_a_loop_holds_every_servo_limit_across_its_seam(rate):
    """Issue 26: the bundled dance does not end where it starts, so looped (``cyclic``) its
    seam asks up to 46 rad/s of the Dancer's 3.14 rad/s servos at the demo's 600 Hz (7.7
    rad/s at 100 Hz). Held, the seam's window converges (it crawled at 1/256 steps for
    200 iterations while a loop multiplier of 1e3 seen once, at the start, kept weighing
    the loops' second-order gap in the line search's merit) and every limit holds on the
    loop's wrap-round differences; three loops in a row pass as one clip."""
    import dataclasses

    from looprig.demo import demo_inputs

    mechanism, samples, mapping, _ = demo_inputs()
    mapping = dataclasses.replace(mapping, cyclic=True, rate=rate or mapping.rate)
    looped = LimitCheckSettings(cyclic=True)
    reported = retarget(mechanism, samples, dataclasses.replace(mapping, limit_mode="report"))
    assert all_violations(reported.curves, looped)  # the seam
    held = retarget(mechanism, samples, mapping)
    solve = held.summary()["limit_solve"]
    assert solve is not None and solve["converged"], solve
    assert not all_violations(held.curves, looped)
    assert held.residual.max() <= 1e-9
    three = ActuatorCurves.from_mechanism(mechanism, np.tile(held.curves.values, (3, 1)), mapping.rate)
    assert not all_violations(three)
