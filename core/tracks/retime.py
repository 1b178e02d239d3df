"""Retiming a solved clip: time stretched where a motor limit binds, pinned frames kept.

Timing ``stretch`` (:class:`~looprig.core.retarget.settings.RetargetSettings`) plays the
solved path slower where a motor's speed or acceleration limit binds instead of
leaving the path. This module is the pure-numpy part: the clip's stretches
between pins, the clip time reached at each new time from a path-speed profile,
the catch-up of a stretch that ends at a pin, and the clip's tracks sampled along
the new timing. The profiles themselves (the fastest path speed under every
motor's speed and acceleration limit, capped) come from TOPP-RA in
:mod:`looprig.retime` (toppra is an extra; core does not import it).

Path speed ``sd = d(clip time) / d(new time)``: 1 plays the clip as animated, 0.5
at half speed. Between two gridpoints of a profile the path acceleration is
constant (TOPP-RA's discretisation), so the new time of a segment of clip time
``ds`` is ``2 ds / (sd_i + sd_(i+1))``.

Stretches: the clip from its start to the first pin, from pin to pin, and from the
last pin to its end. A stretch that ends at a pin keeps its duration: where a
limit binds it slows, and the rest of it plays faster (at most
:data:`MAX_CATCH_UP` times) to reach the pin on time; a stretch that cannot
(even the fastest timing under the cap is too long) keeps its timing and leaves
the limits to the space-time solve (``held_in_space``). The last stretch, unless
a pin sits at the clip's end, only slows: the clip grows longer.
"""

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import LooprigError
from .samples import TrackSamples

#: Most a stretch that ends at a pin may speed up the parts where no limit binds to
#: reach the pin on time (path speed cap); beyond it the stretch keeps its timing.
MAX_CATCH_UP = 4.0
#: A catch-up is searched until the stretch's duration is within this fraction of its
#: original one (then scaled to it exactly).
DURATION_TOLERANCE = 1e-4
#: A last stretch that ends within this fraction of a frame past a whole frame ends on
#: that frame (played faster by at most this much over the stretch).
FRAME_TOLERANCE = 1e-3
#: Path speeds within this of 1 everywhere leave the clip's timing as it is.
SPEED_TOLERANCE = 1e-6


class RetimeError(LooprigError, ValueError):
    """A pin outside the clip, or a clip that cannot be retimed."""


@dataclass(frozen=True)
class SpeedProfile:
    """Path speed over one stretch.

    clip_times: (N,) [s] increasing gridpoints (clip time); speed: (N,) path speed
    ``d(clip time)/d(new time)`` at them (> 0 except possibly at an end), the path
    acceleration constant between gridpoints.
    """

    clip_times: np.ndarray
    speed: np.ndarray

    @classmethod
    def as_animated(cls, start: float, end: float) -> "SpeedProfile":
        """The clip's own timing over [start, end] [s]: path speed 1."""
        return cls(np.array([start, end], float), np.ones(2))

    def segment_durations(self) -> np.ndarray:
        """(N-1,) [s] the new time of each segment between gridpoints."""
        ds = np.diff(self.clip_times)
        return 2.0 * ds / (self.speed[:-1] + self.speed[1:])

    @property
    def duration(self) -> float:
        """The stretch's new duration [s]."""
        return float(self.segment_durations().sum())

    def scaled(self, factor: float) -> "SpeedProfile":
        """Every path speed times ``factor``: the duration divided by it."""
        return SpeedProfile(self.clip_times, self.speed * factor)

    def clip_time(self, t: np.ndarray) -> np.ndarray:
        """(K,) [s] the clip time reached ``t`` (K,) [s] after the stretch's new start
        (clipped to the stretch)."""
        durations = self.segment_durations()
        ends = np.concatenate([[0.0], np.cumsum(durations)])
        t = np.clip(np.asarray(t, dtype=float), 0.0, ends[-1])
        i = np.clip(np.searchsorted(ends, t, side="right") - 1, 0, len(durations) - 1)
        tau = t - ends[i]
        ds = np.diff(self.clip_times)[i]
        v0, v1 = self.speed[i], self.speed[i + 1]
        acceleration = (v1**2 - v0**2) / (2.0 * ds)
        s = self.clip_times[i] + v0 * tau + 0.5 * acceleration * tau**2
        return np.clip(s, self.clip_times[i], self.clip_times[i + 1])


