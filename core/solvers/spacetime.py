"""Space-time retargeting: every frame of a clip at once, with hard motor limits.

One module although long: the limit rows, the interior point that reads them, its
windows and its starts share the rows' layout and the linearisation record; the
banded linear algebra (:mod:`.banded`) and the joint-space curvature
(:mod:`.joint_space`) live apart.

Over the F frames of a clip::

    min  sum_k f(s_k)                                  (tracking; the IK problem's objective)
    s.t. C(s_k) = 0                                    (joints and loops: never apart)
         lower <= p_k <= upper                         (each motor's range)
         |p_(k+1) - p_k| <= v / rate                   (its speed between frames)
         |p_(k+1) - 2 p_k + p_(k-1)| <= a / rate^2     (its acceleration)

with ``p_k`` the motors read off ``s_k``. Frames couple only through the motor
rows' neighbour differences.

The unknowns are the spanning tree's joint coordinates
(:meth:`~looprig.core.kkt.SpanningTree.joint_basis`): a step turns or slides each
tree joint exactly (:meth:`~looprig.core.kkt.SpanningTree.retract`), so the tree's
joints stay assembled, a motor that is a tree joint moves by exactly its coordinate
and every limit row is linear in the unknowns. Each frame then moves in the null
space of its loop rows, ``theta_k = q0_k + W_k u_k`` (``q0_k`` restores them), and
the whole clip's unknowns ``u`` (F, dof) meet only banded limit rows. A primal-dual
interior point (:func:`_interior_point`) solves it: one banded Newton system per
iteration (:class:`~looprig.core.banded.NewtonSystem`) with Newton's Hessian in
joint coordinates (Gauss-Newton's plus the tracked points' and axes' curvature,
:mod:`.joint_space`, and the loops' curvature times their multipliers), made convex
frame by frame where it is not, and a line search on an l1 merit.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import BSpline

from ..maths.rotations import quat_to_matrix
from ..terms import Reference, Targets
from ..terms.limits import ActuatorLimits
from .banded import NewtonSystem, RowSet, StencilRows, converged_kkt
from .ik import IKProblem
from .joint_space import JointScrews
from .spacetime_tree import TreeClip
from .spacetime_tree import applies as tree_path
from .step import build_step, with_constraint_curvature

#: The motor rows: (quantity, stencil over consecutive frames, where it applies: at
#: every run of frames, or at the clip's first or last), each bound by the quantity's
#: limit times 1, 1/rate or 1/rate^2. They are the differences the limit checks read
#: (:data:`~looprig.core.curves.DERIVATIVE`): inside the clip a central velocity is the
#: mean of two speed rows and an acceleration the second difference; at its ends the
#: one-sided second-order velocity and the end cubic's second derivative.
STENCILS = (
    ("position", (1.0,), "every"),
    ("velocity", (-1.0, 1.0), "every"),
    ("acceleration", (1.0, -2.0, 1.0), "every"),
    ("velocity", (-1.5, 2.0, -0.5), "first"),
    ("velocity", (0.5, -2.0, 1.5), "last"),
    ("acceleration", (2.0, -5.0, 4.0, -1.0), "first"),
    ("acceleration", (-1.0, 4.0, -5.0, 2.0), "last"),
)


@dataclass(frozen=True)
class SpaceTimeSettings:
    """Tolerances of :func:`solve_spacetime`.

    limit_tolerance: the interior point's tolerance on stationarity, complementarity and
    how far a limit row may end outside its bound, relative to the bound's size (a speed
    limit's ``v / rate``); max_iterations: interior-point iterations of a stage;
    initial_slack, initial_barrier: the least slack of a limit row at the start and the
    start's barrier parameter (slack times multiplier); coarse_rate: the least rate [Hz]
    of the coarse clip that starts a long one (:func:`coarse_stride`; infinite: none);
    warm_barrier: the barrier parameter the whole clip starts with from the coarse
    answer; margin: how far inside its limits a changed clip is held, relative to each
    (a range to its span): curves stored as 32-bit floats (Blender's keys) at up to 60
    frames a second then still pass the check, which a motor riding exactly at its
    speed limit did not (4.0000019 rad/s of 4 read back from the keys).
    """

    limit_tolerance: float = 1e-9
    margin: float = 1e-4
    max_iterations: int = 200
    max_backtracks: int = 30
    initial_slack: float = 1.0
    initial_barrier: float = 1e-1
    initial_damping: float = 1e-4
    coarse_rate: float = 60.0
    warm_barrier: float = 1e-6


@dataclass
class SpaceTimeSolution:
    """Outcome of :func:`solve_spacetime` for F frames and A motors.

    states (F, n, 7); actuators (F, A) [rad | m] unwrapped; objective: the summed
    tracking cost; binding (F, A) str: the limit that holds each motor at each frame
    ("" where none: ``position``, ``velocity`` or ``acceleration``); residual (F,) max
    |C| [m]; iterations: interior-point iterations, every start counted; converged:
    tolerances met; start: which start gave it (:func:`rewound_start`): "exact" (the
    given curves) or "rewound" (their turns through a singularity taken the other way
    round); changed: from :func:`hold_limits`, the frames it solved again (the others
    are the exact answer; ``residual`` is zero there).
    """

    states: np.ndarray
    actuators: np.ndarray
    objective: float
    binding: np.ndarray
    residual: np.ndarray
    iterations: int
    converged: bool
    start: str = "exact"
    changed: np.ndarray | None = None  # (F,) bool: the frames solved again (:func:`hold_limits`)
    travelled: np.ndarray | None = None  # (F, D): the joint coordinates' steps summed from the start
    multipliers: list | None = None  # per limit-row family (:func:`limit_rows`): (K, R) at the end


@dataclass
class _Rows:
    """The limit rows of one stencil family, normalised by their bounds: at each of K runs
    of frames from ``first`` on, one row per channel: a motor and a sign."""

    quantity: str
    stencil: tuple[float, ...]
    first: int  # the first run's first frame
    runs: int  # K
    motor: np.ndarray  # (R,)
    sign: np.ndarray  # (R,) +1: an upper bound, -1: a lower one
    bound: np.ndarray  # (R,) [rad | m], in the rows' own units before normalising
    scale: np.ndarray  # (R,) the normaliser
    live: np.ndarray | None = None  # (K,) runs that read a frame that may move (None: all)

    def frames(self, j: int) -> slice:
        """The frames (K of them) that stencil weight j reads."""
        return slice(self.first + j, self.first + j + self.runs)


def limit_rows(
    limits: ActuatorLimits,
    frames: int,
    rate: float,
    frozen: np.ndarray | None = None,
    ends=(True, True),
    seam: int | None = None,
) -> list[_Rows]:
    """Every finite limit of every motor as one-sided stencil rows over ``frames``
    (:data:`STENCILS`; the end rows only at the ``ends`` (first, last) that are the
    clip's, and only where the clip is longer than their stencil, as the checks read the
    ends then). ``frozen`` (F,) bool: frames that keep their values; a run of frozen
    frames alone is no row (:attr:`_Rows.live`). ``seam``: where a loop's first frame
    is, inside these frames (:func:`_hold_cyclic`): the end rows of the clip's first
    frame from there on and of its last before, where they fit."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 1.0)
    families = []
    for quantity, stencil, where in STENCILS:
        S = len(stencil)
        if where == "every":
            placed = [(0, frames - S + 1)] if frames >= S else []
        else:
            last = where == "last"
            placed = [(frames - S if last else 0, 1)] if frames > S and ends[last] else []
            if seam is not None and 0 <= seam - S * last and seam - S * last + S <= frames:
                placed.append((seam - S * last, 1))
        if quantity == "position":
            uppers, lowers, scale = limits.upper, -limits.lower, np.maximum(span, 1e-6)
        else:
            step = limits.velocity / rate if quantity == "velocity" else limits.acceleration / rate**2
            uppers, lowers, scale = step, step, step
        channels = [
            (m, sign, bound, scale[m])
            for m in range(len(limits.lower))
            for sign, bound in ((1.0, uppers[m]), (-1.0, lowers[m]))
            if np.isfinite(bound)
        ]
        for first, runs in placed if channels else ():
            motor, sign, bound, norm = (np.array(c) for c in zip(*channels, strict=True))
            rows = _Rows(quantity, stencil, first, runs, motor.astype(int), sign, bound, norm)
            if frozen is not None:
                rows.live = ~np.all([frozen[rows.frames(j)] for j in range(S)], axis=0)
            families.append(rows)
    return families


def _runs(rows: _Rows, values: np.ndarray) -> np.ndarray:
    """The stencil of ``rows`` applied to each channel's motor (K, R) of values (F, A)."""
    return sum(w * values[rows.frames(j)][:, rows.motor] for j, w in enumerate(rows.stencil))


def excess(rows: _Rows, values: np.ndarray) -> np.ndarray:
    """How far each row is past its bound at motor values (F, A), normalised (K, R); a
    row that reads frozen frames alone is held at -1 (inside)."""
    out = (rows.sign * _runs(rows, values) - rows.bound) / rows.scale
    return out if rows.live is None else np.where(rows.live[:, None], out, -1.0)


def _stencil(rows: _Rows, b: np.ndarray, B: np.ndarray) -> StencilRows:
    """The QP rows of ``rows`` for motor values ``b + B u`` (b (F, A), B (F, A, d))."""
    weight = rows.sign / rows.scale  # (R,)
    if rows.live is not None:
        weight = rows.live[:, None] * weight  # (K, R)
    touched = (B != 0.0).any(axis=0)  # (A, d)
    if (touched.sum(axis=1) <= 1).all():  # every motor one coordinate (a tree joint's): its rate
        column = touched.argmax(axis=1)  # (A,)
        rate = np.take_along_axis(B, column[None, :, None], axis=2)[..., 0]  # (F, A)
        factors = np.stack(
            [w * weight * rate[rows.frames(j)][:, rows.motor] for j, w in enumerate(rows.stencil)], axis=2
        )  # (K, R, S)
        return StencilRows.on_columns(factors, column[rows.motor], B.shape[-1], -excess(rows, b), rows.first)
    coefficients = np.stack(
        [w * weight[..., None] * B[rows.frames(j)][:, rows.motor] for j, w in enumerate(rows.stencil)], axis=2
    )  # (K, R, S, d)
    return StencilRows(coefficients, -excess(rows, b), rows.first)


def motor_forces(families: list[_Rows], multipliers: list[np.ndarray], shape) -> np.ndarray:
    """The limit rows' multipliers (K, R) as forces on each frame's motors (F, A)."""
    force = np.zeros(shape)
    for rows, z in zip(families, multipliers, strict=True):
        per_channel = z * (rows.sign / rows.scale)
        if rows.live is not None:
            per_channel = per_channel * rows.live[:, None]
        for j, w in enumerate(rows.stencil):
            for r, m in enumerate(rows.motor):
                force[rows.frames(j), m] += w * per_channel[:, r]
    return force


def solve_spacetime(
    problem: IKProblem,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    rate: float,
    limits: ActuatorLimits | None = None,
    settings: SpaceTimeSettings | None = None,
    frozen: np.ndarray | None = None,
    ends=(True, True),
    seam: int | None = None,
) -> SpaceTimeSolution:
    """The clip ``targets`` (batched to F frames) solved at once under hard motor limits
    (module docstring), from assembled ``states`` (F, n, 7) whose motors read
    ``actuators`` (F, A) unwrapped [rad | m]: typically the unlimited clip solver's
    answer. ``limits``: the problem's actuators' by default; ``frozen`` (F,) bool and
    ``ends``: frames kept as they are, and whether the first and last frames are a
    clip's ends (:func:`limit_rows`; :func:`hold_limits` solves windows of a clip so);
    ``seam``: where a loop's first frame is in these frames (:func:`limit_rows`).

    The objective is the tracking terms' alone: the problem's minimal-motion metric is
    left out (it would damp every step and so keep the iterations from converging where
    limits hold targets away; a Levenberg damping that vanishes as the iterations
    converge takes its place), and so are the terms that compare consecutive frames
    (the body velocity barrier, the soft actuator barriers and acceleration cost, the
    paper's state regularizer), whose part the hard limits take."""
    settings = settings or SpaceTimeSettings()
    limits = limits or problem.actuator_limits
    problem = tracking_only(problem)
    screws = JointScrews(problem.tree, len(problem.mechanism.bodies))
    held = held_limits(limits, settings.margin)
    families = limit_rows(held, len(states), rate, frozen, ends, seam)

    def solve(
        start_states, start_values, clip=(targets, families, frozen), stage=settings
    ) -> SpaceTimeSolution:
        asked, rows, where = clip
        first = _interior_point(problem, screws, asked, start_states, start_values, rows, stage, where)
        if first.converged:
            return first
        second = _interior_point(
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
        clip = (targets.take(coarse), coarse_rows, coarse_frozen)
        tried = {name: solve(S[coarse], V[coarse], clip) for name, (S, V) in starts.items()}
        iterations = sum(t.iterations for t in tried.values())
        name = _best(tried)
        if tried[name].converged:
            S, V = starts[name]
            warm_states, warm_values = _refined(problem, tried[name], S, V, coarse, frozen)
            z = _refined_multipliers(families, coarse_rows, tried[name].multipliers, stride)
            warm = dataclasses.replace(settings, initial_barrier=settings.warm_barrier)
            solution = _interior_point(
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


def held_limits(limits: ActuatorLimits, margin: float) -> ActuatorLimits:
    """The limits :func:`solve_spacetime` holds: ``limits`` moved inwards by ``margin``
    (:attr:`SpaceTimeSettings.margin`), speeds and accelerations times 1 - margin, each
    finite range's ends by margin times its span."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 0.0)
    return ActuatorLimits(
        limits.lower + margin * span,
        limits.upper - margin * span,
        limits.velocity * (1.0 - margin),
        limits.acceleration * (1.0 - margin),
    )


def _refined(problem, coarse_solution: SpaceTimeSolution, states, values, coarse, frozen):
    """The clip's start (states (F, n, 7), motors (F, A)) moved to the answer found on its
    ``coarse`` frames (every stride-th): the tree motors to that answer's values, other
    tree joints by its joint coordinates' travel, both along :func:`_smoothed` (frames
    past the last coarse one keep its values); ``frozen`` frames stay."""
    stride = int(coarse[1] - coarse[0]) if len(coarse) > 1 else 1
    blend = _eased(frozen, len(values), stride)[:, None]
    theta = blend * _smoothed(coarse_solution.travelled, stride, len(values))
    motors = values + blend * (_smoothed(coarse_solution.actuators, stride, len(values)) - values)
    for a, (column, sign) in tree_motor_columns(problem, states[:1]).items():
        theta[:, column] = (motors[:, a] - values[:, a]) * sign
    if frozen is not None:
        theta[frozen] = 0.0
    moved = problem.tree.retract(states, quat_to_matrix(states[..., 3:]), theta)
    return moved, problem.readout.read(moved, previous=np.where(np.isfinite(motors), motors, values))


def _eased(frozen: np.ndarray | None, frames: int, stride: int) -> np.ndarray:
    """Per frame (F,), how far the start moves to the coarse answer: 0 on ``frozen``
    frames, rising smoothly (C2, over ``stride`` frames) to 1 away from them, so that
    the start joins the kept frames without a kink their acceleration rows would read."""
    kept = np.zeros(0, int) if frozen is None else np.flatnonzero(frozen)
    if not len(kept):
        return np.ones(frames)
    f = np.arange(frames)
    after = np.searchsorted(kept, f).clip(1, len(kept)) - 1  # the last kept frame at or before
    nearest = np.minimum(np.abs(f - kept[after]), np.abs(kept[np.minimum(after + 1, len(kept) - 1)] - f))
    t = np.clip((nearest - 1) / stride, 0.0, 1.0)
    return t**3 * (10.0 - 15.0 * t + 6.0 * t**2)


def _smoothed(samples: np.ndarray, stride: int, frames: int) -> np.ndarray:
    """The uniform cubic B-spline whose control points are ``samples`` (K, ...), one
    every ``stride`` frames from frame 0, at ``frames`` frames (frames past the last
    sample keep its value). Its values, slopes and curvatures are convex combinations of
    the samples, their first and their second differences, so every range, speed and
    acceleration row the samples keep at the coarse rate the fine frames keep too (an
    interpolating spline overshoots the accelerations by up to 3x): the whole clip's
    interior point then starts inside its limits. The ends are extended linearly, so
    the curve passes through the first and last samples."""
    samples = np.asarray(samples, dtype=float)  # (at least 64 of them: coarse_stride)
    K = len(samples)
    control = np.concatenate([2 * samples[:1] - samples[1:2], samples, 2 * samples[-1:] - samples[-2:-1]])
    knots = np.arange(K + 6) - 3.0
    at = np.minimum(np.arange(frames) / stride, K - 1)
    return BSpline(knots, control, 3, extrapolate=False)(at)


def _refined_multipliers(families: list[_Rows], coarse_families: list[_Rows], multipliers, stride: int):
    """The limit rows' multipliers (m,) on the whole clip from those on every ``stride``-th
    frame, interpolated in time per channel: the rows are normalised by their bounds, so
    a multiplier is about the same function of time at any rate. A family the coarse
    clip lacks (an end it does not reach) gets zeros."""
    coarse = {(c.quantity, c.stencil): (c, z) for c, z in zip(coarse_families, multipliers, strict=True)}
    parts = []
    for rows in families:
        c, z = coarse.get((rows.quantity, rows.stencil), (None, None))
        if c is None or c.runs < 2 or rows.runs < 2 or not np.array_equal(c.motor, rows.motor):
            parts.append(np.zeros((rows.runs, len(rows.motor))))
            continue
        centre = (len(rows.stencil) - 1) / 2
        fine_t = rows.first + np.arange(rows.runs) + centre
        coarse_t = (c.first + np.arange(c.runs) + centre) * stride
        parts.append(np.stack([np.interp(fine_t, coarse_t, column) for column in z.T], axis=1))
    return np.concatenate([p.ravel() for p in parts]) if parts else np.zeros(0)


def coarse_stride(frames: int, rate: float, coarse_rate: float) -> int:
    """Every how many frames the starts are compared and the answer first sought: the
    largest of 16, 8, 4 or 2 that keeps at least ``coarse_rate`` [Hz] and 64 frames; 1 (the
    clip as it is) for short or slow clips."""
    for stride in (16, 8, 4, 2):
        if rate / stride >= coarse_rate and frames // stride >= 64:
            return stride
    return 1


def _best(tried: dict) -> str:
    """The start whose solve converged with the least tracking cost (the first if none
    converged)."""
    converged = [name for name, t in tried.items() if t.converged]
    return min(converged, key=lambda name: tried[name].objective) if converged else next(iter(tried))


#: The frames around a broken limit first solved again, each side [s]; a window whose
#: edges still move is doubled.
WINDOW_SECONDS = 0.25
#: How far [rad | m] a window's outermost moving frames may end from the exact answer.
WINDOW_EDGE = 1e-6
#: How many frames each side of a loop's seam its end rows read (:func:`_hold_windows`).
SEAM_READ = max(len(stencil) for _, stencil, _ in STENCILS)


def hold_limits(
    problem: IKProblem,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    rate: float,
    limits: ActuatorLimits | None = None,
    settings: SpaceTimeSettings | None = None,
    cyclic: bool = False,
) -> SpaceTimeSolution | None:
    """The clip's exact answer (states (F, n, 7), motors (F, A)) changed where it must be
    to keep every motor limit: None if it keeps them already; else the frames around
    every broken limit (:data:`WINDOW_SECONDS` each side) solved again together by
    :func:`solve_spacetime`, two frames past each end kept as they are, the windows
    doubled until their outermost moving frames end within :data:`WINDOW_EDGE` of the
    exact answer (or cover the clip). Frames outside the windows are the exact answer,
    bit for bit; a window that took its turns the other way round
    (:func:`rewound_start`) shifts every later motor value by the same whole turns.

    cyclic: the clip played in a loop, its first frame one period after its last: the
    limits hold across that seam too (:func:`_hold_cyclic`)."""
    limits = limits or problem.actuator_limits
    if cyclic and len(actuators) >= 8:
        return _hold_cyclic(problem, targets, states, actuators, rate, limits, settings)
    return _hold_windows(problem, targets, states, actuators, rate, limits, settings)


def _hold_windows(
    problem,
    targets,
    states,
    actuators,
    rate: float,
    limits,
    settings,
    end_rows=True,
    kept_ends=False,
    seam: int | None = None,
) -> SpaceTimeSolution | None:
    """:func:`hold_limits` of a clip; ``end_rows``: whether its first and last frames are
    a clip's ends (the rows the checks read there: :func:`limit_rows`); ``kept_ends``:
    its two outermost frames each side kept as they are (a loop's middle,
    :func:`_hold_cyclic`); ``seam``: the frame where a loop's first frame is, whose end
    rows are held there (:func:`limit_rows`; a window that reaches them takes all the
    frames they read)."""
    values = np.asarray(actuators, dtype=float)
    F = len(values)
    ends = (end_rows, end_rows)
    broken = np.zeros(F, bool)
    for rows in limit_rows(limits, F, rate, ends=ends, seam=seam):
        over = (excess(rows, values) > 0.0).any(axis=1)  # (K,)
        for j in range(len(rows.stencil)):
            broken[rows.frames(j)] |= over
    if not broken.any():
        return None
    movable = np.ones(F, bool)
    if kept_ends:
        movable[:2] = movable[-2:] = False
    margin = max(int(np.ceil(WINDOW_SECONDS * rate)), 3)
    start = (states, values)  # a grown window starts from the last one's answer
    while True:
        window = (np.convolve(broken, np.ones(2 * margin + 1))[margin : margin + F] > 0) & movable
        around = slice(max(seam - SEAM_READ, 0), seam + SEAM_READ) if seam is not None else slice(0)
        if window[around].any():
            window[around] = movable[around]
        sub, frozen = _with_frozen_edges(window)
        at = int(np.searchsorted(sub, seam)) if window[around].any() else None
        solution = solve_spacetime(
            problem,
            targets.take(sub),
            start[0][sub],
            start[1][sub],
            rate,
            limits,
            settings,
            frozen,
            (sub[0] == 0 and end_rows, sub[-1] == F - 1 and end_rows),
            at,
        )
        moved = np.abs(solution.actuators - values[sub]).max(axis=1) > WINDOW_EDGE
        edges = frozen | np.r_[frozen[1:], True] | np.r_[True, frozen[:-1]]  # frozen or next to it
        edges &= ~frozen
        grow = (moved & edges & (sub != 0) & (sub != F - 1)).any()
        if not solution.converged or window[movable].all() or not grow:
            break
        margin *= 2
        grown = _spliced(solution, sub, frozen, states, values)
        start = (grown.states, grown.actuators)
    return _spliced(solution, sub, frozen, states, values)


def _hold_cyclic(problem, targets, states, actuators, rate: float, limits, settings):
    """:func:`hold_limits` of a clip played in a loop, in two passes: the clip as it is,
    without the rows at its ends (every row inside it held), then the clip turned round
    by half its length, so that the seam is inside, with the first pass's middle frames
    as its ends, kept. Every row of the loop then holds: the second pass holds those
    that read the seam, and those that read only the kept frames held in the first.
    The second pass holds the clip's end rows too, at the seam (the one-sided speeds
    and the end cubics' accelerations that ``looprig check`` reads at a clip's ends):
    the loop passes as a clip, and so do its copies played in a row (the Dancer's dance
    kept the wrap-round rows alone, and three loops in a row read 90 rad/s^2 of 30 at
    their first frame)."""
    values = np.asarray(actuators, dtype=float)
    F = len(values)
    first = _hold_windows(problem, targets, states, values, rate, limits, settings, end_rows=False)
    S, V = (states, values) if first is None else (first.states, first.actuators)
    if first is not None and not first.converged:
        return first
    order = np.r_[F // 2 : F, : F // 2]
    turned = _hold_windows(
        problem, targets.take(order), S[order], V[order], rate, limits, settings, False, True, F - F // 2
    )
    if turned is None:
        return first
    back = np.argsort(order)
    second = dataclasses.replace(
        turned,
        states=turned.states[back],
        actuators=turned.actuators[back],
        binding=turned.binding[back],
        residual=turned.residual[back],
        changed=turned.changed[back],
    )
    if first is None:
        return second
    again = second.changed
    return dataclasses.replace(
        second,
        binding=np.where(again[:, None], second.binding, first.binding),
        residual=np.where(again, second.residual, first.residual),
        changed=again | first.changed,
        iterations=first.iterations + second.iterations,
    )


def _with_frozen_edges(window: np.ndarray):
    """The frames (an index array) of the windows (F,) bool with two frames past each
    end that is not the clip's, and which of them are those kept frames."""
    keep = window.copy()
    for shift in (1, 2):
        keep[:-shift] |= window[shift:]
        keep[shift:] |= window[:-shift]
    sub = np.flatnonzero(keep)
    return sub, ~window[sub]


def _spliced(solution: SpaceTimeSolution, sub, frozen, states, values) -> SpaceTimeSolution:
    """The whole clip with the windows' moving frames (``sub`` where not ``frozen``) from
    ``solution``: the rest as it was, every motor value after a kept frame shifted by
    the whole turns the window took there."""
    out_states = np.array(states, dtype=float)
    binding = np.full(values.shape, "", dtype=object)
    moving = sub[~frozen]
    out_states[moving] = solution.states[~frozen]
    binding[moving] = solution.binding[~frozen]
    offsets = np.zeros(values.shape)
    for i in np.flatnonzero(frozen):
        offsets[sub[i] :] = np.round((solution.actuators[i] - values[sub[i]]) / (2 * np.pi)) * 2 * np.pi
    out_values = values + offsets
    out_values[moving] = solution.actuators[~frozen]
    residual = np.zeros(len(values))
    residual[moving] = solution.residual[~frozen]
    changed = np.zeros(len(values), bool)
    changed[moving] = True
    return dataclasses.replace(
        solution, states=out_states, actuators=out_values, binding=binding, residual=residual, changed=changed
    )


#: The weight of the gentle interior point's pull back (:func:`_interior_point`),
#: relative to the largest diagonal entry of the tracking's Hessian in joint coordinates.
ANCHOR = 1e-6

#: A motor that moves by more than this many times its speed limit in one frame is
#: turning through a singularity (the exact answer flips it by about half a turn).
FLIP_SPEED = 4.0


def rewound_start(problem: IKProblem, states, actuators, rate: float, limits: ActuatorLimits):
    """A second start (states (F, n, 7), motors (F, A)) for a clip whose exact answer
    turns motors through a singularity and leaves their ranges, or None.

    Near a singularity (the Boxer's shoulder in gimbal lock) the exact answer flips
    some motors by about half a turn within a few frames; the same poses are reached
    by flipping them the other way round, which puts every later frame's values one
    turn away. Such a flip is where an angle motor moves by more than
    :data:`FLIP_SPEED` times its speed limit in a frame; after each flip, each motor
    that can is shifted by the whole turns that fit its range best, and across the
    flip its values are interpolated (the states there moved along the tree joints;
    the interior point closes any loops). The states after the flip do not change:
    a whole turn is no motion. Angle motors that are not tree joints are left alone."""
    values = np.asarray(actuators, dtype=float)
    steps = np.abs(np.diff(values, axis=0)) * rate  # (F - 1, A) [rad/s]
    angle = problem.readout.is_angle & np.isfinite(limits.velocity) & np.isfinite(limits.upper - limits.lower)
    fast = ((steps > FLIP_SPEED * limits.velocity) & angle).any(axis=1)
    if not fast.any():
        return None
    edges = np.flatnonzero(np.diff(np.r_[0, fast.astype(int), 0]))
    windows = edges.reshape(-1, 2)  # flips: frames start .. end move fast (step k: k -> k + 1)
    shifted = values.copy()
    for start, end in windows:
        after = shifted[end:]  # every later frame, shifted together
        turns = np.zeros(values.shape[1])
        for a in np.flatnonzero(angle):
            candidates = np.arange(-2, 3)
            excess = [
                np.maximum(after[:, a] + 2 * np.pi * k - limits.upper[a], 0.0).sum()
                + np.maximum(limits.lower[a] - after[:, a] - 2 * np.pi * k, 0.0).sum()
                for k in candidates
            ]
            turns[a] = candidates[int(np.argmin(excess))]
        shifted[end:] += 2 * np.pi * turns
        span = np.arange(start, end + 1)  # interpolated across the flip
        w = (span - start) / max(end - start, 1)
        shifted[span] = (1 - w)[:, None] * shifted[start] + w[:, None] * shifted[end]
    if np.array_equal(shifted, values):
        return None
    theta = np.zeros((len(values), problem.tree.dof))
    columns = tree_motor_columns(problem, states[:1])
    for a in range(values.shape[1]):
        if a in columns:
            column, sign = columns[a]
            theta[:, column] = (shifted[:, a] - values[:, a]) * sign
        else:
            shifted[:, a] = values[:, a]
    moved = problem.tree.retract(np.asarray(states, float), quat_to_matrix(states[..., 3:]), theta)
    return moved, problem.readout.read(moved, previous=shifted)


def tree_motor_columns(problem: IKProblem, state: np.ndarray) -> dict[int, tuple[int, float]]:
    """The motors that are tree joints: motor index -> (its joint coordinate, +-1: the
    motor's value per unit of the coordinate), read at ``state`` (1, n, 7)."""
    R = quat_to_matrix(state[..., 3:])
    Z = problem.tree.joint_basis(state, R)
    P = problem.readout.jacobian(state, R, problem.constraints.column_of_body, problem.constraints.n_vars)
    PZ = (P @ Z)[0]  # (A, D): a tree motor's row is one +-1
    columns = {}
    for a, row in enumerate(PZ):
        column = int(np.argmax(np.abs(row)))
        if np.isclose(abs(row[column]), 1.0) and np.isclose(np.abs(row).sum(), 1.0):
            columns[a] = (column, float(np.sign(row[column])))
    return columns


@dataclass
class _Linearization:
    """Every frame of a clip linearised in joint coordinates (F frames, D coordinates,
    dof motions, A motors): the step ``theta = q0 + W u`` keeps the loops closed to
    first order; H (F, dof, dof) and g (F, dof): the objective's Newton model in u;
    motors ``b + B u`` (F, A) [rad | m]; ``at``: the terms' linearisation."""

    at: object
    Z: np.ndarray  # (F, N, D) joint basis
    W: np.ndarray  # (F, D, dof)
    q0: np.ndarray  # (F, D)
    H: np.ndarray
    g: np.ndarray
    b: np.ndarray
    B: np.ndarray
    PZ: np.ndarray  # (F, A, D) the motors' rates per coordinate
    H_theta: np.ndarray  # (F, D, D)
    g_theta: np.ndarray  # (F, D)
    restore: np.ndarray | None  # (F, D, m) the loop rows' pseudo-inverse: q0 = -restore C
    frozen: np.ndarray | None  # (F,) bool

    def corrected(self, values: np.ndarray, gap: np.ndarray, alpha: float):
        """The step's loop restoration q0 (F, D), its gradient g (F, dof) and motors b
        (F, A) for the loops' residual ``gap`` (F, m) at the end of the step cut to
        ``alpha`` added to ``alpha`` times the start's: a second-order correction (Nocedal &
        Wright, 2nd ed., 18.3; IPOPT's), the same Jacobian and so the same Newton matrix."""
        q0 = alpha * self.q0 - (self.restore @ gap[..., None])[..., 0]
        if self.frozen is not None:
            q0 = np.where(self.frozen[:, None], 0.0, q0)
        Wt = np.swapaxes(self.W, 1, 2)
        g = (Wt @ (self.g_theta + (self.H_theta @ q0[..., None])[..., 0])[..., None])[..., 0]
        if self.frozen is not None:
            g[self.frozen] = 0.0
        return q0, g, values + (self.PZ @ q0[..., None])[..., 0]


def _linearize(
    problem,
    screws: JointScrews,
    at,
    values,
    loop_multipliers,
    damping: float,
    frozen=None,
    anchor=None,
    kin: TreeClip | None = None,
) -> _Linearization:
    """The :class:`_Linearization` at ``at`` (a :class:`~looprig.core.step.LinearizedStep`
    of every frame) whose motors read ``values`` (F, A); loop_multipliers (F, m) or None;
    damping: Levenberg's, relative to each frame's largest Hessian diagonal entry;
    frozen (F,) bool or None: frames that do not move (their steps are exactly zero: no
    gradient, no motor rate, an identity Hessian); anchor: (weight, displacement (F, D))
    of the gentle interior point's pull back to its start, or None; kin: the iterate's
    kinematics in tree coordinates (``at`` a :class:`~looprig.core.spacetime_tree.TreePoint`),
    or None (a :class:`~looprig.core.step.LinearizedStep`)."""
    cs, tree = problem.constraints, problem.tree
    F = len(at.value)
    if kin is not None:  # no loops: the tree's own kernels
        Z = None
        H_theta, g_theta, PZ = kin.linearized(at)
        H_theta = H_theta + kin.curvature(at, screws)
    else:
        S, R = at.point.state, at.point.R
        Z = tree.joint_basis(S, R)
        model = at.model
        if loop_multipliers is not None:
            model = with_constraint_curvature(problem, model, at.point, loop_multipliers)
        H_theta = model.project(Z, np.zeros(F)) + _objective_curvature(problem, screws, at.point)
        g_theta = (at.gradient[:, None, :] @ Z)[:, 0]
        PZ = problem.readout.jacobian(S, R, cs.column_of_body, cs.n_vars) @ Z
    if anchor is not None:
        pull, displacement = anchor
        H_theta = H_theta + pull * np.eye(tree.dof)
        g_theta = g_theta + pull * displacement
    if _loop_count(problem, at):  # (the joints' Jacobian only then)
        loop = np.r_[tree.loop_rows, np.arange(tree.cs_rows, at.constraint.shape[1])]
        ALZ = at.loop_jacobian @ Z  # (F, m_L, D)
        _, sv, Vt = np.linalg.svd(ALZ)
        rank = int((sv[0] > 1e-9 * max(float(sv[0].max(initial=0.0)), 1e-300)).sum())
        W = np.swapaxes(Vt[:, rank:], 1, 2)
        restore = np.linalg.pinv(ALZ, rcond=1e-9)
        q0 = -(restore @ at.constraint[:, loop, None])[..., 0]
    else:
        W = np.broadcast_to(np.eye(tree.dof), (F, tree.dof, tree.dof))
        q0, restore = np.zeros((F, tree.dof)), None
    Wt = np.swapaxes(W, 1, 2)
    H = _convex(Wt @ H_theta @ W, damping)
    if frozen is not None and frozen.any():
        q0 = np.where(frozen[:, None], 0.0, q0)
    g = (Wt @ (g_theta + (H_theta @ q0[..., None])[..., 0])[..., None])[..., 0]
    b = values + (PZ @ q0[..., None])[..., 0]
    B = PZ @ W
    if frozen is not None and frozen.any():
        H[frozen] = np.abs(np.diagonal(H, axis1=1, axis2=2)).max() * np.eye(H.shape[-1])
        g[frozen], B = 0.0, np.where(frozen[:, None, None], 0.0, B)
    return _Linearization(at, Z, W, q0, H, g, b, B, PZ, H_theta, g_theta, restore, frozen)


def _loop_count(problem, at) -> int:
    """How many rows the tree leaves to close: its loops' and the further equality terms'."""
    return len(problem.tree.loop_rows) + at.constraint.shape[1] - problem.tree.cs_rows


def _objective_curvature(problem, screws: JointScrews, point) -> np.ndarray:
    """The tracking terms' second-order part in joint coordinates (F, D, D): the frames'
    points and axes and the bodies' centres (for the CoM) weighted by the gradient of
    the objective with respect to them (:meth:`JointScrews.curvature`)."""
    S, R, targets = point.state, point.R, point.targets
    at = screws.at(S, R)
    F, D = len(S), problem.tree.dof
    H = np.zeros((F, D, D))
    frames = problem.frame_terms
    if len(frames):
        points, axes = frames.poses(S, R)  # (F, K, 3), (F, K, 3, 3) columns: axes
        force = frames.position_weight * (points - targets.positions)
        H += screws.curvature(at, frames.body, points, force, points=True)
        if frames.orientation_weight.any():
            u = np.swapaxes(axes, -1, -2)  # (F, K, axis, 3)
            pull = frames.orientation_weight[..., None] * (u - np.swapaxes(targets.rotations, -1, -2))
            bodies = np.repeat(frames.body, 3)
            H += screws.curvature(at, bodies, u.reshape(F, -1, 3), pull.reshape(F, -1, 3), points=False)
    com = problem.com_term
    if com is not None:
        force = com.weight * (com.com(S) - targets.com)  # (F, 3)
        per_body = com.fraction[None, :, None] * force[:, None, :]
        H += screws.curvature(at, np.arange(S.shape[1]), S[..., :3], per_body, points=True)
    return H


def _convex(H: np.ndarray, damping: float) -> np.ndarray:
    """The reduced Hessians H (F, d, d) made positive definite: a frame whose Newton
    Hessian has a negative eigenvalue (far from the answer, or a target pulling the
    robot over a ridge) is shifted by it (the inertia correction of interior-point
    methods), then every frame gets ``damping`` (at least 1e-12) times the largest
    diagonal entry of the clip's Hessians on its diagonal."""
    scale = max(float(np.abs(np.diagonal(H, axis1=1, axis2=2)).max(initial=0.0)), 1e-300)
    if not np.isfinite(H).all():  # a diverged iterate: the interior point stops on it
        return H
    lowest = np.linalg.eigvalsh(H)[:, 0]
    shift = np.maximum(-1.1 * lowest, 0.0) + max(damping, 1e-12) * scale
    return H + shift[:, None, None] * np.eye(H.shape[-1])


def _interior_point(
    problem: IKProblem,
    screws: JointScrews,
    targets: Targets,
    states: np.ndarray,
    actuators: np.ndarray,
    families: list[_Rows],
    settings: SpaceTimeSettings,
    frozen: np.ndarray | None = None,
    gentle: bool = False,
    multipliers: np.ndarray | None = None,
) -> SpaceTimeSolution:
    """:func:`solve_spacetime`'s primal-dual interior point on the whole problem under
    the limit rows ``families`` (``frozen``: as :func:`limit_rows`).

    ``gentle``, the second try where the first does not converge (loops, a redundant
    motor, an objective a robot a few centimetres long makes tiny): each row that holds
    at the start gets a barrier weight (:func:`row_stiffness`) so that the barrier moves
    it by a fraction of its bound whatever the objective's scale; a pull back to the
    start (:data:`ANCHOR` of the tracking's stiffness, along every joint coordinate;
    towards the iterate the last barrier problem starts from, so no bias is left) keeps
    redundant motors where they are; and a step that opens a loop is closed again along
    the tree before the line search judges it.

    Every limit row gets a slack s > 0 and a multiplier z > 0. Each iteration
    linearises every frame and takes one Newton step of the barrier problem at barrier
    mu (:meth:`~looprig.core.banded.NewtonSystem.direction`): the slacks and the
    multipliers each at most 99 % of the way to zero, the primal step cut by a line
    search on the l1 merit ``f - mu sum log s + nu_C |C_loops|_1 + nu |G p + s - h|_1``
    (nu above the multipliers seen so far; nu_C above the loops' present ones, falling
    at most tenfold a step). Once the barrier problem is solved to 10 mu, mu drops
    to ``min(mu / 5, mu^1.5)`` (Fiacco and McCormick's monotone rule, as IPOPT's).
    From a warm start (``multipliers`` given: the whole clip after its coarse answer,
    near the central path) each iteration also sets mu by Mehrotra's predictor-corrector
    (Nocedal & Wright, 2nd ed., algorithm 16.4): the complementarity the affine step
    reaches, cubed over mu squared, never above the monotone rule's, and the corrector
    carries the affine step's second-order term: 13 iterations instead of 23 on the
    paper's Boxer clip, whose monotone steps were cut by the fraction to the boundary.
    A Levenberg damping shrinks tenfold after each step taken whole and grows after a
    step the line search cut. Where the longest step opens the loops more than the merit
    allows (a robot with loops, far along a curved path: the Dancer on its dance played
    twice as fast, which took the line search to 1/8 steps and 200 iterations without
    converging), the same Newton system is solved once more with the loops' gap at the
    step's end added (IPOPT's second-order correction) before the step is cut.
    """
    cs, readout, tree = problem.constraints, problem.readout, problem.tree
    F = len(states)
    states = np.array(states, dtype=float)
    values = np.array(actuators, dtype=float)
    reference = Reference(states.copy(), quat_to_matrix(states[..., 3:]), values.copy())

    kin = TreeClip(problem, targets) if tree_path(problem) else None

    def evaluate(S):  # the joints' Jacobian only when the loops ask for it (lazily)
        if kin is not None:
            return kin.evaluate(S)
        return build_step(problem, problem.point(S, targets, reference), constraint_jacobian=False)

    def row_excess(v):
        return np.concatenate([excess(rows, v).ravel() for rows in families]) if families else np.zeros(0)

    barrier = settings.initial_barrier
    rounding = row_rounding(families, values)
    slack = np.maximum(-row_excess(values), settings.initial_slack)
    weight = z = None  # each row's barrier weight and multiplier, set at the first iteration
    displacement = np.zeros((F, tree.dof))  # the gentle pull's: the steps taken since its anchor
    pull = 0.0
    nu_limits = nu_loops = 0.0
    loop_multipliers = None
    damping = settings.initial_damping
    iterations, converged = 0, False
    travelled = np.zeros((F, tree.dof))
    at = evaluate(states)
    tolerance = problem.settings.constraint_tolerance * cs.length_scale
    loops = np.r_[tree.loop_rows, np.arange(tree.cs_rows, at.constraint.shape[1])]
    for _ in range(settings.max_iterations):
        if weight is None and gentle:
            stiffness = _linearize(problem, screws, at, values, None, 0.0, frozen, kin=kin).H_theta
            pull = ANCHOR * max(float(np.abs(np.diagonal(stiffness, axis1=1, axis2=2)).max()), 1e-300)
        lin = _linearize(
            problem,
            screws,
            at,
            values,
            loop_multipliers,
            damping,
            frozen,
            (pull, displacement) if gentle else None,
            kin,
        )
        if not (np.isfinite(lin.H).all() and np.isfinite(lin.g).all()):  # diverged: not converged
            break
        rows = RowSet([_stencil(r, lin.b, lin.B) for r in families], F, lin.W.shape[-1])
        if weight is None:
            weight = row_stiffness(rows, lin.H) if gentle else 1.0
            if multipliers is None:
                z = barrier * weight / slack
            else:  # a warm start: each row's multiplier as given, its slack on the barrier's path
                z = np.maximum(multipliers, barrier * weight)
                slack = np.maximum(-row_excess(values), barrier * weight / z)
        Gz = rows.transpose(z)
        r_d = lin.g + Gz
        r_p = slack - rows.bound  # G u + s - h at u = 0
        mu = float(np.mean(slack * z / weight)) if rows.size else 0.0
        # the tree joints stay as assembled as the start (retract keeps them); the loops close
        assembled = np.abs(at.constraint[:, loops]).max(initial=0.0) <= tolerance
        tight = converged_kkt(r_d, r_p, mu, settings.limit_tolerance, lin.g, Gz)
        # every limit held and the KKT conditions within a thousand times the tolerance: as
        # close as the Newton steps of a nearly flat objective get (a redundant robot's)
        held = float(row_excess(values).max(initial=-np.inf)) <= settings.limit_tolerance
        near = held and converged_kkt(r_d, r_p, mu, 1e3 * settings.limit_tolerance, lin.g, Gz)
        if assembled and (tight or near):
            converged = True
            break
        # the barrier problem at this barrier solved well enough: a smaller barrier
        # (Fiacco-McCormick's monotone rule, as IPOPT's)
        scale = max(1.0, float(np.abs(lin.g).max(initial=0.0)), float(np.abs(Gz).max(initial=0.0)))
        error = max(float(np.abs(r_d).max()) / scale, float(np.abs(r_p).max(initial=0.0)))
        while (
            barrier > settings.limit_tolerance / 10
            and max(error, float(np.abs(slack * z / weight - barrier).max(initial=0.0))) <= 10.0 * barrier
        ):
            barrier = max(settings.limit_tolerance / 10, min(0.2 * barrier, barrier**1.5))
            if barrier == settings.limit_tolerance / 10:  # the last barrier problem: no bias left
                displacement = np.zeros_like(displacement)
        iterations += 1
        if rows.size and multipliers is not None:  # warm: Mehrotra's predictor-corrector
            system = NewtonSystem(lin.H, rows, slack, z)
            du, ds, dz = system.direction(r_d, r_p, slack * z)  # the affine (predictor) step
            reach = (slack + _to_boundary(slack, ds, 1.0) * ds) * (z + _to_boundary(z, dz, 1.0) * dz)
            centred = float(np.mean(reach / weight)) ** 3 / mu**2
            barrier = max(settings.limit_tolerance / 10, min(barrier, centred))
            r_c = slack * z + ds * dz - barrier * weight
            du, ds, dz = system.direction(r_d, r_p, r_c)
        elif rows.size:
            system, r_c = NewtonSystem(lin.H, rows, slack, z), slack * z - barrier * weight
            du, ds, dz = system.direction(r_d, r_p, r_c)
        else:
            du, ds, dz = -np.linalg.solve(lin.H, lin.g[..., None])[..., 0], slack, z
        if not all(np.isfinite(x).all() for x in (du, ds, dz)):  # a singular Newton system
            break  # (not converged: the caller tries its next start)
        boundary = max(0.99, 1.0 - barrier)
        alpha = _to_boundary(slack, ds, boundary)
        alpha_z = _to_boundary(z, dz, boundary)
        theta = lin.q0 + (lin.W @ du[..., None])[..., 0]  # (F, D)
        z_next = z + alpha_z * dz
        force = motor_forces(families, rows.split(z_next), values.shape)
        new_loop_multipliers = _loop_multipliers(problem, lin, theta, force)
        # the merit's penalties: above the multipliers they weigh (l1 exact penalty). The
        # loops' follows their multipliers down (a tenth a step at most): one large estimate
        # far from the answer (1e3 on the Dancer's looped dance, against 0.2 after) kept
        # weighing the loops' second-order gap above the objective's whole decrease, and
        # the line search cut every step to 1/256 for 200 iterations
        nu_limits = max(nu_limits, 1.1 * float(np.abs(z_next).max(initial=0.0)))
        if new_loop_multipliers is not None:
            nu_loops = max(0.1 * nu_loops, 1.1 * float(np.abs(new_loop_multipliers).max(initial=0.0)))

        def merit(
            step_at, v, s, moved, loops=loops, barrier=barrier, nu=(nu_loops, nu_limits), w=(weight, pull)
        ):
            nu_loops, nu_limits = nu
            w, pull = w
            return (
                float(step_at.value.sum())
                + 0.5 * pull * float(np.sum(moved**2))
                - (barrier * float(np.sum(w * np.log(s))) if len(s) else 0.0)
                + nu_loops * float(np.abs(step_at.constraint[:, loops]).sum())
                + nu_limits * float(np.maximum(np.abs(row_excess(v) + s) - rounding, 0.0).sum())
            )

        here = merit(at, values, slack, displacement)
        # the merit's slope along the step: the full step takes the loops' residual and the
        # rows' (the merit's: at the iterate, not r_p, which reads the motors after q0 has
        # restored the loops) to zero, to first order
        slope = (
            float(np.einsum("bd,bd->", lin.g_theta, theta))
            - (barrier * float(np.sum(weight * ds / slack)) if rows.size else 0.0)
            - nu_loops * float(np.abs(at.constraint[:, loops]).sum())
            - nu_limits * float(np.maximum(np.abs(row_excess(values) + slack) - rounding, 0.0).sum())
        )

        def tried(step, slack_step, start=(states, at, values, slack), rates=lin.PZ):
            """The iterate after a step (F, D) of the joint coordinates and (m,) of the slacks."""
            S, at_S, v, s = start
            if kin is not None:  # every motor a tree joint: moved by exactly its step; the
                reached = kin.moved(at_S, step)  # body states are read off once, at the end
                return None, reached, v + (rates @ step[..., None])[..., 0], s + slack_step
            moved = tree.retract(S, at_S.point.R, step)
            if gentle:
                moved, reached = _close_loops(problem, evaluate, moved, loops, tolerance)
            else:
                reached = evaluate(moved)
            return moved, reached, readout.read(moved, previous=v, R=reached.point.R), s + slack_step

        accepted, alpha_max = False, alpha
        for _ in range(settings.max_backtracks):
            trial_states, trial, trial_values, trial_slack = tried(alpha * theta, alpha * ds)
            bar = here + 1e-4 * alpha * min(slope, 0.0) + 1e-13 * abs(here)
            if merit(trial, trial_values, trial_slack, displacement + alpha * theta) <= bar:
                accepted = True
                break
            if alpha == alpha_max and lin.restore is not None and rows.size and not gentle:
                # the longest step opened the loops: once, the same step with their gap at
                # its end restored too (a second-order correction), judged by the same bar
                q0, g, b = lin.corrected(values, trial.constraint[:, loops], alpha)
                rows_c = RowSet([_stencil(r, b, lin.B) for r in families], F, lin.W.shape[-1])
                du_c, ds_c, _ = system.direction(g + Gz, slack - rows_c.bound, r_c)
                alpha_c = _to_boundary(slack, ds_c, boundary)
                theta_c = q0 + (lin.W @ du_c[..., None])[..., 0]
                corrected = tried(alpha_c * theta_c, alpha_c * ds_c)
                if merit(*corrected[1:], displacement + alpha_c * theta_c) <= bar:
                    (trial_states, trial, trial_values, trial_slack), alpha, theta = (
                        corrected,
                        alpha_c,
                        theta_c,
                    )
                    accepted = True
                    break
            alpha *= 0.5
        if not accepted:  # at round-off: converged if the KKT conditions nearly hold
            converged = assembled and converged_kkt(r_d, r_p, mu, 1e3 * settings.limit_tolerance, lin.g, Gz)
            break
        # Levenberg: trusted while the first trial (the longest step inside the orthant) holds
        damping = max(damping / 10.0, 1e-12) if alpha == alpha_max else min(max(damping, 1e-8) * 4.0, 1.0)
        states, values, at = trial_states, trial_values, trial
        displacement = displacement + alpha * theta
        travelled += alpha * theta
        slack = trial_slack
        # the multipliers stay within a factor 1e10 of the barrier's central path
        z = np.clip(z_next, barrier * weight / (1e10 * slack), 1e10 * barrier * weight / slack)
        loop_multipliers = new_loop_multipliers
    shapes = [excess(r, values).shape for r in families]
    sizes = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]
    z_parts = [part.reshape(shape) for part, shape in zip(np.split(z, sizes), shapes, strict=True)]
    s_parts = [part.reshape(shape) for part, shape in zip(np.split(slack, sizes), shapes, strict=True)]
    if kin is not None:  # the body states, and the joints' residual as the other path reports it
        states = at.point.state
        at = build_step(problem, problem.point(states, targets, reference), constraint_jacobian=False)
    return SpaceTimeSolution(
        states,
        values,
        float(at.value.sum()),
        _binding(families, z_parts, s_parts, values.shape),
        np.abs(at.constraint).max(-1, initial=0.0),
        iterations,
        converged,
        travelled=travelled,
        multipliers=z_parts,
    )


