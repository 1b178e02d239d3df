"""Aims in a retarget: homing towards the clip's start, aim errors, checks and warnings,
and the view of aims that holding reads."""

import dataclasses
import warnings

import numpy as np

from ..errors import LooprigWarning, TargetError
from ..maths.rotations import quat_to_matrix
from ..model.mechanism import Mechanism
from ..solvers.ik import IKTargets, solve_ik
from ..terms import AimTask, MotorRest, Targets
from ..terms.aim import holding_view
from .mapping import RetargetMapping

#: Weight of the pull towards the clip's start that each frame of a clip with aims is solved
#: with first (:func:`with_homing`; relative, as :class:`~looprig.core.terms.MotorRest`'s).
AIM_HOMING_WEIGHT = 1e-2


def with_homing(problem, mapping: RetargetMapping, state: np.ndarray):
    """With aims, ``problem`` with a pull of the motors towards their values in ``state`` (the
    clip's start), else None.

    An aim leaves its frame free to roll about the line of sight and to move along it (a
    Stewart head: four of its six freedoms); resolved frame to frame by the minimal-motion
    metric alone, that freedom drifts (a gaze that goes round a circle comes back with the
    head moved). Each frame is solved with the pull first (the nearest pose to the start,
    slightly biased), then exactly from there: the exact answer nearest it in the metric,
    whatever the path that led there (as the first frame's motors no target determines are
    brought back to the start, :func:`~looprig.core.solvers.start.solve_first_frame`).
    """
    if not mapping.aims or not len(problem.readout.names):
        return None
    rest = MotorRest(
        problem.readout, problem.readout.read(state), AIM_HOMING_WEIGHT, problem.constraints.length_scale
    )
    return dataclasses.replace(problem, terms=(*problem.terms, rest))


def homed_first(problem, mapping: RetargetMapping, targets: IKTargets, state, first):
    """With aims, the first frame ``first`` (an :class:`~looprig.core.solvers.ik.IKResult` of
    ``problem``) solved as :func:`with_homing` solves the others, when that meets it as well."""
    homing = with_homing(problem, mapping, state)
    if homing is None:
        return first
    many = dataclasses.replace(problem.settings, max_iterations=10 * problem.settings.max_iterations)
    homed = solve_ik(homing, targets, state, first.state, settings=many)
    exact = solve_ik(problem, targets, state, homed.state, settings=many)
    frame = Targets(targets.positions[None], targets.rotations[None])

    def miss(result):
        aims = aim_errors(problem, result.state[None], frame)[1].max()
        return max(aims, float(np.max(result.position_error, initial=0.0)))

    return exact if miss(exact) <= max(mapping.reach_tolerance, miss(first)) else first


def aim_term(problem) -> AimTask | None:
    return next((t for t in problem.terms if isinstance(t, AimTask)), None)


def aim_errors(problem, states: np.ndarray, targets: Targets):
    """Per frame and aim (F, M): the aim's angle [rad], its miss [m] and the distance from
    the frame's origin to the point [m] (across a lock axis)."""
    term = aim_term(problem)
    R = quat_to_matrix(states[..., 3:])
    angle, _, distance = term.angles(states, R, targets)
    return angle, term.misses(states, R, targets), distance


#: A fixed aim point nearer than this [m] to its frame's origin at the start is refused.
AIM_AT_ORIGIN = 1e-6


def check_fixed_aims(mechanism: Mechanism, mapping: RetargetMapping, state: np.ndarray) -> None:
    """A fixed aim point at its frame's origin (at the clip's start) is a one-line
    :class:`TargetError` naming the aim."""
    fixed = [(i, a) for i, a in enumerate(mapping.aims) if a.point is not None]
    if not fixed:
        return
    aims = mapping.aim_objectives(mechanism)
    term = AimTask(mechanism, [aims[i] for i, _ in fixed], np.arange(len(fixed)))
    points = np.array([a.point for _, a in fixed], dtype=float)[None]
    upright = np.broadcast_to(np.eye(3), points.shape + (3,))
    geo = term.geometry(state[None], quat_to_matrix(state[None, :, 3:]), Targets(points, upright))
    for (i, aim), distance in zip(fixed, np.linalg.norm(geo["d"][0], axis=-1), strict=True):
        if distance < AIM_AT_ORIGIN:
            raise TargetError(
                f"mapping aim {i} ({aim.frame!r}): the point {list(aim.point)} is at the frame's origin "
                f"({distance * 1000:.3g} mm from it at the start): an aim needs a point away from it"
            )


def warn_near_aims(problem, mapping: RetargetMapping, states, targets: Targets, times) -> None:
    """One warning per stretch of frames where an aim's point is nearer its frame's origin
    than the aim's ``min_distance``."""
    distance = aim_errors(problem, states, targets)[2]
    for i, aim in enumerate(mapping.aims):
        near = np.r_[False, distance[:, i] < aim.min_distance, False]
        edges = np.flatnonzero(np.diff(near.astype(int)))
        for start, end in zip(edges[::2], edges[1::2] - 1, strict=True):
            closest = distance[start : end + 1, i].min()
            warnings.warn(
                LooprigWarning(
                    f"aim {i} ({aim.frame!r}) at {aim.source}: the point is within {aim.min_distance:g} m of "
                    f"the frame's origin at t = {times[start]:.4g}-{times[end]:.4g} s (closest "
                    f"{closest * 1000:.3g} mm): the line of sight turns fast there"
                ),
                stacklevel=4,
            )


def aims_as_frames(problem, mapping: RetargetMapping, state, targets: Targets):
    """The first-frame ``problem`` and the clip's ``targets`` as
    :func:`~looprig.core.solvers.holding.motors_to_hold` decides on them: with aims, each
    aim tracked as the direction of a frame of its body
    (:func:`~looprig.core.terms.aim.holding_view`; holding reads frame objectives only)."""
    mechanism = problem.mechanism
    if not mapping.aims:
        return problem, targets
    k, aims = len(mapping.targets), mapping.aim_objectives(mechanism)
    points, ups = targets.positions[:, k:], targets.rotations[:, k:, :, 2]
    proxy_mechanism, proxies, positions, rotations = holding_view(mechanism, aims, points, ups, state)
    locks = tuple(t for t in problem.terms if not isinstance(t, AimTask))
    problem = dataclasses.replace(
        problem, mechanism=proxy_mechanism, frames=(*problem.frames[:k], *proxies), terms=locks
    )
    positions = np.concatenate([targets.positions[:, :k], positions], axis=1)
    rotations = np.concatenate([targets.rotations[:, :k], rotations], axis=1)
    return problem, Targets(positions, rotations, targets.com)