@dataclass(frozen=True)
class Stretch:
    """One stretch of a retimed clip.

    start, end: [s] its ends in clip time (pins or the clip's ends); new_start,
    new_end: [s] the same instants in the retimed clip; pinned: whether its end is
    a pin (its duration is kept); catch_up: the path-speed cap it needed (1: none;
    above 1 the parts where no limit binds play that much faster); slowest: its least
    path speed (1: never slowed); held_in_space: its limits could not be kept by time
    (timing kept, the space-time solve holds them).
    """

    start: float
    end: float
    new_start: float
    new_end: float
    pinned: bool
    catch_up: float = 1.0
    slowest: float = 1.0
    held_in_space: bool = False

    @property
    def time_factor(self) -> float:
        """New duration over the original one (1: the same length; 2: twice as long)."""
        return (self.new_end - self.new_start) / (self.end - self.start)

    def to_dict(self) -> dict:
        return {
            "start_s": self.start,
            "end_s": self.end,
            "new_start_s": self.new_start,
            "new_end_s": self.new_end,
            "pinned": self.pinned,
            "time_factor": self.time_factor,
            "catch_up": self.catch_up,
            "slowest": self.slowest,
            "held_in_space": self.held_in_space,
        }


@dataclass(frozen=True)
class Retiming:
    """A clip's new timing: its stretches and one speed profile each, pins (P,) [s]."""

    stretches: tuple[Stretch, ...]
    profiles: tuple[SpeedProfile, ...]
    pins: tuple[float, ...]

    @property
    def start(self) -> float:
        return self.stretches[0].start

    @property
    def duration(self) -> float:
        """The retimed clip's duration [s]."""
        return self.stretches[-1].new_end - self.start

    @property
    def is_identity(self) -> bool:
        """Whether every stretch plays as animated."""
        return all(np.all(np.abs(p.speed - 1.0) <= SPEED_TOLERANCE) for p in self.profiles)

    def clip_times(self, times: np.ndarray) -> np.ndarray:
        """(K,) [s] the clip time shown at each retimed time ``times`` (K,) [s]."""
        times = np.asarray(times, dtype=float)
        out = np.empty_like(times)
        starts = np.array([s.new_start for s in self.stretches])
        which = np.clip(np.searchsorted(starts, times, side="right") - 1, 0, len(starts) - 1)
        for k, (stretch, profile) in enumerate(zip(self.stretches, self.profiles, strict=True)):
            inside = which == k
            out[inside] = profile.clip_time(times[inside] - stretch.new_start)
        return out

    def samples(self, samples: TrackSamples, rate: float) -> TrackSamples:
        """The clip's tracks along the new timing, at ``rate`` [Hz] from the clip's start."""
        count = int(np.floor(self.duration * rate + 1e-9)) + 1
        times = self.start + np.arange(count) / rate
        return samples.at(self.clip_times(times), times)

    def to_dict(self) -> dict:
        """JSON-ready: the pins [s], the durations [s] and each stretch (:meth:`Stretch.to_dict`)."""
        return {
            "pins_s": list(self.pins),
            "original_duration_s": self.stretches[-1].end - self.start,
            "duration_s": self.duration,
            "stretches": [s.to_dict() for s in self.stretches],
        }


def pin_times(samples: TrackSamples, frames: Sequence[float], fps: float | None = None) -> tuple[float, ...]:
    """Clip times [s] of frame numbers ``frames`` of a clip whose frame ``f`` is at
    ``f / fps`` (a tracks file's numbering; ``fps`` default: the samples' spacing)."""
    times = np.asarray(samples.times, dtype=float)
    if fps is None:
        if len(times) < 2:
            raise RetimeError("a clip of one sample has no frame to pin")
        fps = 1.0 / float(np.median(np.diff(times)))
    first, last = times[0] * fps, times[-1] * fps
    out = []
    for frame in frames:
        if not np.isfinite(frame) or not first - 1e-6 <= frame <= last + 1e-6:
            raise RetimeError(f"pin at frame {frame:g}: outside the clip (frames {first:g}..{last:g})")
        out.append(float(np.clip(frame / fps, times[0], times[-1])))
    return tuple(out)


