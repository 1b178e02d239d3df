"""Clips played in sequence: one clip, with a transition of a given length between each pair.

:func:`chain_clips` lays the clips end to end on one time line at the solve rate,
each transition ``transition`` seconds long (rounded to whole frames), and fills
each transition's tracks with a quintic Hermite from the end of one clip to the
start of the next: positions with their velocity and acceleration at both ends
(so the targets are continuous to the second derivative across the seams),
orientations as a rotation vector from the end pose to the start pose with the
body angular velocity at both ends. The chained clip is then retargeted like any
clip: with ``limit_mode`` hold (the default) every motor limit is held over the
whole time line, so no chained pair asks more than the motors give, and where the
transition's blended targets are too fast the robot leaves them. A transition's
targets are a blend nobody animated: its frames are reported as ``transition``
(:meth:`Chain.transition_frames`), never as limited or unreachable.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

from ..errors import LooprigError
from .samples import TrackSamples


class ChainError(LooprigError, ValueError):
    """Clips that cannot be chained: too few, tracks that differ, a bad transition length."""


@dataclass(frozen=True)
class ChainPart:
    """One part of a chained clip: a clip (``name``) or a transition, from ``start`` to
    ``end`` [s] on the chained time line."""

    name: str
    kind: str  # "clip" or "transition"
    start: float
    end: float

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "start_s": self.start, "end_s": self.end}


@dataclass
class Chain:
    """Clips laid end to end with transitions: the samples (at the solve rate) and its parts."""

    samples: TrackSamples
    parts: tuple[ChainPart, ...]

    def transition_frames(self, times: np.ndarray) -> np.ndarray:
        """(F,) bool: the frames at ``times`` (F,) [s] strictly inside a transition."""
        times = np.asarray(times, dtype=float)
        inside = np.zeros(times.shape, bool)
        for part in self.parts:
            if part.kind == "transition":
                inside |= (times > part.start + 1e-9) & (times < part.end - 1e-9)
        return inside

    def release(self, result) -> int:
        """Mark the transition frames of ``result`` (a
        :class:`~looprig.core.retarget.RetargetResult` of :attr:`samples`) neither limited
        nor unreachable: their targets are a blend nobody animated. Returns their count."""
        inside = self.transition_frames(result.times)
        result.unreachable = result.unreachable & ~inside
        if result.limited is not None:
            result.limited = result.limited & ~inside
        return int(inside.sum())

    def to_dict(self) -> dict:
        return {"parts": [p.to_dict() for p in self.parts]}


def _quintic(p0, v0, a0, p1, v1, a1, T: float, t: np.ndarray) -> np.ndarray:
    """The quintic with value, first and second derivative (p, v, a) at 0 and T, at
    times t (K,) in [0, T]; p, v, a (D,) -> (K, D)."""
    # coefficients c0..c5 of sum c_k t^k: the standard Hermite quintic, solved as a 6x6 system
    rows = np.array(
        [
            [1, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0],
            [0, 0, 2, 0, 0, 0],
            [1, T, T**2, T**3, T**4, T**5],
            [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4],
            [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3],
        ],
        float,
    )
    c = np.linalg.solve(rows, np.stack([p0, v0, a0, p1, v1, a1]))  # (6, D)
    return np.vander(t, 6, increasing=True) @ c


def _body_rate(R: np.ndarray, rate: float, at_end: bool) -> np.ndarray:
    """Body angular velocity (3,) [rad/s] at the first or last of rotations R (K, 3, 3)
    sampled at ``rate`` [Hz]: one frame's turn."""
    if len(R) < 2:
        return np.zeros(3)
    a, b = (R[-2], R[-1]) if at_end else (R[0], R[1])
    return Rotation.from_matrix(a.T @ b).as_rotvec() * rate


