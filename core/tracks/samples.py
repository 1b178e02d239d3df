"""Tracked motion as the solver reads it: named world transforms sampled over time."""

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline


@dataclass
class TrackSamples:
    """World transforms of named tracks, in looprig's convention (metres, z up).

    times: (F,) [s], increasing; positions[name]: (F, 3) [m];
    rotations[name]: (F, 3, 3), columns = the track's axes in world.
    """

    times: np.ndarray
    positions: dict[str, np.ndarray]
    rotations: dict[str, np.ndarray]

    def resampled(self, rate: float) -> "TrackSamples":
        """Cubic splines for positions, C2 rotation splines for orientations; a clip
        already sampled at ``rate`` [Hz] is itself (the splines pass through its samples)."""
        times = np.asarray(self.times, dtype=float)
        if len(times) < 2:
            return self
        count = int(np.floor((times[-1] - times[0]) * rate + 1e-9)) + 1
        grid = times[0] + np.arange(count) / rate
        if count == len(times) and np.abs(grid - times).max() <= 1e-9 / rate:
            return self
        return self.at(grid)

    def at(self, clip_times: np.ndarray, times: np.ndarray | None = None) -> "TrackSamples":
        """The tracks at ``clip_times`` (K,) [s] of this clip (the same splines as
        :meth:`resampled`), given the sample times ``times`` (K,) [s] (default: the same)."""
        source = np.asarray(self.times, dtype=float)
        clip_times = np.asarray(clip_times, dtype=float)
        positions = {n: CubicSpline(source, p, axis=0)(clip_times) for n, p in self.positions.items()}
        rotations = {
            n: RotationSpline(source, Rotation.from_matrix(R))(clip_times).as_matrix()
            for n, R in self.rotations.items()
        }
        return TrackSamples(clip_times if times is None else np.asarray(times, float), positions, rotations)
