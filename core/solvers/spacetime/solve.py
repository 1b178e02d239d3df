"""A clip solved at once under hard motor limits (:func:`solve_spacetime`): its
objective (the tracking terms alone, :func:`tracking_only`), the limits held a hair
inside (:func:`~.rows.held_limits`), every start tried, first on every stride-th frame
of a long clip and then on the whole clip from the best coarse answer, the best
converged answer kept.
"""

import dataclasses

import numpy as np

from ..ik import IKProblem
from ..joint_space import JointScrews
from .interior import interior_point
from .records import SpaceTimeClip, SpaceTimeSettings, SpaceTimeSolution
from .rows import held_limits, limit_rows
from .starts import coarse_stride, refined_multipliers, refined_start, rewound_start


def solve_spacetime(
    clip: SpaceTimeClip,
    settings: SpaceTimeSettings | None = None,
    frozen: np.ndarray | None = None,
    ends=(True, True),
    seam: int | None = None,
) -> SpaceTimeSolution:
    """``clip`` (:class:`~.records.SpaceTimeClip`: F frames, motors (F, A) unwrapped
    [rad | m]) solved at once under hard motor limits (the package's docstring), from
    its assembled states: typically the unlimited clip solver's answer. ``frozen`` (F,)
    bool and ``ends``: frames kept as they are, and whether the first and last frames are
    a clip's ends (:func:`~.rows.limit_rows`; :func:`~.windows.hold_limits` solves
    windows of a clip so); ``seam``: where a loop's first frame is in these frames
    (:func:`~.rows.limit_rows`).

    The objective is the tracking terms' alone: the problem's minimal-motion metric is
    left out (it would damp every step and so keep the iterations from converging where
    limits hold targets away; a Levenberg damping that vanishes as the iterations
    converge takes its place), and so are the terms that compare consecutive frames
    (the body velocity barrier, the soft actuator barriers and acceleration cost, the
    paper's state regularizer), whose part the hard limits take."""
    settings = settings or SpaceTimeSettings()
    problem, targets, rate = tracking_only(clip.problem), clip.targets, clip.rate
    states, actuators, limits = clip.states, clip.actuators, clip.motor_limits
    screws = JointScrews(problem.tree, len(problem.mechanism.bodies))
    held = held_limits(limits, settings.margin)
    families = limit_rows(held, len(states), rate, frozen, ends, seam)

    def solve(
        start_states, start_values, part=(targets, families, frozen), stage=settings
    ) -> SpaceTimeSolution:
        asked, rows, where = part
        first = interior_point(problem, screws, asked, start_states, start_values, rows, stage, where)
        if first.converged:
            return first
        second = interior_point(
            problem, screws, asked, start_states, start_values, rows, stage, where, gentle=True
        )
        second.iterations += first.iterations
        return second

    starts = {"exact": (np.asarray(states, dtype=float), np.asarray(actuators, dtype=float))}
    rewound = rewound_start(problem, states, actuators, rate, limits)
    if rewound is not None:
        starts["rewound"] = rewound
    F, iterations = len(states), 0
    stride = coarse_stride(F, rate, settings.coarse_rate)
    if stride > 1:  # every start on every stride-th frame; the best answer starts the whole clip
        coarse = np.arange(0, F, stride)
        coarse_frozen = None if frozen is None else frozen[coarse]
        coarse_ends = (ends[0], ends[1] and coarse[-1] == F - 1)
        coarse_seam = None if seam is None else round(seam / stride)  # (a warm start's)
        coarse_rows = limit_rows(held, len(coarse), rate / stride, coarse_frozen, coarse_ends, coarse_seam)
        part = (targets.take(coarse), coarse_rows, coarse_frozen)
        tried = {name: solve(S[coarse], V[coarse], part) for name, (S, V) in starts.items()}
        iterations = sum(t.iterations for t in tried.values())
        name = _best(tried)
        if tried[name].converged:
            S, V = starts[name]
            warm_states, warm_values = refined_start(problem, tried[name], S, V, coarse, frozen)
            z = refined_multipliers(families, coarse_rows, tried[name].multipliers, stride)
            warm = dataclasses.replace(settings, initial_barrier=settings.warm_barrier)
            solution = interior_point(
                problem, screws, targets, warm_states, warm_values, families, warm, frozen, multipliers=z
            )
            iterations += solution.iterations
            if solution.converged:
                solution.start, solution.iterations = name, iterations
                return solution
    # the clip as it is from every start (a short clip, or where the coarse start failed)
    tried = {name: solve(*start) for name, start in starts.items()}
    name = _best(tried)
    solution = tried[name]
    solution.start, solution.iterations = name, iterations + sum(t.iterations for t in tried.values())
    return solution


def tracking_only(problem: IKProblem) -> IKProblem:
    """``problem`` with its tracking terms alone: the objective :func:`solve_spacetime`
    minimises (no minimal-motion metric, no terms that compare consecutive frames)."""
    regularization = dataclasses.replace(
        problem.regularization,
        state_weight=0.0,
        velocity_weight=0.0,
        actuator_weight=0.0,
        acceleration_weight=0.0,
    )
    return dataclasses.replace(problem, regularization=regularization)


def _best(tried: dict) -> str:
    """The start whose solve converged with the least tracking cost (the first if none
    converged)."""
    converged = [name for name, t in tried.items() if t.converged]
    return min(converged, key=lambda name: tried[name].objective) if converged else next(iter(tried))
