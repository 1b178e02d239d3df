"""The clip's targets per frame: the mapping read against tracked samples."""

import numpy as np

from ..errors import TargetError, did_you_mean
from ..maths.rotations import quat_to_matrix
from ..model.mechanism import Mechanism
from ..model.readoff import ActuatorReadout
from ..terms.aim import up_rotation
from ..tracks.samples import TrackSamples
from .mapping import RetargetMapping


def target_arrays(mapping: RetargetMapping, samples: TrackSamples):
    """Per-frame target positions (F, K + M, 3), rotations (F, K + M, 3, 3) and CoM (F, 3):
    the K targets', then per aim its point and a rotation whose z column is its up
    direction (the slots :func:`~looprig.core.retarget.problem.build_problem` gives the aims)."""
    names = set(samples.positions)
    for spec in mapping.targets:
        if spec.track not in names:
            raise TargetError(f"mapping target {spec.frame!r}: " + did_you_mean("track", spec.track, names))
    for i, aim in enumerate(mapping.aims):
        for key in ("track", "up_track"):
            track = getattr(aim, key)
            if track is not None and track not in names:
                where = f"mapping aim {i} ({aim.frame!r})"
                raise TargetError(f"{where}: {key}: " + did_you_mean("track", track, names))
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
        com = com_targets(mapping, samples, positions)
    if mapping.aims:
        points, ups = _aim_arrays(mapping, samples)
        positions = np.concatenate([positions, points], axis=1)
        rotations = np.concatenate([rotations, up_rotation(ups)], axis=1)
    return positions, rotations, com


def _aim_arrays(mapping: RetargetMapping, samples: TrackSamples):
    """Per frame, each aim's point (F, M, 3) [m] and unit up direction (F, M, 3), world."""
    count = len(samples.times)
    points, ups = [], []
    for aim in mapping.aims:
        if aim.track is not None:
            points.append(np.asarray(samples.positions[aim.track], dtype=float))
        else:
            points.append(np.broadcast_to(np.asarray(aim.point, dtype=float), (count, 3)))
        up = np.asarray(aim.up_direction, dtype=float) / np.linalg.norm(aim.up_direction)
        tracked = aim.up_track is not None
        ups.append(samples.rotations[aim.up_track] @ up if tracked else np.tile(up, (count, 1)))
    return np.stack(points, axis=1), np.stack(ups, axis=1)


def com_targets(mapping: RetargetMapping, samples: TrackSamples, positions: np.ndarray) -> np.ndarray:
    """The CoM target per frame (F, 3) [m]: its track, or the mean of the supporting
    frames' targets (``positions`` (F, K, 3)) in each support phase."""
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


def held_values(mechanism: Mechanism, mapping: RetargetMapping, state: np.ndarray):
    """The values [rad | m] of the mapping's ``hold`` motors at ``state`` (None: no hold)."""
    if not mapping.hold:
        return None
    names = mechanism.actuator_names
    missing = [name for name in mapping.hold if name not in names]
    if missing:
        raise TargetError("mapping hold: " + did_you_mean("motor", missing[0], names))
    return ActuatorReadout.of(mechanism).read(state)[[names.index(name) for name in mapping.hold]]