def stretches_of(start: float, end: float, pins: Sequence[float]) -> list[tuple[float, float, bool]]:
    """The clip [start, end] [s] cut at ``pins`` [s]: (start, end, pinned) per stretch;
    a pin at the clip's start changes nothing (the clip starts there), one at its end
    pins the last stretch."""
    cuts = []
    for pin in sorted(set(float(p) for p in pins)):
        if not np.isfinite(pin) or not start <= pin <= end:
            raise RetimeError(f"pin at {pin:g} s: outside the clip ({start:g}..{end:g} s)")
        if pin > start and (not cuts or pin > cuts[-1]):
            cuts.append(pin)
    ends = [start, *cuts] + ([] if cuts and cuts[-1] == end else [end])
    pinned_end = bool(cuts) and cuts[-1] == end
    last = len(ends) - 2
    return [(a, b, k < last or pinned_end) for k, (a, b) in enumerate(itertools.pairwise(ends))]


#: profile(start, end, cap, speed_start, speed_end) -> the fastest profile over [start,
#: end] [s] with path speed at most ``cap``, from ``speed_start`` to ``speed_end``, or None.
ProfileSolver = Callable[[float, float, float, float, float], SpeedProfile | None]


def plan_retiming(
    start: float,
    end: float,
    pins: Sequence[float],
    profile: ProfileSolver,
    speed_at: Callable[[float], float],
    rate: float | None = None,
) -> Retiming:
    """The new timing of a clip [start, end] [s] with ``pins`` [s] (see the module docstring).

    profile: the fastest path-speed profile under the motors' limits (TOPP-RA); speed_at(t):
    the path speed the clip can keep at clip time t [s] (at most 1), where stretches meet.
    rate: the clip's sample rate [Hz]; a last stretch that grows is slowed a little more,
    by less than one frame, to end on a whole frame (the clip's last pose, sampled).
    """
    stretches, profiles = [], []
    new_start, speed_start = start, min(1.0, speed_at(start))
    for a, b, pinned in stretches_of(start, end, pins):
        speed_end = min(1.0, speed_at(b))
        found, cap, held = _stretch_profile(a, b, pinned, profile, speed_start, speed_end)
        if rate is not None and not pinned:
            frames = np.ceil((new_start - start + found.duration) * rate - FRAME_TOLERANCE)
            found = found.scaled(found.duration / (start + frames / rate - new_start))
        new_end = new_start + (b - a if pinned else found.duration)
        stretches.append(Stretch(a, b, new_start, new_end, pinned, cap, float(found.speed.min()), held))
        profiles.append(found)
        # a stretch that kept its timing may end faster than the next can start
        new_start, speed_start = new_end, min(float(found.speed[-1]), speed_end)
    return Retiming(tuple(stretches), tuple(profiles), tuple(sorted(set(float(p) for p in pins))))


def _stretch_profile(a, b, pinned, profile: ProfileSolver, speed_start, speed_end):
    """(profile, catch-up cap, held in space) of the stretch [a, b] [s]: slowed where a
    limit binds; a pinned one sped up elsewhere to last exactly ``b - a``."""
    slowest = profile(a, b, 1.0, speed_start, speed_end)
    if slowest is None:
        return SpeedProfile.as_animated(a, b), 1.0, True
    if not pinned:
        return slowest, 1.0, False
    duration = b - a
    if slowest.duration <= duration * (1.0 + DURATION_TOLERANCE):
        return slowest.scaled(slowest.duration / duration), 1.0, False
    fastest = profile(a, b, MAX_CATCH_UP, speed_start, speed_end)
    if fastest is None or fastest.duration > duration:
        return SpeedProfile.as_animated(a, b), 1.0, True
    low, high, found = 1.0, MAX_CATCH_UP, fastest  # duration(cap) decreases with the cap
    while abs(found.duration - duration) > DURATION_TOLERANCE * duration and high - low > 1e-9:
        cap = 0.5 * (low + high)
        trial = profile(a, b, cap, speed_start, speed_end)
        if trial is not None and trial.duration <= duration:
            high, found = cap, trial
        else:
            low = cap
    return found.scaled(found.duration / duration), high, False
