"""Bundled animation clips for the reference mechanisms (tests, bench, demo).

Each clip is a :class:`~looprig.core.retarget.TrackSamples` in looprig's
convention (metres, z up), built in code from a smooth reference motion.
"""

import itertools

import numpy as np

from ..maths.rotations import matrix_from_rotvec
from ..tracks.samples import TrackSamples
from .arms import boxer
from .legs import dancer
from .parallel import delta_file_height


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
    rotvec = (
        np.stack(
            [0.08 * np.sin(phase * 0.5 + 0.5), 0.03 * np.sin(phase * 1.0), 0.15 * np.sin(phase * 0.5)],
            axis=-1,
        )
        * fade[:, None]
    )
    return TrackSamples(t, {"pelvis": rest + offset}, {"pelvis": matrix_from_rotvec(rotvec)})


def walker_step_clip(fps: float = 60.0, step: float = 0.06, lift: float = 0.03) -> tuple[TrackSamples, tuple]:
    """Two steps of the Walker, keyed at ``fps``: feet, pelvis and the support phases.

    The phases (each 0.8 s, minimum-jerk): double support while the weight shifts
    over the left foot; the right foot steps ``step`` [m] forward, ``lift`` [m]
    high; double support shifting to the right foot; the left foot steps
    ``2 step`` forward; double support. The pelvis glides forward with the feet
    and sways over the stance foot. Returns the samples (tracks ``left_foot``,
    ``right_foot``, ``pelvis``) and the :class:`~looprig.core.retarget.SupportPhase`
    tuple that keeps the CoM over the feet in contact (the paper's walker, Sec. V-4).
    """
    from ..retarget.mapping import SupportPhase
    from .legs import walker

    mechanism = walker()
    feet = {side: mechanism.frame(f"{side}_foot").position for side in ("left", "right")}
    pelvis = mechanism.frame("pelvis_frame").position
    phase_length = 0.8
    n = round(phase_length * fps)
    s = _min_jerk(np.arange(n) / n)
    forward = np.array([1.0, 0.0, 0.0])
    # (left foot x, right foot x, weight side -1 right .. +1 left) at the start of each phase
    keys = [
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 1.0),
        (0.0, step, 1.0),
        (0.0, step, -1.0),
        (2 * step, step, -1.0),
        (2 * step, step, 0.0),
    ]
    up = np.array([0.0, 0.0, 1.0])
    arc = lift * np.sin(np.pi * s)
    left, right, sway = [], [], []
    for (l0, r0, w0), (l1, r1, w1) in itertools.pairwise(keys):
        left.append(feet["left"] + np.outer(l0 + (l1 - l0) * s, forward) + np.outer(arc * (l1 != l0), up))
        right.append(feet["right"] + np.outer(r0 + (r1 - r0) * s, forward) + np.outer(arc * (r1 != r0), up))
        sway.append(w0 + (w1 - w0) * s)
    left = np.concatenate(left + [left[-1][-1:]])
    right = np.concatenate(right + [right[-1][-1:]])
    sway = np.concatenate(sway + [sway[-1][-1:]])
    middle = 0.5 * (left + right)
    pelvis_path = np.column_stack([middle[:, 0], 0.05 * sway, np.full(len(sway), pelvis[2])])
    t = np.arange(len(sway)) / fps
    identity = np.tile(np.eye(3), (len(t), 1, 1))
    samples = TrackSamples(
        t,
        {"left_foot": left, "right_foot": right, "pelvis": pelvis_path},
        {"left_foot": identity, "right_foot": identity, "pelvis": identity},
    )
    both = ("left_foot", "right_foot")
    support = (
        SupportPhase(0.0, phase_length, both),
        SupportPhase(phase_length, 2 * phase_length, ("left_foot",)),
        SupportPhase(2 * phase_length, 3 * phase_length, both),
        SupportPhase(3 * phase_length, 4 * phase_length, ("right_foot",)),
        SupportPhase(4 * phase_length, t[-1], both),
    )
    return samples, support


def delta_platform_clip(rate: float = 200.0, frames: int = 241) -> tuple[TrackSamples, np.ndarray]:
    """The delta's platform moving through one period of a 3-D Lissajous figure
    (3 cm, 2.5 cm and 1.2 cm amplitudes) around a point 1.2 cm beside and above
    the file pose, level throughout (world-aligned axes): the samples of frame
    ``platform`` and its positions (F, 3) [m]."""
    t = np.arange(frames) / rate
    w = 2 * np.pi * t
    home = np.array([0.0, 0.0, delta_file_height()])
    p = home + np.stack([0.012 + 0.03 * np.sin(w), -0.01 + 0.025 * np.sin(2 * w), 0.012 * np.cos(w)], -1)
    return TrackSamples(t, {"platform": p}, {"platform": np.tile(np.eye(3), (len(t), 1, 1))}), p
