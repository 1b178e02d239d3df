"""The motor limits as rows over a clip's frames: each finite range, speed and
acceleration limit of each motor, held a hair inside (:func:`held_limits`), as
one-sided stencil rows (:data:`STENCILS`, :func:`limit_rows`) over motor values (F, A)
[rad | m], normalised by their bounds (a speed row's ``v / rate``), and what the
interior point reads off them: how far each row is past its bound
(:func:`excess`), its QP rows for motors linear in the unknowns (:func:`stencil_rows`),
its multipliers as forces on the motors (:func:`motor_forces`) and the limit that binds
each motor (:func:`binding_limits`).
"""

from dataclasses import dataclass

import numpy as np

from ...terms.limits import ActuatorLimits
from ..banded import StencilRows

#: The motor rows: (quantity, stencil over consecutive frames, where it applies: at
#: every run of frames, or at the clip's first or last), each bound by the quantity's
#: limit times 1, 1/rate or 1/rate^2. They are the differences the limit checks read
#: (:data:`~looprig.core.curves.actuator_curves.DERIVATIVE`): inside the clip a central velocity is the
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


def held_limits(limits: ActuatorLimits, margin: float) -> ActuatorLimits:
    """The limits :func:`~.solve.solve_spacetime` holds: ``limits`` moved inwards by
    ``margin`` (:attr:`~.records.SpaceTimeSettings.margin`), speeds and accelerations
    times 1 - margin, each finite range's ends by margin times its span."""
    span = np.where(np.isfinite(limits.upper - limits.lower), limits.upper - limits.lower, 0.0)
    return ActuatorLimits(
        limits.lower + margin * span,
        limits.upper - margin * span,
        limits.velocity * (1.0 - margin),
        limits.acceleration * (1.0 - margin),
    )


@dataclass
class LimitRows:
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
) -> list[LimitRows]:
    """Every finite limit of every motor as one-sided stencil rows over ``frames``
    (:data:`STENCILS`; the end rows only at the ``ends`` (first, last) that are the
    clip's, and only where the clip is longer than their stencil, as the checks read the
    ends then). ``frozen`` (F,) bool: frames that keep their values; a run of frozen
    frames alone is no row (:attr:`LimitRows.live`). ``seam``: where a loop's first frame
    is, inside these frames (:func:`~.windows._hold_cyclic`): the end rows of the clip's
    first frame from there on and of its last before, where they fit."""
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
            rows = LimitRows(quantity, stencil, first, runs, motor.astype(int), sign, bound, norm)
            if frozen is not None:
                rows.live = ~np.all([frozen[rows.frames(j)] for j in range(S)], axis=0)
            families.append(rows)
    return families


def _runs(rows: LimitRows, values: np.ndarray) -> np.ndarray:
    """The stencil of ``rows`` applied to each channel's motor (K, R) of values (F, A)."""
    return sum(w * values[rows.frames(j)][:, rows.motor] for j, w in enumerate(rows.stencil))


def excess(rows: LimitRows, values: np.ndarray) -> np.ndarray:
    """How far each row is past its bound at motor values (F, A), normalised (K, R); a
    row that reads frozen frames alone is held at -1 (inside)."""
    out = (rows.sign * _runs(rows, values) - rows.bound) / rows.scale
    return out if rows.live is None else np.where(rows.live[:, None], out, -1.0)


def stencil_rows(rows: LimitRows, b: np.ndarray, B: np.ndarray) -> StencilRows:
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


def motor_forces(families: list[LimitRows], multipliers: list[np.ndarray], shape) -> np.ndarray:
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


def row_rounding(families: list[LimitRows], values: np.ndarray) -> np.ndarray:
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


def binding_limits(families: list[LimitRows], multipliers, slacks, shape) -> np.ndarray:
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
