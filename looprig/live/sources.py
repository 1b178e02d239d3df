"""Where a live link reads each frame's motor values: baked curves or the per-frame solver."""

from collections.abc import Callable

import numpy as np

from ..core import ActuatorCurves, LooprigError

#: A source: (frame, payload) -> (A,) motor values [rad | m] in :class:`LiveMotors` order.
Source = Callable[[float, object], np.ndarray]


def curve_source(curves: ActuatorCurves, frame_start: float = 0.0, fps: float | None = None) -> Source:
    """A source reading ``curves`` (linear between samples, held past the ends): frame f is
    time ``times[0] + (f - frame_start) / fps`` [s] (``fps`` default: the curves' own rate, so
    frame f is sample f); the payload is ignored."""
    times, values = np.asarray(curves.times, float), np.asarray(curves.values, float)
    rate = fps or curves.rate_hz or 1.0 / float(np.median(np.diff(times)))

    def values_at(frame: float, payload=None) -> np.ndarray:
        t = times[0] + (frame - frame_start) / rate
        return np.array([np.interp(t, times, values[:, a]) for a in range(values.shape[1])])

    return values_at


class FrameSolver:
    """The per-frame solver (:func:`~looprig.core.solve_ik`) as a live source: a frame's
    targets -> motor values (A,) [rad | m] in ``motors`` order.

    Built once from the robot and a mapping as a retarget builds them (motors, limits,
    welded bodies merged, the mapping's start and held motors), without the terms that
    compare a frame with the previous one (a scrub does not follow the clip's order: the
    link's limited moves keep the servos within their limits). ``samples``: the clip's
    tracks, whose frames the source solves when the payload is None; otherwise the payload
    is the frame's :class:`~looprig.core.IKTargets` (a host that samples its own scene).
    Frame f is the clip's sample ``round(f - frame_start)`` (clamped to the clip).

    With a clip, the first call warms up (:meth:`warm_up`: every frame solved once, in
    order, its state kept as the frame's seed), so each later solve of a frame starts from
    its seed whatever frame came before (a 90-frame jump as a next frame): on the clip's
    own targets it converges where it starts, on a host's edited ones in a few
    iterations (3-4 on Reachy Mini's head moved 2-10 mm); each converged solve becomes the
    frame's new seed. Without a clip, the first frame is solved to full accuracy from the
    start pose (:func:`~looprig.core.solvers.start.solve_first_frame`), every later one
    warm-started from the previous answer.
    """

    def __init__(self, mechanism, mapping, samples=None, frame_start: float = 0.0):
        from ..core.export import DynamixelSettings as _Settings
        from ..core.model.rigid import RigidGroups
        from ..core.retarget.problem import build_problem, with_motors
        from ..core.retarget.targets import held_values, target_arrays
        from ..core.solvers.start import start_state

        mapping = mapping.named_for(mechanism)
        groups = RigidGroups(mapping.limited(with_motors(mechanism, mapping.motors)))
        self.mechanism, self.mapping = groups.solver, mapping
        self.state = start_state(self.mechanism, mapping.start, None)
        held = held_values(self.mechanism, mapping, self.state)
        self.problem = build_problem(self.mechanism, mapping, first_frame=True, held=held)
        self.actuators = self.problem.readout.read(self.state)
        self.curves = ActuatorCurves.from_mechanism(
            self.mechanism, np.tile(self.actuators, (2, 1)), mapping.rate
        )
        self.dynamixel = _Settings.from_mechanism(self.mechanism)
        self.frame_start = float(frame_start)
        self.first = True
        self.targets = None
        self.seeds: np.ndarray | None = None  # (F, n, 7) each clip frame's state, after warm_up
        self.seed_actuators: np.ndarray | None = None  # (F, A) [rad | m] their motor values
        if samples is not None:
            samples = samples.resampled(mapping.rate)
            self.targets = target_arrays(mapping, samples)

    def targets_of(self, samples):
        """The :class:`~looprig.core.IKTargets` of the first frame of ``samples``
        (:class:`~looprig.core.retarget.TrackSamples`, e.g. a host's scene read at its frame)."""
        from ..core.retarget.targets import target_arrays

        return self._frame_targets(target_arrays(self.mapping, samples), 0)

    @staticmethod
    def _frame_targets(arrays, f: int):
        """Sample ``f``'s :class:`~looprig.core.IKTargets` of (positions, rotations, com) arrays."""
        from ..core import IKTargets

        positions, rotations, com = arrays
        return IKTargets(positions[f], rotations[f], None if com is None else com[f])

    @property
    def frames(self) -> int:
        """Frames of the clip the solver was given (0 without one)."""
        return 0 if self.targets is None else len(self.targets[0])

    def warm_up(self) -> None:
        """Solve the clip's frames in order (the first to full accuracy from the start pose,
        each later one from the one before) and keep each one's state and motor values as
        its seed; with the mapping's solver settings about 2 ms a frame on Reachy Mini (a
        10 s clip at 100 Hz: 2 s). Once; without a clip, nothing to do."""
        from ..core import solve_ik
        from ..core.maths.linalg import single_threaded_blas
        from ..core.solvers.start import solve_first_frame

        if self.seeds is not None or self.targets is None:
            return
        seeds = np.empty((self.frames, *self.state.shape))
        actuators = np.empty((self.frames, len(self.actuators)))
        with single_threaded_blas():
            for f in range(self.frames):
                targets = self._frame_targets(self.targets, f)
                if f == 0:
                    result = solve_first_frame(
                        self.problem, targets, self.state, self.mapping.reach_tolerance
                    )
                else:
                    result = solve_ik(
                        self.problem, targets, seeds[f - 1], previous_actuators=actuators[f - 1]
                    )
                seeds[f], actuators[f] = result.state, result.actuators
        self.seeds, self.seed_actuators, self.first = seeds, actuators, False

    def __call__(self, frame: float, payload=None) -> np.ndarray:
        from ..core import solve_ik
        from ..core.maths.linalg import single_threaded_blas
        from ..core.solvers.start import solve_first_frame

        self.warm_up()
        f = int(np.clip(round(frame - self.frame_start), 0, max(self.frames - 1, 0)))
        if payload is None:
            if self.targets is None:
                raise LooprigError("the live solver has no clip: give each frame's targets")
            payload = self._frame_targets(self.targets, f)
        with single_threaded_blas():
            if self.seeds is not None:
                result = solve_ik(
                    self.problem, payload, self.seeds[f], previous_actuators=self.seed_actuators[f]
                )
                if result.converged:
                    self.seeds[f], self.seed_actuators[f] = result.state, result.actuators
            elif self.first:
                result = solve_first_frame(self.problem, payload, self.state, self.mapping.reach_tolerance)
                self.first = False
            else:
                result = solve_ik(self.problem, payload, self.state, previous_actuators=self.actuators)
        self.state, self.actuators = result.state, result.actuators
        return result.actuators
