"""Per-frame status of a retarget, without Blender: exact, limited or unreachable.

Core classifies every sample of a :class:`~looprig.core.retarget.RetargetResult`:
*limited* (``result.limited``: a target is missed because a motor limit binds,
``result.binding`` says which motor and which limit), *unreachable*
(``result.unreachable``: missed with no limit binding, outside the workspace) or
*exact* (every target met to the reach tolerance). This module groups those
samples into stretches of consecutive samples with one status, labels each
stretch with the limits that bind in it and its worst miss, and gathers, for the
samples that are not exact, the pose each target asked for beside the pose the
robot's tracked frame takes (the viewport's ghost). Lengths are in metres, angles
in radians, frames are scene frames, times seconds from the clip's first sample.
The scene side is :mod:`.status_display`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.terms.tasks import FrameObjective, FrameTask

#: Status codes per sample, and their names.
EXACT, LIMITED, UNREACHABLE = 0, 1, 2
STATUS_NAMES = ("exact", "limited", "unreachable")
#: How a binding limit reads in labels (core's "position" limit is the motor's range).
LIMIT_LABELS = {"position": "range", "velocity": "velocity", "acceleration": "acceleration"}


@dataclass(frozen=True)
class Stretch:
    """Consecutive samples ``first..last`` (inclusive indices) with one status.

    frame, end_frame: scene frames of the first and last sample; time, end_time: [s]
    from the clip's first sample. limits: ``(motor, limit)`` pairs that bind on the
    stretch's samples (limit: ``"position"``, ``"velocity"`` or ``"acceleration"``),
    in motor order; empty for an unreachable stretch. targets: the tracked frames
    missed. miss: the worst position miss [m]; turn: the worst orientation miss
    [rad] of targets with orientation weights (0 without).
    """

    status: int
    first: int
    last: int
    frame: float
    end_frame: float
    time: float
    end_time: float
    limits: tuple[tuple[str, str], ...]
    targets: tuple[str, ...]
    miss: float
    turn: float

    @property
    def status_name(self) -> str:
        return STATUS_NAMES[self.status]

    def what(self) -> str:
        """The limits that bind (``crank_joint velocity``), or the targets missed."""
        if self.status == LIMITED:
            limits = (f"{motor} {LIMIT_LABELS.get(limit, limit)}" for motor, limit in self.limits)
            return ", ".join(limits) or "motor limits"
        return ", ".join(self.targets)

    def how_much(self) -> str:
        """The worst miss: ``104 mm``, with degrees for targets with orientation weights."""
        text = f"{self.miss * 1000:.3g} mm"
        if self.turn > 0:
            text += f", {np.degrees(self.turn):.3g}°"
        return text

    def label(self) -> str:
        """What the stretch's panel line says: ``crank_joint velocity, 104 mm`` or
        ``coupler_point out of reach, 876 mm``."""
        reach = " out of reach" if self.status == UNREACHABLE else ""
        return f"{self.what()}{reach}, {self.how_much()}"


@dataclass
class FrameStatus:
    """The status of every sample of a retarget and what the panel and timeline show.

    codes: (F,) int, :data:`EXACT`, :data:`LIMITED` or :data:`UNREACHABLE`.
    frames: (F,) scene frames of the samples; times: (F,) [s] from the first.
    stretches: the runs of limited or unreachable samples, in time order (a limited
    stretch names the limits binding on it, or, when a motor brakes ahead of it or
    catches up after it, those binding nearest).
    limits: per ``(motor, limit)`` that binds, on how many samples, in motor then limit
    order. worst_miss: the largest position miss [m] of a sample
    that is not exact (0 when all are), at sample ``worst_sample`` (-1 when none).
    """

    codes: np.ndarray
    frames: np.ndarray
    times: np.ndarray
    stretches: list[Stretch] = field(default_factory=list)
    limits: list[tuple[str, str, int]] = field(default_factory=list)
    worst_miss: float = 0.0
    worst_sample: int = -1

    def count(self, code: int) -> int:
        """How many samples have status ``code``."""
        return int(np.count_nonzero(self.codes == code))


def _runs(codes: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) inclusive index ranges of consecutive equal non-exact codes."""
    runs, start = [], None
    for i, code in enumerate(codes):
        if start is not None and code != codes[start]:
            runs.append((start, i - 1))
            start = None
        if start is None and code != EXACT:
            start = i
    if start is not None:
        runs.append((start, len(codes) - 1))
    return runs


