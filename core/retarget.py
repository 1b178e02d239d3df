"""Retargeting: a clip of tracked frames + a mapping -> robot motion and motor curves.

The clip is resampled to the solve rate (cubic splines for positions,
rotation splines for orientations; the paper samples its input at 1200 Hz),
then every frame is solved by the state-based IK, warm-started from the
previous frame, whose state is also the regularizers' reference. Every frame
comes out assembled; frames whose targets could not be met are flagged.
"""

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline

from .curves import ActuatorCurves, all_violations
from .errors import LooprigError, TargetError, did_you_mean
from .ik import IKProblem, IKSettings, IKTargets, solve_ik
from .linalg import single_threaded_blas
from .mechanism import Mechanism
from .rotations import quat_to_matrix
from .terms import ComObjective, FrameObjective, Regularization, velocity_threshold

MAPPING_VERSION = 1


class RetargetCancelled(LooprigError):
    """The caller's ``cancel`` callback asked to stop."""


@dataclass(frozen=True)
class TargetSpec:
    """One target: the track ``track`` drives the mechanism frame (or body) ``frame``.

    offset_position (3,) [m] and offset_rotation (4,) wxyz place the target in the
    track's local frame (``T_track_target``), e.g. to line up a hand bone with the
    robot's tool frame. Weights as in :class:`FrameObjective`.
    """

    track: str
    frame: str
    position_weight: tuple[float, float, float] = (1.0, 1.0, 1.0)
    orientation_weight: tuple[float, float, float] = (0.0, 0.0, 0.0)
    offset_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    offset_rotation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class SupportPhase:
    """During [start, end] [s] the CoM target is the centroid of these frames' targets
    (the frames must be targets of the mapping, e.g. the feet in contact)."""

    start: float
    end: float
    frames: tuple[str, ...]


@dataclass(frozen=True)
class ComSpec:
    """Centre-of-mass objective: follow ``track``'s position, or keep the CoM over the
    support given by ``support`` phases (the paper's walker). Weights per world axis;
    with z up, (w, w, 0) leaves the height free."""

    weight: tuple[float, float, float] = (1.0, 1.0, 0.0)
    track: str | None = None
    support: tuple[SupportPhase, ...] = ()


@dataclass(frozen=True)
class RetargetMapping:
    """How a clip drives a mechanism.

    rate: solve rate [Hz]; the clip is resampled to it.
    state_weight, velocity_weight: regularizer weights (paper IV.C-D).
    max_angular_velocity: body angular velocity [rad/s] above which the velocity
    barrier acts (its threshold is derived for ``rate``); None disables the barrier.
    actuator_weight, limit_fraction, position_margin: barriers that keep each
    actuator inside its position range and under ``limit_fraction`` of its velocity
    limit; acceleration_weight: a smoothness cost on actuator accelerations (see
    :class:`~looprig.core.terms.Regularization`).
    reach_tolerance: a frame whose position error exceeds it [m] is flagged unreachable.
    """

    targets: tuple[TargetSpec, ...]
    com: ComSpec | None = None
    rate: float = 1200.0
    state_weight: float = 1e-4
    velocity_weight: float = 0.0
    max_angular_velocity: float | None = None
    actuator_weight: float = 0.0
    acceleration_weight: float = 0.0
    limit_fraction: float = 0.9
    position_margin: float = 0.05
    reach_tolerance: float = 1e-4

    def regularization(self) -> Regularization:
        body_barrier = self.max_angular_velocity is not None and self.velocity_weight > 0.0
        return Regularization(
            state_weight=self.state_weight,
            velocity_weight=self.velocity_weight if body_barrier else 0.0,
            velocity_threshold=velocity_threshold(self.max_angular_velocity, self.rate)
            if body_barrier
            else 1.0,
            actuator_weight=self.actuator_weight,
            acceleration_weight=self.acceleration_weight,
            limit_fraction=self.limit_fraction,
            position_margin=self.position_margin,
            rate=self.rate,
        )

    # ----------------------------------------------------------------- file form
    def to_dict(self) -> dict:
        data = asdict(self)
        data["version"] = MAPPING_VERSION
        return data

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "mapping") -> "RetargetMapping":
        """Build from the JSON form (see ``docs/retarget.md``); errors name ``source``."""
        try:
            version = data.get("version", MAPPING_VERSION)
            if version != MAPPING_VERSION:
                raise TargetError(f"{source}: unsupported mapping version {version!r}")
            targets = tuple(TargetSpec(**_tuples(t)) for t in data["targets"])
            com = None
            if data.get("com") is not None:
                c = dict(data["com"])
                c["support"] = tuple(SupportPhase(**_tuples(p)) for p in c.get("support", ()))
                com = ComSpec(**_tuples(c))
            rest = {k: v for k, v in data.items() if k not in ("targets", "com", "version")}
            return cls(targets=targets, com=com, **rest)
        except (KeyError, TypeError) as error:
            raise TargetError(f"{source}: malformed mapping ({error})") from None

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.to_dict(), file, indent=2)

    @classmethod
    def load(cls, path) -> "RetargetMapping":
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, json.JSONDecodeError) as error:
            raise TargetError(f"{path}: cannot read mapping: {error}") from None
        return cls.from_dict(data, str(path))


