"""Whole-clip IK: every frame of a clip solved together, vectorised over frames.

The per-frame solver (:func:`~looprig.core.solvers.ik.solve_ik`) pays numpy's per-call
overhead once per frame and iteration; here it is paid once per iteration for all
frames. Frames are independent given their starts when no term compares a frame with
the previous one (the default: the minimal-motion metric acts around each frame's own
iterate). The starts come from a coarse pass (:func:`coarse_states`): the per-frame
solver on a sparse sequence of frames, warm-started, which resolves branches and
redundancy by minimal motion along the clip (in tree coordinates, the sequence by
:mod:`~looprig.core.solvers.tree_frame`), then denser frames solved together from
their interpolation, down to every frame. Where the problem has a unique solution the
clip converges to the per-frame answer; where it is redundant it picks, like the
per-frame solver, the solution nearest to its start in the minimal-motion metric (the
interpolated coarse path instead of the previous fine frame): at an exact singularity
this gives a smoother curve than the per-frame solver, whose answer there kinks towards
the previous frame. Problems with terms that couple consecutive frames (velocity
barriers, actuator speed and acceleration terms) are solved frame by frame by the caller.

Where the tree path applies (:func:`~looprig.core.solvers.tree.unsupported`), the frames
are solved by Newton's method in the spanning tree's coordinates
(:mod:`~looprig.core.solvers.tree_newton`), and where its joints are posed from
coordinates (:func:`in_coordinates`) the whole coarse-to-fine pass keeps them; every
other problem, and the frames the tree path leaves, take the maximal-coordinate SQP
(:mod:`~looprig.core.solvers.clip_block`).
"""

import dataclasses

import numpy as np

from ..maths.rotations import (
    quat_conjugate,
    quat_from_matrix,
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    rotvec_from_quat,
)
from ..terms import ActuatorBarrier, Reference, Targets, VelocityBarrier
from . import tree, tree_newton
from .clip_block import ClipSolution, solve_block, start_reference
from .ik import solve_ik
from .problem import IKProblem, IKSettings, IKTargets, dual_regularization
from .sequence import in_sequence, in_sequence_coordinates, targets_determine
from .tree_forward import applies, forward


def couples_frames(problem: IKProblem) -> bool:
    """Whether a term of ``problem`` compares a frame with the previous one."""
    reg = problem.regularization
    coupled = (VelocityBarrier, ActuatorBarrier)
    paper_state = reg.state_mode == "paper" and reg.state_weight > 0
    return paper_state or any(isinstance(t, coupled) for t in problem.objective_terms)


def couplings_vanish_inside(problem: IKProblem) -> bool:
    """Whether every term of ``problem`` that compares a frame with the previous one
    is a barrier that vanishes (value, gradient and curvature) while its bounds hold:
    the body velocity barrier, the actuator barrier without its acceleration cost.
    A frame solved without them whose answer keeps them all inside is then an answer
    with them too."""
    reg = problem.regularization
    paper_state = reg.state_mode == "paper" and reg.state_weight > 0
    return not paper_state and reg.acceleration_weight == 0


def coupling_values(problem: IKProblem, states, targets: Targets, previous, previous_actuators):
    """The terms of ``problem`` that compare a frame with the previous one, summed (B,),
    at states (B, n, 7) against the previous frames' states (B, n, 7) and motor values
    (B, A) [rad | m]; no previous motor velocities (no acceleration cost)."""
    R, R_previous = quat_to_matrix(states[..., 3:]), quat_to_matrix(previous[..., 3:])
    point = problem.point(states, targets, Reference(previous, R_previous, previous_actuators, None), R=R)
    total = np.zeros(len(states))
    for term in problem.objective_terms:
        if isinstance(term, (VelocityBarrier, ActuatorBarrier)):
            total += term.linearize(point, derivatives=False).value
    return total


#: Frames whose linear algebra is done together: blocks of a few hundred frames keep the
#: stacked arrays in cache (measured: 42-57 us a frame and iteration at 128-300 frames
#: against 62-85 at 1200, the 12-joint chain and the two legs of the peer benchmark).
CLIP_BLOCK = 256