def _binding_limits(binding, first: int, last: int, motors: list[str]) -> tuple[tuple[str, str], ...]:
    """The ``(motor, limit)`` pairs that bind on samples ``first..last``; when none does
    there (a motor braking ahead of the stretch it cannot follow, or catching up after it),
    those binding on the nearest samples that have one."""
    bound = (binding != "").any(axis=1)
    span = np.arange(first, last + 1)
    if not bound[span].any():
        others = np.flatnonzero(bound)
        if not len(others):
            return ()
        distance = np.minimum(np.abs(others - first), np.abs(others - last))
        span = others[distance == distance.min()]
    return tuple(
        (motor, limit)
        for m, motor in enumerate(motors)
        for limit in LIMIT_LABELS
        if np.any(binding[span, m] == limit)
    )


def compute_frame_status(result, frames) -> FrameStatus:
    """The per-sample status of a :class:`~looprig.core.retarget.RetargetResult`.

    frames: (F,) scene frames of the result's samples. Reads ``result.limited`` ((F,)
    bool or None), ``result.unreachable``, ``result.binding`` ((F, A) str or None), the (F, K)
    position [m] and orientation [rad] errors, ``result.curves.names`` (A motors) and
    ``result.target_names`` (K targets); the orientation miss counts for targets whose
    mapping gives them orientation weights. Aims count as targets named ``<frame> aim``,
    missed by ``result.aim_miss`` [m] (how far the aim ray passes from its point).
    """
    frames = np.asarray(frames, dtype=float)
    times = np.asarray(result.times, dtype=float) - float(result.times[0])
    codes = np.full(len(times), EXACT, dtype=int)
    codes[np.asarray(result.unreachable, bool)] = UNREACHABLE
    if result.limited is not None:
        codes[np.asarray(result.limited, bool)] = LIMITED
    position = np.asarray(result.position_error, dtype=float)
    oriented = np.array([any(w > 0 for w in t.orientation_weight) for t in result.mapping.targets], bool)
    turn = np.where(oriented, np.asarray(result.orientation_error, dtype=float), 0.0)
    names = list(result.target_names)
    aim_miss = getattr(result, "aim_miss", None)
    if aim_miss is not None:
        position = np.concatenate([position, np.asarray(aim_miss, dtype=float)], axis=1)
        turn = np.concatenate([turn, np.zeros(np.shape(aim_miss))], axis=1)
        names += [f"{name} aim" for name in result.aim_names]
    tolerance = result.mapping.reach_tolerance
    motors = list(result.curves.names)
    binding = result.binding
    status = FrameStatus(codes, frames, times)
    for first, last in _runs(codes):
        span = slice(first, last + 1)
        limits = _binding_limits(binding, first, last, motors) if codes[first] == LIMITED else ()
        missed = np.any(position[span] > tolerance, axis=0)
        status.stretches.append(
            Stretch(
                status=int(codes[first]),
                first=first,
                last=last,
                frame=float(frames[first]),
                end_frame=float(frames[last]),
                time=float(times[first]),
                end_time=float(times[last]),
                limits=limits,
                targets=tuple(name for name, m in zip(names, missed, strict=True) if m),
                miss=float(position[span].max(initial=0.0)),
                turn=float(turn[span].max(initial=0.0)),
            )
        )
    if binding is not None:
        for m, motor in enumerate(motors):
            for limit in LIMIT_LABELS:
                count = int(np.count_nonzero(binding[:, m] == limit))
                if count:
                    status.limits.append((motor, limit, count))
    missed = np.flatnonzero(codes != EXACT)
    if len(missed) and position.shape[1]:
        worst = position[missed].max(axis=1)
        status.worst_sample = int(missed[np.argmax(worst)])
        status.worst_miss = float(worst.max())
    return status