def _tuples(d: Mapping) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


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
        """Cubic splines for positions, C2 rotation splines for orientations."""
        times = np.asarray(self.times, dtype=float)
        if len(times) < 2:
            return self
        count = int(np.floor((times[-1] - times[0]) * rate + 1e-9)) + 1
        new_times = times[0] + np.arange(count) / rate
        positions = {n: CubicSpline(times, p, axis=0)(new_times) for n, p in self.positions.items()}
        rotations = {
            n: RotationSpline(times, Rotation.from_matrix(R))(new_times).as_matrix()
            for n, R in self.rotations.items()
        }
        return TrackSamples(new_times, positions, rotations)


@dataclass
class RetargetResult:
    """Per-frame outcome of :func:`retarget`.

    times (F,) [s]; states (F, n, 7); curves: the actuator curves (unwrapped);
    position_error, orientation_error (F, K) [m, rad]; com_error (F,) [m];
    residual (F,) max |C| [m]; iterations (F,); converged, unreachable (F,) bool.
    """

    mapping: RetargetMapping
    times: np.ndarray
    states: np.ndarray
    curves: ActuatorCurves
    position_error: np.ndarray
    orientation_error: np.ndarray
    com_error: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    unreachable: np.ndarray
    target_names: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        """JSON-ready report: accuracy, per-actuator range, peak velocity, violations."""
        velocities = self.curves.velocities()
        violations = all_violations(self.curves)
        actuators = []
        for a, name in enumerate(self.curves.names):
            values = self.curves.values[:, a]
            actuators.append(
                {
                    "name": name,
                    "unit": self.curves.units[a],
                    "min": float(values.min()),
                    "max": float(values.max()),
                    "peak_velocity": float(np.abs(velocities[:, a]).max()),
                    "velocity_limit": _finite(self.curves.velocity_limit[a]),
                    "violations": [v.to_dict() for v in violations if v.actuator == name],
                }
            )
        return {
            "frames": len(self.times),
            "rate_hz": self.mapping.rate,
            "duration_s": float(self.times[-1] - self.times[0]) if len(self.times) else 0.0,
            "max_residual": float(self.residual.max(initial=0.0)),
            "max_position_error_m": float(np.max(self.position_error, initial=0.0)),
            "mean_position_error_m": float(np.mean(self.position_error)) if self.position_error.size else 0.0,
            "max_orientation_error_rad": float(np.max(self.orientation_error, initial=0.0)),
            "max_com_error_m": _finite(float(np.nanmax(self.com_error)))
            if np.isfinite(self.com_error).any()
            else None,
            "unreachable_frames": int(self.unreachable.sum()),
            "unconverged_frames": int((~self.converged).sum()),
            "iterations_mean": float(self.iterations.mean()) if len(self.iterations) else 0.0,
            "actuators": actuators,
        }


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def build_problem(
    mechanism: Mechanism, mapping: RetargetMapping, settings: IKSettings | None = None
) -> IKProblem:
    """The IK problem a mapping defines (frame targets in mapping order, CoM)."""
    frames = [FrameObjective(t.frame, t.position_weight, t.orientation_weight) for t in mapping.targets]
    com = ComObjective(mapping.com.weight) if mapping.com is not None else None
    return IKProblem(mechanism, frames, com, mapping.regularization(), settings or IKSettings())


def _target_arrays(mapping: RetargetMapping, samples: TrackSamples):
    """Per-frame target positions (F, K, 3), rotations (F, K, 3, 3) and CoM (F, 3)."""
    names = set(samples.positions)
    for spec in mapping.targets:
        if spec.track not in names:
            raise TargetError(f"mapping target {spec.frame!r}: " + did_you_mean("track", spec.track, names))
    positions, rotations = [], []
    for spec in mapping.targets:
        R_track = samples.rotations[spec.track]
        offset_R = quat_to_matrix(np.asarray(spec.offset_rotation, dtype=float))
        positions.append(samples.positions[spec.track] + R_track @ np.asarray(spec.offset_position, float))
        rotations.append(R_track @ offset_R)
    positions = np.stack(positions, axis=1) if positions else np.zeros((len(samples.times), 0, 3))
    rotations = np.stack(rotations, axis=1) if rotations else np.zeros((len(samples.times), 0, 3, 3))
    com = None
    if mapping.com is not None:
        com = _com_targets(mapping, samples, positions)
    return positions, rotations, com