def _close_loops(problem, evaluate, states, loops, tolerance: float, steps: int = 3):
    """``states`` (F, n, 7) with their loop rows closed again by up to ``steps``
    Gauss-Newton steps along the tree (minimum norm in joint coordinates, every frame at
    once), and their evaluation; states without loop rows are returned as they are."""
    at = evaluate(states)
    tree = problem.tree
    for _ in range(steps if len(loops) else 0):
        gap = at.constraint[:, loops]
        if np.abs(gap).max(initial=0.0) <= tolerance:
            break
        ALZ = at.loop_jacobian @ tree.joint_basis(states, at.point.R)
        states = tree.retract(states, at.point.R, -(np.linalg.pinv(ALZ, rcond=1e-9) @ gap[..., None])[..., 0])
        at = evaluate(states)
    return states, at


def row_stiffness(rows: RowSet, H: np.ndarray) -> np.ndarray:
    """Each row's barrier weight (m,): ``1 / (c^T H^-1 c)`` for its coefficients c over
    the frames it reads and the Newton Hessians H (F, d, d) there, the force [objective
    per row unit] that moves the row by one unit of its bound. With it the barrier
    parameter is a fraction of the rows' bounds for every family and any objective
    scale: a range row of a robot a few centimetres long and an acceleration row at
    1200 Hz (bound 2e-5 rad) alike. A row that reads no moving frame weighs 1."""
    H_inv = np.linalg.inv(H)
    parts = []
    for f in rows.families:
        K, o = len(f.bound), f.offset
        reach = np.zeros(f.bound.shape)
        for j in range(f.width):
            c = f.dense[:, :, j]  # (K, R, d)
            reach += np.einsum("krd,kde,kre->kr", c, H_inv[o + j : o + j + K], c)
        parts.append(np.where(reach > 0.0, 1.0 / np.where(reach > 0.0, reach, 1.0), 1.0).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def _to_boundary(v: np.ndarray, dv: np.ndarray, fraction: float) -> float:
    """The largest step <= 1 along dv that keeps ``fraction`` of v (m,) positive."""
    shrinking = dv < 0.0
    return min(1.0, float(np.min(-fraction * v[shrinking] / dv[shrinking], initial=np.inf)))


def row_rounding(families: list[_Rows], values: np.ndarray) -> np.ndarray:
    """How much of each limit row's normalised residual (m,) rounding of motor values
    (F, A) makes: a few ulps of the largest value times the stencil's weights over the
    row's bound (an acceleration row at 1200 Hz: about 1e-10)."""
    size = max(float(np.abs(values).max(initial=0.0)), 1.0)
    parts = [
        np.broadcast_to(
            16 * np.finfo(float).eps * size * sum(map(abs, r.stencil)) / r.scale, excess(r, values).shape
        )
        for r in families
    ]
    return np.concatenate([p.ravel() for p in parts]) if parts else np.zeros(0)


def _loop_multipliers(problem, lin: _Linearization, theta: np.ndarray, force: np.ndarray):
    """The loop rows' multipliers (F, m) of the step theta (F, D) under motor forces
    (F, A), for the next model's curvature: the least-squares solution of the step's
    stationarity in joint coordinates, ``g + H theta + PZ^T force + (A_L Z)^T lam = 0``;
    None without loop rows."""
    tree, at = problem.tree, lin.at
    n_loop = _loop_count(problem, at)
    if not n_loop:
        return None
    ALZ = at.loop_jacobian @ lin.Z  # (F, m_L, D)
    residual = lin.g_theta + (lin.H_theta @ theta[..., None])[..., 0] + (force[:, None, :] @ lin.PZ)[:, 0]
    gram = ALZ @ np.swapaxes(ALZ, 1, 2)
    gram += 1e-12 * np.maximum(np.einsum("bii->b", gram), 1.0)[:, None, None] * np.eye(n_loop)
    lam_loop = -np.linalg.solve(gram, (ALZ @ residual[..., None]))[..., 0]
    lam = np.zeros((len(theta), at.constraint.shape[1]))
    lam[:, tree.loop_rows] = lam_loop[:, : len(tree.loop_rows)]
    return lam


def _binding(families: list[_Rows], multipliers, slacks, shape) -> np.ndarray:
    """Per frame and motor, the limit whose active rows (multiplier above slack) carry the
    largest multiplier ("" where none is active)."""
    out = np.full(shape, "", dtype=object)
    best = np.zeros(shape)
    for rows, z, s in zip(families, multipliers, slacks, strict=True):
        z = np.where(z > s, z, 0.0)
        for j in range(len(rows.stencil)):
            offset = rows.first + j
            for r, m in enumerate(rows.motor):
                stronger = np.flatnonzero(z[:, r] > best[offset : offset + rows.runs, m]) + offset
                best[stronger, m] = z[stronger - offset, r]
                out[stronger, m] = rows.quantity
    return out
