"""Bundled animation clips for the reference mechanisms (tests, bench, demo).

Each clip is a :class:`~looprig.core.retarget.TrackSamples` in looprig's
convention (metres, z up), built in code from a smooth reference motion.
"""

import numpy as np

from ..retarget import TrackSamples
from ..rotations import matrix_from_rotvec
from .arms import boxer
from .legs import dancer


def _min_jerk(s: np.ndarray) -> np.ndarray:
    """Minimum-jerk time warp of [0, 1]: zero velocity and acceleration at both ends."""
    return s**3 * (10.0 - 15.0 * s + 6.0 * s**2)


def _slerp_directions(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Great-circle interpolation of unit vectors a -> b at parameters s (F,) -> (F, 3)."""
    angle = np.arccos(np.clip(a @ b, -1.0, 1.0))
    return (np.sin((1 - s) * angle)[:, None] * a + np.sin(s * angle)[:, None] * b) / np.sin(angle)


def _rotation_from_down(d: np.ndarray) -> np.ndarray:
    """Smallest rotations (F, 3, 3) taking -z to the unit directions d (F, 3)."""
    down = np.array([0.0, 0.0, -1.0])
    axis = np.cross(down, d)
    angle = np.arctan2(np.linalg.norm(axis, axis=-1), d @ down)
    norm = np.maximum(np.linalg.norm(axis, axis=-1, keepdims=True), 1e-300)
    return matrix_from_rotvec(axis / norm * angle[:, None])


def boxer_singular_clip(rate: float = 1200.0, elevation: float = 0.03, segment: float = 1.0) -> TrackSamples:
    """A hand motion of the Boxer that passes close to its shoulder singularity.

    The reference arm has a spherical shoulder (as the paper's animation): the
    upper arm swings from hanging down up to the side, sweeps past the
    horizontal sideways direction ``elevation`` [rad] above it - where the
    Boxer's yaw-roll-pitch shoulder is in gimbal lock - and returns down; the
    elbow keeps its neutral 90 degrees and the arm does not twist. Each of the
    three segments lasts ``segment`` [s] with a minimum-jerk profile, so the
    reference's angular velocity is smooth and bounded (about 1.5 rad/s peak).
    Track ``hand``: the Boxer's hand frame, position and orientation.
    """
    arm = boxer()
    shoulder = arm.joint("shoulder_yaw").anchor
    hand = arm.frame("hand").position
    down = np.array([0.0, 0.0, -1.0])
    left_front = np.array([-0.5, 1.0, elevation]) / np.linalg.norm([-0.5, 1.0, elevation])
    left_back = np.array([0.5, 1.0, elevation]) / np.linalg.norm([0.5, 1.0, elevation])
    n = round(segment * rate)
    s = _min_jerk(np.arange(n) / n)
    directions = np.concatenate(
        [
            _slerp_directions(down, left_front, s),
            _slerp_directions(left_front, left_back, s),
            _slerp_directions(left_back, down, np.append(s, 1.0)),
        ]
    )
    R = _rotation_from_down(directions)
    positions = shoulder + R @ (hand - shoulder)
    times = np.arange(len(R)) / rate
    return TrackSamples(times, {"hand": positions}, {"hand": R})


def dancer_groove_clip(
    fps: float = 60.0, duration: float = 4.0, bob_depth: float = 0.02, bob_rate: float = 1.5
) -> TrackSamples:
    """A dance for the Dancer's pelvis, as an animator would key it at ``fps``.

    From rest, the pelvis sways side to side (3 cm at 0.5 Hz), bobs (2 cm at
    1 Hz), twists (+-0.15 rad yaw) and rocks (+-0.08 rad roll), faded in over
    the first half second; from 2.5 s a quicker bob (``bob_depth`` [m] deeper at
    ``bob_rate`` [Hz]) drives the knees close to their speed limit. Track
    ``pelvis``: position [m] and orientation of the Dancer's ``pelvis_frame``.
    """
    rest = dancer().frame("pelvis_frame").position
    t = np.arange(round(duration * fps) + 1) / fps
    fade = _min_jerk(np.clip(t / 0.5, 0.0, 1.0))
    phase = 2 * np.pi * t
    quick_in = _min_jerk(np.clip((t - 2.5) / 0.25, 0.0, 1.0))
    quick = quick_in * (1 - _min_jerk(np.clip((t - 3.6) / 0.3, 0.0, 1.0)))
    offset = np.stack(
        [
            0.01 * np.sin(phase * 0.5) * fade,
            0.03 * np.sin(phase * 0.5) * fade,
            (-0.01 * (1 - np.cos(phase)) - 0.5 * bob_depth * quick * (1 - np.cos(phase * bob_rate))) * fade,
        ],
        axis=-1,
    )
    rotvec = np.stack(
        [0.08 * np.sin(phase * 0.5 + 0.5), 0.03 * np.sin(phase * 1.0), 0.15 * np.sin(phase * 0.5)], axis=-1
    ) * fade[:, None]
    return TrackSamples(t, {"pelvis": rest + offset}, {"pelvis": matrix_from_rotvec(rotvec)})