def _com_targets(mapping: RetargetMapping, samples: TrackSamples, positions: np.ndarray) -> np.ndarray:
    spec = mapping.com
    if spec.track is not None:
        if spec.track not in samples.positions:
            raise TargetError("CoM: " + did_you_mean("track", spec.track, samples.positions))
        return samples.positions[spec.track]
    if not spec.support:
        raise TargetError("a CoM objective needs a track or support phases")
    frames = [t.frame for t in mapping.targets]
    com = np.full((len(samples.times), 3), np.nan)
    for phase in spec.support:
        missing = [f for f in phase.frames if f not in frames]
        if missing:
            raise TargetError(
                f"support phase {phase.start}-{phase.end} s: frames {missing} are not mapping targets "
                f"({', '.join(frames)})"
            )
        inside = (samples.times >= phase.start - 1e-9) & (samples.times <= phase.end + 1e-9)
        idx = [frames.index(f) for f in phase.frames]
        com[inside] = positions[inside][:, idx].mean(axis=1)
    gaps = np.flatnonzero(np.isnan(com[:, 0]))
    if len(gaps):
        raise TargetError(f"support phases do not cover t = {samples.times[gaps[0]]:.4g} s")
    return com


def retarget(
    mechanism: Mechanism,
    samples: TrackSamples,
    mapping: RetargetMapping,
    initial_state: np.ndarray | None = None,
    settings: IKSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> RetargetResult:
    """Solve every frame of a clip; see the module docstring.

    progress(frame, total) is called every few frames; cancel() returning True
    raises :class:`RetargetCancelled`.
    """
    problem = build_problem(mechanism, mapping, settings)
    samples = samples.resampled(mapping.rate)
    positions, rotations, com = _target_arrays(mapping, samples)
    frames = len(samples.times)
    if frames == 0:
        raise TargetError("the clip has no frames")
    state = mechanism.initial_state() if initial_state is None else np.asarray(initial_state, float)
    actuators = problem.readout.read(state)
    velocities = None
    # the first frame may start far from the robot's initial pose: let it settle
    settle = dataclasses.replace(problem.settings, max_iterations=10 * problem.settings.max_iterations)
    n_act, k = len(actuators), len(mapping.targets)
    out_states = np.empty((frames,) + state.shape)
    out_act = np.empty((frames, n_act))
    pos_err, ori_err = np.empty((frames, k)), np.empty((frames, k))
    com_err, residual = np.full(frames, np.nan), np.empty(frames)
    iterations, converged = np.empty(frames, int), np.empty(frames, bool)
    with single_threaded_blas():
        for f in range(frames):
            if cancel is not None and cancel():
                raise RetargetCancelled(f"retarget cancelled at frame {f} of {frames}")
            targets = IKTargets(positions[f], rotations[f], None if com is None else com[f])
            result = solve_ik(
                problem,
                targets,
                state,
                previous_actuators=actuators,
                previous_velocities=velocities,
                settings=settle if f == 0 else None,
            )
            if f > 0:
                velocities = (result.actuators - actuators) * mapping.rate
            state, actuators = result.state, result.actuators
            out_states[f], out_act[f] = state, actuators
            pos_err[f], ori_err[f], com_err[f] = (
                result.position_error,
                result.orientation_error,
                result.com_error,
            )
            residual[f], iterations[f], converged[f] = result.residual, result.iterations, result.converged
            if progress is not None and (f % 50 == 0 or f == frames - 1):
                progress(f + 1, frames)
    curves = ActuatorCurves.from_mechanism(
        mechanism, out_act, mapping.rate, float(samples.times[0]), unwrap=False
    )
    unreachable = np.max(pos_err, axis=1, initial=0.0) > mapping.reach_tolerance
    return RetargetResult(
        mapping=mapping,
        times=samples.times,
        states=out_states,
        curves=curves,
        position_error=pos_err,
        orientation_error=ori_err,
        com_error=com_err,
        residual=residual,
        iterations=iterations,
        converged=converged,
        unreachable=unreachable,
        target_names=[t.frame for t in mapping.targets],
    )
