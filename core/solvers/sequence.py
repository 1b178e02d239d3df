"""A clip's coarse frames solved in order, each from the one before: by the per-frame
solver (:func:`in_sequence`) or, kept in tree coordinates, by
:class:`~looprig.core.solvers.tree_frame.FrameNewton` (:func:`in_sequence_coordinates`);
:mod:`~looprig.core.solvers.clip` picks the frames and solves the rest from them.
Whether the targets determine the state (:func:`targets_determine`) decides how far
apart those frames may be and how each is reached.
"""

import itertools

import numpy as np

from ..maths.linalg import null_space
from ..maths.rotations import quat_to_matrix
from ..terms import Targets
from . import tree
from .ik import solve_ik
from .problem import IKProblem, IKTargets, dual_regularization
from .tree_forward import applies
from .tree_frame import FrameNewton


def in_sequence(problem: IKProblem, targets: Targets, frames: np.ndarray, first_state: np.ndarray):
    """States (K, n, 7) of ``frames`` (K,) of a clip solved in order by the per-frame
    solver, each warm-started from (and unwrapped against) the one before; frame 0 is
    ``first_state``."""
    known = np.empty((len(frames),) + first_state.shape)
    known[0] = state = first_state
    actuators = problem.readout.read(state)
    for i, f in enumerate(frames[1:], start=1):
        com = None if targets.com is None else targets.com[f]
        target = IKTargets(targets.positions[f], targets.rotations[f], com)
        result = solve_ik(problem, target, state, previous_actuators=actuators)
        known[i] = state = result.state
        actuators = result.actuators
    return known


def targets_determine(problem: IKProblem, state: np.ndarray, newton: FrameNewton | None = None) -> bool:
    """Whether the frame and CoM targets, the loops and the held motors of ``problem``
    determine the motors near ``state`` (n, 7): every direction the constraints allow
    that moves a motor moves a tracked target (a direction that moves neither, such as a
    rod's spin between two ball joints, decides nothing). Where the tree path poses the
    problem from coordinates, on the tree's rows (:meth:`FrameNewton.rows_at`, with
    ``newton`` if given: a few loop rows over the tree's coordinates instead of every
    joint's over the bodies' motions)."""
    if newton is None and tree.unsupported(problem) is None and applies(tree.kinematics(problem)):
        newton = FrameNewton(tree.kinematics(problem), problem.settings, 0.0)
    if newton is not None:
        coordinates = newton.forward.coordinates(*newton.model.to_frames(state[None]))
        return motors_decided(*newton.rows_at(tuple(x[..., 0] for x in coordinates)))
    return determine_on_bodies(problem, state)


def determine_on_bodies(problem: IKProblem, state: np.ndarray) -> bool:
    """:func:`targets_determine` on the constraints over the bodies' motions (any problem)."""
    cs = problem.constraints
    motors = problem.readout.jacobian(state, quat_to_matrix(state[:, 3:]), cs.column_of_body, cs.n_vars)
    held = [int(m) for t in problem.equality_terms[1:] for m in getattr(t, "motors", ())]
    positions, rotations = problem.frame_terms.poses(state[None])
    com = None if problem.com_term is None else problem.com_term.com(state[None])
    point = problem.point(state[None], Targets(positions, rotations, com), None)
    rows = [problem.frame_terms.residual(point)[1][0]]
    if problem.com_term is not None:
        rows.append(problem.com_term.residual(point)[1][0])
    return motors_decided(np.concatenate([cs.jacobian(state), motors[held]]), np.concatenate(rows), motors)


def motors_decided(constraints: np.ndarray, tasks: np.ndarray, motors: np.ndarray) -> bool:
    """Whether every motion that keeps the ``constraints`` (m_c, N) and moves the
    ``motors`` (A, N) moves the ``tasks`` (m_t, N) (Jacobians over the same N motions;
    singular values below 1e-9 of the largest, or of 1, count as zero)."""
    free = null_space(constraints, 1e-9, 1e-9)
    if not free.shape[1]:
        return True
    unseen = free @ null_space(tasks @ free, 1e-9)
    if not unseen.shape[1]:
        return True
    moved = motors @ unseen  # (A, k): how the directions no target sees move the motors
    return bool(np.abs(moved).max(initial=0.0) <= 1e-9 * max(np.abs(motors).max(initial=0.0), 1e-300))