def chain_clips(
    clips: Sequence[TrackSamples],
    transition: float | Sequence[float],
    rate: float,
    names: Sequence[str] | None = None,
) -> Chain:
    """The clips played in sequence with ``transition`` [s] between each pair (one length,
    or one per pair), sampled at ``rate`` [Hz] (see the module docstring); every clip must
    have the same tracks. names: one per clip, for the report (default ``clip 1``, ...)."""
    names = list(names) if names is not None else [f"clip {k + 1}" for k in range(len(clips))]
    if len(clips) < 2:
        raise ChainError(f"a chain needs two or more clips, got {len(clips)}")
    if len(names) != len(clips):
        raise ChainError(f"{len(names)} names for {len(clips)} clips")
    lengths = np.broadcast_to(np.asarray(transition, dtype=float), (len(clips) - 1,))
    for k, length in enumerate(lengths):
        if not np.isfinite(length) or length <= 0.0:
            raise ChainError(
                f"{names[k]} -> {names[k + 1]}: a transition lasts a positive number of seconds, "
                f"got {length:g}"
            )
    steps_of = [max(2, round(length * rate)) for length in lengths]  # at least one frame between
    tracks = set(clips[0].positions)
    for name, clip in zip(names[1:], clips[1:], strict=True):
        if set(clip.positions) != tracks:
            missing, extra = sorted(tracks - set(clip.positions)), sorted(set(clip.positions) - tracks)
            raise ChainError(
                f"{name}: its tracks differ from {names[0]}'s "
                f"(missing {missing or 'none'}, extra {extra or 'none'})"
            )
    parts, pieces, t0 = [], [], float(clips[0].times[0])
    for k, (name, clip) in enumerate(zip(names, clips, strict=True)):
        sampled = clip.resampled(rate) if len(clip.times) > 1 else clip
        times = t0 + (np.asarray(sampled.times, float) - sampled.times[0])
        pieces.append(TrackSamples(times, sampled.positions, sampled.rotations))
        parts.append(ChainPart(name, "clip", float(times[0]), float(times[-1])))
        if k + 1 < len(clips):
            steps = steps_of[k]
            gap = _transition(clip, sampled, clips[k + 1], rate, steps, float(times[-1]))
            pieces.append(gap)
            parts.append(
                ChainPart(
                    f"{name} -> {names[k + 1]}",
                    "transition",
                    float(times[-1]),
                    float(times[-1]) + steps / rate,
                )
            )
            t0 = float(times[-1]) + steps / rate
    samples = TrackSamples(
        np.concatenate([p.times for p in pieces]),
        {n: np.concatenate([p.positions[n] for p in pieces]) for n in tracks},
        {n: np.concatenate([p.rotations[n] for p in pieces]) for n in tracks},
    )
    return Chain(samples, tuple(parts))


def _transition(
    clip: TrackSamples, sampled: TrackSamples, following: TrackSamples, rate: float, steps: int, start: float
) -> TrackSamples:
    """The frames strictly between the end of ``clip`` (``sampled`` at ``rate``) and the start
    of ``following``: ``steps - 1`` of them from ``start`` [s] on."""
    T = steps / rate
    t = np.arange(1, steps) / rate
    positions, rotations = {}, {}
    after = following.resampled(rate) if len(following.times) > 1 else following
    for name in clip.positions:
        ends = []
        for source, at in ((clip, sampled.times[-1]), (following, following.times[0])):
            if len(source.times) > 1:
                spline = CubicSpline(source.times, source.positions[name], axis=0)
                ends.append((spline(at), spline(at, 1), spline(at, 2)))
            else:
                p = source.positions[name][0]
                ends.append((p, np.zeros(3), np.zeros(3)))
        (p0, v0, a0), (p1, v1, a1) = ends
        positions[name] = _quintic(p0, v0, a0, p1, v1, a1, T, t)
        R0, R1 = sampled.rotations[name][-1], after.rotations[name][0]
        turn = Rotation.from_matrix(R0.T @ R1).as_rotvec()
        w0 = _body_rate(sampled.rotations[name], rate, at_end=True)
        w1 = _body_rate(after.rotations[name], rate, at_end=False)
        r = _quintic(np.zeros(3), w0, np.zeros(3), turn, w1, np.zeros(3), T, t)
        rotations[name] = R0 @ Rotation.from_rotvec(r).as_matrix()
    return TrackSamples(start + t, positions, rotations)