def interpolate_states(times_known: np.ndarray, states_known: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Body states (T, n, 7) at ``times`` from known states (K, n, 7) at increasing
    ``times_known``: the cubic through the four nearest known frames (Lagrange, at
    their times; fewer when fewer are known), on positions and on each orientation's
    rotation vector relative to the known frame that starts the interval (shortest
    arcs). Its error shrinks with the fourth power of the spacing (linear: the square),
    so a Newton step from it lands within the step tolerance."""
    index, window, weights = _cubic_weights(times_known, times)
    known = states_known[window]  # (K-1, w, n, 7)
    out = np.empty((len(times),) + states_known.shape[1:])
    out[..., :3] = np.einsum("tw,twna->tna", weights, known[index, ..., :3])
    # the window's orientations relative to the interval's first frame, once per interval
    anchor = states_known[:-1, None, :, 3:]  # (K-1, 1, n, 4)
    relative = quat_multiply(quat_conjugate(anchor), known[..., 3:])
    relative = rotvec_from_quat(np.where(relative[..., :1] < 0.0, -relative, relative))
    turn = np.einsum("tw,twna->tna", weights, relative[index])
    out[..., 3:] = quat_normalize(quat_multiply(anchor[index, 0], quat_from_rotvec(turn)))
    return out


def _cubic_weights(times_known: np.ndarray, times: np.ndarray):
    """For values known at increasing ``times_known`` (K,), the cubic through the four
    nearest (fewer when fewer are known) at each of ``times`` (T,): each time's interval
    (T,), each interval's known frames (K-1, w) and the Lagrange weights (T, w)."""
    K = len(times_known)
    index = np.clip(np.searchsorted(times_known, times, side="right") - 1, 0, K - 2)  # (T,) interval
    # per interval i (from known frame i): the known frames of its cubic (K-1, w)
    window = np.clip(np.arange(K - 1) - 1, 0, max(K - 4, 0))[:, None] + np.arange(min(K, 4))
    t = times_known[window][index]  # (T, w)
    # Lagrange basis: prod_(m != j) (time - t_m) / (t_j - t_m)
    weights = np.ones(t.shape)
    for j in range(t.shape[1]):
        for m in range(t.shape[1]):
            if m != j:
                weights[:, j] *= (times - t[:, m]) / (t[:, j] - t[:, m])
    return index, window, weights


def interpolate_coordinates(times_known: np.ndarray, known, times: np.ndarray):
    """Tree coordinates at ``times`` from coordinates known at increasing ``times_known``
    (K,): ``known`` = (q (D, K), rotations (r + s, 3, 3, K), root positions (r, 3, K)), as
    :func:`~looprig.core.solvers.tree_newton.solve_coordinates` takes them. The joint coordinates by the
    cubic of :func:`interpolate_states`, the floating roots and ball joints' turns as bodies
    there; the known frames exactly. Poses from these are assembled whatever the spacing."""
    q, rotations, positions = known
    if len(times_known) == 1:
        return tuple(np.repeat(x, len(times), axis=-1) for x in known)
    index, window, weights = _cubic_weights(times_known, times)
    out_q = np.einsum("tw,dtw->dt", weights, q[:, window[index]])
    if not len(rotations):
        none = (len(times),)
        return out_q, np.zeros(rotations.shape[:-1] + none), np.zeros(positions.shape[:-1] + none)
    r, K = len(positions), len(times_known)
    bodies = np.concatenate(
        [
            np.concatenate([positions, np.zeros((len(rotations) - r, 3, K))]).transpose(2, 0, 1),
            quat_from_matrix(np.ascontiguousarray(rotations.transpose(3, 0, 2, 1))),
        ],
        -1,
    )
    states = interpolate_states(times_known, bodies, times)  # (T, r + s, 7)
    out_rotations = np.ascontiguousarray(quat_to_matrix(states[..., 3:]).transpose(1, 3, 2, 0))
    return out_q, out_rotations, np.ascontiguousarray(states[:, :r, :3].transpose(1, 2, 0))


def solve_clip(
    problem: IKProblem,
    targets: Targets,
    starts: np.ndarray,
    reference: Reference | None = None,
    settings: IKSettings | None = None,
) -> ClipSolution:
    """Solve F frames at once from ``starts`` (F, n, 7).

    targets: batched to F; reference: what each frame's terms compare with
    (read-off unwrapping; by default the starts; see :func:`couples_frames` for
    terms that need the previous frame's answer).

    Without a ``reference``, when :func:`looprig.core.solvers.tree.unsupported` finds nothing
    (fixed, revolute, prismatic, cylindrical, spherical joints and floating bases; frame
    targets and the minimal-motion metric; loops, couplings and held motors on
    one-coordinate tree joints; no direction that no motor, target or loop sees), all
    frames are first solved at once by Newton's method in the spanning tree's joint
    coordinates (:mod:`~looprig.core.solvers.tree`: the same step in another basis, the same
    answers; ``docs/solver.md``). The frames it leaves unconverged, and every frame of
    any other problem, are solved in blocks of :data:`CLIP_BLOCK` by the SQP of
    :func:`~looprig.core.solvers.ik.solve_ik` — the same KKT step, step cap, l1 merit,
    gain-ratio damping and chord-step convergence test — per frame on masks, without
    the second-order correction (frames that end off the manifold are restored by
    :func:`~looprig.core.solvers.fk.solve_constraints`), from their starts.
    """
    settings = settings or problem.settings
    frames = np.arange(len(starts))
    fast = None
    tree_path = reference is None and tree.unsupported(problem) is None
    reference = start_reference(problem, starts) if reference is None else reference
    if tree_path:
        fast = _solve_in_tree_coordinates(problem, targets, starts, settings)
        frames = np.flatnonzero(~fast.converged)
    blocks = np.array_split(frames, max(1, -(-len(frames) // CLIP_BLOCK))) if len(frames) else []
    parts = [
        solve_block(problem, targets.take(block), starts[block], reference.take(block), settings)
        for block in blocks
    ]
    names = [f.name for f in dataclasses.fields(ClipSolution)]
    if fast is None:
        return ClipSolution(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in names})
    for block, part in zip(blocks, parts, strict=True):  # frames the tree path left, solved again
        for name in names:
            getattr(fast, name)[block] = getattr(part, name)
    return fast


def _solve_in_tree_coordinates(
    problem: IKProblem, targets: Targets, starts: np.ndarray, settings: IKSettings
) -> ClipSolution:
    """:func:`solve_clip` by Newton's method in the spanning tree's joint coordinates
    (:mod:`~looprig.core.solvers.tree`), all frames at once, the starts being the minimal-motion
    metric's reference (:func:`solve_clip`'s default); ``converged`` marks the frames it
    settled (loop rows at the tolerance, the last step below ``step_tolerance``)."""
    model = tree.kinematics(problem)
    compliance = dual_regularization(problem, settings)
    return ClipSolution(
        *tree_newton.solve(model, targets.positions, targets.rotations, starts, settings, compliance)
    )


#: Clips with more coarse frames than this solve their coarse frames as a clip of their own,
#: if the targets move little enough between the frames that are then solved in sequence
#: (MAX_SEQUENTIAL_MOTION, in mean joint distances L or radians: about 17 degrees): the
#: per-frame solver then starts each of those from the one before, on the same branch.
#: The sparsest such sequence is taken (every stride-th coarse frame, or every second,
#: fourth ... stride-th of those while at least SEQUENTIAL_COARSE / 8 stay and the targets
#: still move little enough, else every half of the stride, down to every second). At
#: animation rates (24-60 fps) a long clip's frames 64 apart are seconds apart and move
#: more, so its every 8th frame is solved in sequence.
SEQUENTIAL_COARSE = 24
MAX_SEQUENTIAL_MOTION = 0.3
#: The same where the targets and loops determine the state near frame 0
#: (:func:`~looprig.core.solvers.sequence.targets_determine`): the sequence then only
#: keeps each frame on the branch of the one before, and no redundancy is resolved
#: along it (about 34 degrees); and for every sequence in tree coordinates
#: (:mod:`~looprig.core.solvers.sequence`), whose redundant steps go through the
#: halfway frame: it resolves redundancy as near the frame-by-frame path at this
#: spacing as the per-frame solver does at MAX_SEQUENTIAL_MOTION.
MAX_DETERMINED_MOTION = 0.6


def coarse_states(
    problem: IKProblem,
    times: np.ndarray,
    targets: Targets,
    first_state: np.ndarray,
    stride: int = 8,
    settings: IKSettings | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every ``stride``-th frame of a clip (and the last) solved, frame 0 being
    ``first_state``: by the per-frame solver, warm-started in order, or, when there
    are more than :data:`SEQUENTIAL_COARSE` of them and the targets move little
    between every ``sub``-th of them (:data:`MAX_SEQUENTIAL_MOTION`; ``sub`` the
    largest of stride, stride / 2, ..., 2 for which they do), as a clip of their own
    (recursively with stride ``sub``, so only those are solved in sequence). Returns
    their indices (K,) and states (K, n, 7). Problems kept in tree coordinates
    (:func:`in_coordinates`) take the same steps there (:func:`coarse_coordinates`)."""
    if in_coordinates(problem):
        fw = forward(tree.kinematics(problem))
        coarse, known = coarse_coordinates(problem, times, targets, first_state, stride, settings)
        states = fw.posed(known)
        states[0] = first_state
        return coarse, states
    coarse, sub = _coarse_frames(problem, targets, len(times), stride, first_state)
    if sub > 1:
        sub_times, sub_targets = times[coarse], targets.take(coarse)
        starts = clip_starts(
            sub_times, *coarse_states(problem, sub_times, sub_targets, first_state, sub, settings)
        )
        return coarse, solve_clip(problem, sub_targets, starts, settings=settings).states
    return coarse, in_sequence(problem, targets, coarse, first_state)


def _coarse_frames(problem: IKProblem, targets: Targets, frames: int, stride: int, first_state, guided=False):
    """Every ``stride``-th of a clip's ``frames`` and the last (K,), and the stride
    among those that :func:`coarse_states` solves in sequence (1: all of them), frame 0
    being ``first_state`` (n, 7); ``guided``: the sequence steps through halfway frames
    (:func:`~looprig.core.solvers.sequence.in_sequence_coordinates`)."""
    coarse = _every(np.arange(frames), stride)
    if len(coarse) <= SEQUENTIAL_COARSE:
        return coarse, 1
    sparse = guided or targets_determine(problem, first_state)
    limit = MAX_DETERMINED_MOTION if sparse else MAX_SEQUENTIAL_MOTION
    sub = stride
    while sub > 1 and target_motion(problem, targets, _every(coarse, sub)) > limit:
        sub //= 2
    while (
        sub == stride * (sub // stride)
        and len(coarse) >= 2 * sub * SEQUENTIAL_COARSE // 8
        and target_motion(problem, targets, _every(coarse, 2 * sub)) <= limit
    ):
        sub *= 2
    return coarse, sub


def _every(frames: np.ndarray, stride: int) -> np.ndarray:
    """Every ``stride``-th of ``frames`` and the last."""
    return np.unique(np.r_[frames[::stride], frames[-1]])


def target_motion(
    problem: IKProblem, targets: Targets, frames: np.ndarray, start: int | None = None
) -> float:
    """The largest move of a tracked frame (position / L, orientation [rad]) or the CoM
    (/ L) between consecutive ``frames`` of the clip, or from frame ``start`` to each."""
    L = problem.constraints.length_scale
    a, b = (frames[:-1], frames[1:]) if start is None else (np.full(len(frames), start), frames)
    moves = [np.linalg.norm(targets.positions[b] - targets.positions[a], axis=-1).max(initial=0.0) / L]
    relative = np.einsum("fkab,fkac->fkbc", targets.rotations[a], targets.rotations[b])  # R_a^T R_b
    cosine = (np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0
    moves.append(np.arccos(np.clip(cosine, -1.0, 1.0)).max(initial=0.0))
    if targets.com is not None:
        moves.append(np.linalg.norm(targets.com[b] - targets.com[a], axis=-1).max(initial=0.0) / L)
    return float(max(moves))


def clip_starts(times: np.ndarray, coarse: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Starts (F, n, 7) for every frame of a clip at ``times`` (F,) from the solved
    frames ``coarse`` (K,) and their states ``known`` (K, n, 7): those exact, the others
    interpolated (:func:`interpolate_states`)."""
    starts = interpolate_states(times[coarse], known, times) if len(coarse) > 1 else known[[0] * len(times)]
    starts[coarse] = known
    return starts


def coarse_then_clip(
    problem: IKProblem,
    times: np.ndarray,
    targets: Targets,
    first_state: np.ndarray,
    stride: int = 8,
    settings: IKSettings | None = None,
) -> ClipSolution:
    """A clip whose frame 0 is solved (``first_state``): its coarse frames
    (:func:`coarse_states`), then every frame from :func:`clip_starts` by
    :func:`solve_clip`. Returns states for all F frames (frame 0 = ``first_state``).

    Where the tree path applies and poses from coordinates
    (:func:`in_coordinates`), every stage keeps the tree's coordinates instead
    (:func:`coarse_coordinates`, :func:`interpolate_coordinates`,
    :func:`~looprig.core.solvers.tree_newton.solve_coordinates`): the same stages, starts interpolated
    joint by joint (assembled), body states made once at the end."""
    if in_coordinates(problem):
        return _coarse_then_clip_in_coordinates(problem, times, targets, first_state, stride, settings)
    starts = clip_starts(times, *coarse_states(problem, times, targets, first_state, stride, settings))
    return solve_unconverged(problem, targets, solve_clip(problem, targets, starts, settings=settings))


def in_coordinates(problem: IKProblem) -> bool:
    """Whether :func:`coarse_then_clip` keeps ``problem``'s clip in tree coordinates: the
    tree path applies (:func:`~looprig.core.solvers.tree.unsupported`) and its tree joints are
    posed from coordinates (:func:`~looprig.core.tree_forward.applies`)."""
    return tree.unsupported(problem) is None and applies(tree.kinematics(problem))


def _coarse_then_clip_in_coordinates(problem, times, targets, first_state, stride, settings):
    settings = settings or problem.settings
    coarse, known = coarse_coordinates(problem, times, targets, first_state, stride, settings)
    starts = interpolate_coordinates(times[coarse], known, times)
    return _solved_in_coordinates(problem, targets, starts, settings, first_state)[0]


def _solved_in_coordinates(problem, targets: Targets, starts, settings, before=None):
    """Every frame of ``targets`` solved from coordinates ``starts``
    (:func:`~looprig.core.solvers.tree_newton.solve_coordinates`); the frames it leaves are solved again
    from the frame before (:func:`solve_unconverged`; ``before`` (n, 7) for frame 0).
    Returns the :class:`ClipSolution` and the answers' coordinates."""
    model = tree.kinematics(problem)
    compliance = dual_regularization(problem, settings)
    poses, iterations, converged, residual = tree_newton.solve_coordinates(
        model, targets.positions, targets.rotations, starts, settings, compliance
    )
    solution = ClipSolution(poses.states(), iterations, converged, residual)
    again = np.flatnonzero(~converged)
    if not len(again):
        return solution, poses.coordinates
    solution = solve_unconverged(problem, targets, solution, before)
    coordinates = poses.coordinates
    read = forward(model).coordinates(*model.to_frames(solution.states[again]), near=starts[0][:, again])
    for x, y in zip(coordinates, read, strict=True):
        x[..., again] = y
    return solution, coordinates


def coarse_coordinates(problem, times, targets: Targets, first_state, stride: int = 8, settings=None):
    """:func:`coarse_states` in tree coordinates (:func:`in_coordinates` problems): the
    coarse frames' indices (K,) and coordinates (as
    :func:`~looprig.core.solvers.tree_newton.solve_coordinates` takes them, K frames), frame 0 being
    ``first_state`` (n, 7). The frames solved in sequence are solved by the per-frame
    solver as there (at one frame it pays less than the batched kernels), their
    coordinates read at once and their turns unwrapped along the sequence."""
    settings = settings or problem.settings
    coarse, sub = _coarse_frames(problem, targets, len(times), stride, first_state, guided=True)
    if sub > 1:
        sub_times, sub_targets = times[coarse], targets.take(coarse)
        known_at, known = coarse_coordinates(problem, sub_times, sub_targets, first_state, sub, settings)
        starts = interpolate_coordinates(sub_times[known_at], known, sub_times)
        return coarse, _solved_in_coordinates(problem, sub_targets, starts, settings)[1]
    return coarse, in_sequence_coordinates(problem, targets, coarse, first_state, settings)


def solve_unconverged(
    problem: IKProblem, targets: Targets, solution: ClipSolution, before: np.ndarray | None = None
) -> ClipSolution:
    """``solution`` (F frames) with every frame the clip solver left unconverged solved
    again by the per-frame solver, in order, warm-started from (and compared with) the
    frame before (``before`` (n, 7) for frame 0, which is kept without it), as a
    frame-by-frame retarget would: from an interpolated start far from the answer
    (competing objectives at a low frame rate) the solver can need more iterations
    than from the previous frame's answer."""
    for f in np.flatnonzero(~solution.converged):
        previous = solution.states[f - 1] if f > 0 else before
        if previous is None:
            continue
        com = None if targets.com is None else targets.com[f]
        result = solve_ik(problem, IKTargets(targets.positions[f], targets.rotations[f], com), previous)
        solution.states[f], solution.converged[f] = result.state, result.converged
        solution.residual[f] = result.residual
        solution.iterations[f] += result.iterations
    return solution