def in_sequence_coordinates(problem, targets: Targets, frames: np.ndarray, first_state, settings):
    """:func:`in_sequence` in tree coordinates: ``frames`` (K,) of the clip solved in
    order by :class:`~looprig.core.solvers.tree_frame.FrameNewton`, each from the one
    before (:func:`_reached`), frame 0 being ``first_state`` (n, 7). Returns the
    coordinates (as :func:`~looprig.core.solvers.tree_newton.solve_coordinates` takes
    them, K frames), turns continuous along the sequence."""
    known = [x[0] for x in frames_in_order(problem, targets, frames, first_state, settings)]
    return tuple(np.stack(x, axis=-1) for x in zip(*known, strict=True))


def frames_in_order(problem, targets: Targets, frames: np.ndarray, first_state, settings, predict=False):
    """Yields, for each of ``frames`` (K,) in order, frame 0 being ``first_state`` (n, 7),
    its coordinates (one frame) and the iterations, convergence and loop residual [m]
    that reached it (0, True, 0 for frame 0): :func:`in_sequence_coordinates` one frame
    at a time, for a caller that reports progress or may cancel.

    ``predict``: where the targets determine the motors (each answer the same from any
    start on its branch), a frame next to the one before starts from the ones before
    carried on (:meth:`FrameNewton.carried_on`: to third order where that predicted the
    frame before best): a clip's consecutive frames then take 2 steps instead of 4, a
    dense clip's (Reachy Mini's at 600 Hz) 1."""
    model = tree.kinematics(problem)
    newton = FrameNewton(model, settings, dual_regularization(problem, settings))
    determined = targets_determine(problem, first_state, newton)
    current = tuple(x[..., 0] for x in newton.forward.coordinates(*model.to_frames(first_state[None])))
    weights = newton.metric(current) if determined else None  # deciding nothing: one for all frames
    yield current, 0, True, 0.0
    steps = []  # the steps between the consecutive frames just solved, oldest first
    for before, f in itertools.pairwise(frames):
        neighbours = predict and determined and before + 1 == f
        start, carried = newton.carried_on(current, steps) if neighbours and steps else (current, 0.0)
        reached, *solve = _reached(problem, newton, targets, start, before, f, determined, weights)
        if neighbours:  # the step between the two frames: the prediction's and Newton's, or measured
            step = newton.step_between(current, reached) if newton.taken is None else carried + newton.taken
            steps = [*steps[-3:], step]
        else:
            steps = []
        current = reached
        yield current, *solve


def _reached(problem, newton: FrameNewton, targets: Targets, current, before, f, determined, weights=None):
    """Frame ``f``'s coordinates (one frame) solved from frame ``before``'s, ``current``,
    with the iterations, convergence and loop residual [m] of the solve; ``weights``:
    the metric to step in where the targets determine the motors (:meth:`FrameNewton.solve`).

    Where the targets determine the state the answer is the same from any start on its
    branch, and the steps are long (the four-bar's crank turns up to a radian between
    sequence frames): Newton's method with a line search. Where they do not, the path
    decides the redundant answers: Newton's method, its first step aimed at the targets
    of the clip's frame halfway between them (a midpoint rule for the path that
    minimal-motion steps trace: the answers stay as near the frame-by-frame solver's as
    a sequence twice as dense, ``tests/test_tree_frame.py``), or, where it stops, through
    that halfway frame solved first. Between neighbours, Newton's method alone; where it
    or the line search does not reach the answer, the per-frame solver from the state
    before (read back near it)."""
    position, rotation = targets.positions[f], targets.rotations[f]
    halfway = (before + f) // 2
    if determined:
        search = halfway > before
        reached, iterations, converged, residual = newton.solve(
            current, position, rotation, None, search, weights
        )
    else:
        via = (targets.positions[halfway], targets.rotations[halfway]) if halfway > before else None
        reached, iterations, converged, residual = newton.solve(current, position, rotation, via)
    if converged:
        return reached, iterations, converged, residual
    if halfway > before and not determined:
        middle, first, _, _ = _reached(problem, newton, targets, current, before, halfway, determined)
        reached, then, done, residual = _reached(problem, newton, targets, middle, halfway, f, determined)
        return reached, iterations + first + then, done, residual
    model, fw = newton.model, newton.forward
    state = fw.posed(tuple(x[..., None] for x in current))[0]
    result = solve_ik(problem, IKTargets(position, rotation), state)
    read = fw.coordinates(*model.to_frames(result.state[None]), near=current[0][:, None])
    return (
        tuple(x[..., 0] for x in read),
        iterations + result.iterations,
        result.converged,
        result.residual,
    )