def asked_poses(mapping, samples) -> tuple[np.ndarray, np.ndarray]:
    """The pose each target asks of its robot frame at every sample, as core's retarget
    forms it: the track's sampled position plus its rotation times the target's offset,
    and the track's rotation times the offset rotation.

    mapping: the :class:`~looprig.core.retarget.RetargetMapping` (its ``rate`` [Hz]);
    samples: the :class:`~looprig.core.retarget.TrackSamples` retargeted (resampled to
    ``mapping.rate``, as core does). Returns positions (F, K, 3) [m] and rotations
    (F, K, 3, 3), world frame, columns the target's axes.
    """
    samples = samples.resampled(mapping.rate)
    positions, rotations = [], []
    for spec in mapping.targets:
        R_world_track = samples.rotations[spec.track]  # (F, 3, 3)
        R_track_target = quat_to_matrix(np.asarray(spec.offset_rotation, dtype=float))
        positions.append(samples.positions[spec.track] + R_world_track @ np.asarray(spec.offset_position))
        rotations.append(R_world_track @ R_track_target)
    count = len(samples.times)
    if not positions:
        return np.zeros((count, 0, 3)), np.zeros((count, 0, 3, 3))
    return np.stack(positions, axis=1), np.stack(rotations, axis=1)


def robot_poses(mechanism, mapping, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World positions (F, K, 3) [m] and axes (F, K, 3, 3) (columns x, y, z) of the robot
    frames the mapping's targets drive, for body states (F, n, 7) of ``mechanism``."""
    task = FrameTask(mechanism, [FrameObjective(t.frame) for t in mapping.targets])
    return task.poses(states)


def ghost_record(status: FrameStatus, asked, reached, axis_length: float) -> dict:
    """What the viewport's ghost reads, as plain lists for an ID property.

    asked, reached: positions (F, K, 3) [m] and rotations (F, K, 3, 3) of each target's
    asked pose and of its robot frame's pose per sample; axis_length: the triads' length
    [m]. Keeps the poses of the samples that are not exact only: ``rows`` (F,) gives
    each sample's row in ``asked`` and ``reached`` (-1: exact), a row holding per target
    its position (3) then its rotation (9, row-major). ``frame_start`` and
    ``sample_frames``: the first sample's scene frame and the scene frames per sample.
    """
    rows = np.flatnonzero(status.codes != EXACT)
    row_of = np.full(len(status.codes), -1, dtype=int)
    row_of[rows] = np.arange(len(rows))
    frames = status.frames
    return {
        "frame_start": float(frames[0]),
        "sample_frames": float(frames[1] - frames[0]) if len(frames) > 1 else 1.0,
        "codes": status.codes.tolist(),
        "rows": row_of.tolist(),
        "targets": int(asked[0].shape[1]),
        "axis_length": float(axis_length),
        "asked": _flat_poses(asked, rows),
        "reached": _flat_poses(reached, rows),
    }


def _flat_poses(poses, rows: np.ndarray) -> list[float]:
    """Positions (F, K, 3) and rotations (F, K, 3, 3) of samples ``rows``, flat per row and
    target; ``[0.0]`` when there are none (an ID property array is never empty)."""
    positions, rotations = poses
    count, targets = len(rows), positions.shape[1]
    flat = np.concatenate([positions[rows], rotations[rows].reshape(count, targets, 9)], axis=-1).ravel()
    return flat.tolist() if flat.size else [0.0]
