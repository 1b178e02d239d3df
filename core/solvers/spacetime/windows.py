"""Which frames of a clip (F frames, motors (F, A) [rad | m]) are solved again to keep
its motor limits (:func:`hold_limits`): windows around the broken limits, grown until
their edges keep the exact answer, spliced back into it; and a clip played in a loop,
in two passes so that the limits hold across its seam.
"""

import dataclasses

import numpy as np

from .records import SpaceTimeClip, SpaceTimeSettings, SpaceTimeSolution
from .rows import STENCILS, excess, limit_rows
from .solve import solve_spacetime

#: The frames around a broken limit first solved again, each side [s]; a window whose
#: edges still move is doubled.
WINDOW_SECONDS = 0.25
#: How far [rad | m] a window's outermost moving frames may end from the exact answer.
WINDOW_EDGE = 1e-6
#: How many frames each side of a loop's seam its end rows read (:func:`_hold_windows`).
SEAM_READ = max(len(stencil) for _, stencil, _ in STENCILS)


def hold_limits(
    clip: SpaceTimeClip, settings: SpaceTimeSettings | None = None, cyclic: bool = False
) -> SpaceTimeSolution | None:
    """The exact answer of ``clip`` (:class:`~.records.SpaceTimeClip`: its states
    (F, n, 7), motors (F, A)) changed where it must be to keep every motor limit: None
    if it keeps them already; else the frames around every broken limit
    (:data:`WINDOW_SECONDS` each side) solved again together by
    :func:`~.solve.solve_spacetime`, two frames past each end kept as they are, the
    windows doubled until their outermost moving frames end within :data:`WINDOW_EDGE`
    of the exact answer (or cover the clip). Frames outside the windows are the exact
    answer, bit for bit; a window that took its turns the other way round
    (:func:`~.starts.rewound_start`) shifts every later motor value by the same whole
    turns.

    cyclic: the clip played in a loop, its first frame one period after its last: the
    limits hold across that seam too (:func:`_hold_cyclic`)."""
    if cyclic and len(clip.actuators) >= 8:
        return _hold_cyclic(clip, settings)
    return _hold_windows(clip, settings)


def _hold_windows(
    clip: SpaceTimeClip, settings, end_rows=True, kept_ends=False, seam: int | None = None
) -> SpaceTimeSolution | None:
    """:func:`hold_limits` of a clip; ``end_rows``: whether its first and last frames are
    a clip's ends (the rows the checks read there: :func:`~.rows.limit_rows`);
    ``kept_ends``: its two outermost frames each side kept as they are (a loop's middle,
    :func:`_hold_cyclic`); ``seam``: the frame where a loop's first frame is, whose end
    rows are held there (:func:`~.rows.limit_rows`; a window that reaches them takes all
    the frames they read)."""
    values = np.asarray(clip.actuators, dtype=float)
    F = len(values)
    ends = (end_rows, end_rows)
    broken = np.zeros(F, bool)
    for rows in limit_rows(clip.motor_limits, F, clip.rate, ends=ends, seam=seam):
        over = (excess(rows, values) > 0.0).any(axis=1)  # (K,)
        for j in range(len(rows.stencil)):
            broken[rows.frames(j)] |= over
    if not broken.any():
        return None
    movable = np.ones(F, bool)
    if kept_ends:
        movable[:2] = movable[-2:] = False
    margin = max(int(np.ceil(WINDOW_SECONDS * clip.rate)), 3)
    start = dataclasses.replace(clip, actuators=values)  # a grown window starts from the last one's answer
    while True:
        window = (np.convolve(broken, np.ones(2 * margin + 1))[margin : margin + F] > 0) & movable
        around = slice(max(seam - SEAM_READ, 0), seam + SEAM_READ) if seam is not None else slice(0)
        if window[around].any():
            window[around] = movable[around]
        sub, frozen = _with_frozen_edges(window)
        at = int(np.searchsorted(sub, seam)) if window[around].any() else None
        solution = solve_spacetime(
            start.take(sub), settings, frozen, (sub[0] == 0 and end_rows, sub[-1] == F - 1 and end_rows), at
        )
        moved = np.abs(solution.actuators - values[sub]).max(axis=1) > WINDOW_EDGE
        edges = frozen | np.r_[frozen[1:], True] | np.r_[True, frozen[:-1]]  # frozen or next to it
        edges &= ~frozen
        grow = (moved & edges & (sub != 0) & (sub != F - 1)).any()
        if not solution.converged or window[movable].all() or not grow:
            break
        margin *= 2
        grown = _spliced(solution, sub, frozen, clip.states, values)
        start = dataclasses.replace(clip, states=grown.states, actuators=grown.actuators)
    return _spliced(solution, sub, frozen, clip.states, values)


def _hold_cyclic(clip: SpaceTimeClip, settings):
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
    values = np.asarray(clip.actuators, dtype=float)
    F = len(values)
    first = _hold_windows(clip, settings, end_rows=False)
    S, V = (clip.states, values) if first is None else (first.states, first.actuators)
    if first is not None and not first.converged:
        return first
    order = np.r_[F // 2 : F, : F // 2]
    turned = _hold_windows(
        dataclasses.replace(clip, states=S, actuators=V).take(order), settings, False, True, F - F // 2
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
