"""BVH motion capture -> tracks (joint world transforms per frame).

A BVH file is a joint hierarchy (``ROOT``/``JOINT`` with ``OFFSET`` and
``CHANNELS``, ``End Site`` leaves) followed by ``MOTION``: a frame count, a
frame time and one line of channel values per frame. Rotation channels are in
degrees and applied in the order listed (``Zrotation Xrotation Yrotation``
means ``R = Rz Rx Ry``); a joint's transform in its parent is
``T = Trans(t) R`` with ``t`` its OFFSET, replaced axis by axis by its position
channels when it has them (usually only the root). World transforms chain
from the root: ``T_world_joint = T_world_parent T``.

:func:`read_bvh` returns a :class:`~looprig.core.tracks.format.Clip` with one track
per joint (and ``<joint>_end`` per End Site), converted from the file's length
unit and up axis (BVH has neither in the file: the usual centimetres and Y up
are the defaults) into metres and Z up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..maths.rotations import axis_angle_matrix, quat_from_matrix, quat_normalize
from .format import MAX_MAGNITUDE, Clip, Track, TrackError, to_looprig

_AXES = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}
_CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")


@dataclass
class BvhJoint:
    """A joint of the hierarchy: offset (3,) in the parent, channel names, parent index."""

    name: str
    parent: int
    offset: np.ndarray
    channels: list[str] = field(default_factory=list)
    first_channel: int = 0


class _Tokens:
    def __init__(self, text: str, path):
        self.path = path
        self.items: list[tuple[str, int]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            self.items.extend((token, number) for token in line.split())
        self.i = 0

    def error(self, problem: str, line: int | None = None) -> TrackError:
        if line is None:
            line = self.items[min(self.i, len(self.items) - 1)][1] if self.items else None
        return TrackError(problem, self.path, line=line)

    def next(self, what: str) -> tuple[str, int]:
        if self.i >= len(self.items):
            raise self.error(f"file ends where {what} was expected")
        item = self.items[self.i]
        self.i += 1
        return item

    def expect(self, word: str) -> int:
        token, line = self.next(repr(word))
        if token != word:
            raise self.error(f"expected {word!r}, found {token!r}", line)
        return line

    def number(self, what: str) -> float:
        token, line = self.next(what)
        try:
            value = float(token)
        except ValueError:
            raise self.error(f"{what}: {token!r} is not a number", line) from None
        if not np.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise self.error(f"{what}: {token!r} is not finite or out of range", line)
        return value

    def integer(self, what: str) -> int:
        token, line = self.next(what)
        if not token.isdecimal():  # what int() reads ("¹" is a digit to isdigit, not to int)
            raise self.error(f"{what}: {token!r} is not a non-negative integer", line)
        return int(token)


MAX_DEPTH = 200  # nesting levels of the hierarchy


def _parse_joint(
    tokens: _Tokens, joints: list[BvhJoint], name: str, parent: int, n_channels: int, depth: int = 0
) -> int:
    """Parse ``{ OFFSET ... CHANNELS ... children }`` of one joint; returns channels used."""
    if depth > MAX_DEPTH:
        raise tokens.error(f"the hierarchy is nested more than {MAX_DEPTH} levels deep")
    tokens.expect("{")
    tokens.expect("OFFSET")
    offset = np.array([tokens.number(f"OFFSET of {name!r}") for _ in range(3)])
    joint = BvhJoint(name, parent, offset, first_channel=n_channels)
    index = len(joints)
    joints.append(joint)
    token, line = tokens.next("CHANNELS")
    if token != "CHANNELS":
        raise tokens.error(f"joint {name!r}: expected CHANNELS, found {token!r}", line)
    count = tokens.integer(f"channel count of {name!r}")
    if count > 6:
        raise tokens.error(f"joint {name!r}: {count} channels (at most 6)", line)
    for _ in range(count):
        channel, cline = tokens.next("a channel name")
        if channel not in _CHANNELS:
            raise tokens.error(
                f"joint {name!r}: unknown channel {channel!r}; channels are: {', '.join(_CHANNELS)}", cline
            )
        joint.channels.append(channel)
    n_channels += count
    while True:
        token, line = tokens.next("JOINT, End Site or '}'")
        if token == "}":
            return n_channels
        if token == "JOINT":
            child, _ = tokens.next("a joint name")
            n_channels = _parse_joint(tokens, joints, child, index, n_channels, depth + 1)
        elif token == "End":
            tokens.expect("Site")
            tokens.expect("{")
            tokens.expect("OFFSET")
            end_offset = np.array([tokens.number(f"End Site OFFSET of {name!r}") for _ in range(3)])
            tokens.expect("}")
            joints.append(BvhJoint(f"{name}_end", index, end_offset, first_channel=n_channels))
        else:
            raise tokens.error(f"joint {name!r}: expected JOINT, End Site or '}}', found {token!r}", line)


def parse_bvh(text: str, path=None, frame_start: int = 1) -> tuple[list[BvhJoint], float, np.ndarray]:
    """Hierarchy, frame time [s] and channel values (F, C) of a BVH text.

    frame_start: number of the first frame, for messages.
    """
    tokens = _Tokens(text, path)
    tokens.expect("HIERARCHY")
    joints: list[BvhJoint] = []
    n_channels = 0
    token, line = tokens.next("ROOT")
    while token == "ROOT":
        root, _ = tokens.next("the root name")
        n_channels = _parse_joint(tokens, joints, root, -1, n_channels)
        token, line = tokens.next("MOTION")
    if not joints:
        raise tokens.error(f"expected ROOT, found {token!r}", line)
    if token != "MOTION":
        raise tokens.error(f"expected MOTION, found {token!r}", line)
    tokens.expect("Frames:")
    n_frames = tokens.integer("the frame count")
    tokens.expect("Frame")
    tokens.expect("Time:")
    frame_time = tokens.number("the frame time")
    if frame_time <= 0:
        raise tokens.error(f"frame time must be positive, got {frame_time}")
    remaining = tokens.items[tokens.i :]
    if len(remaining) != n_frames * n_channels:
        have = len(remaining) / n_channels if n_channels else len(remaining)
        raise tokens.error(
            f"'Frames: {n_frames}' with {n_channels} channels needs {n_frames * n_channels} values, "
            f"found {len(remaining)} ({have:.4g} frames)"
        )
    values = np.empty(n_frames * n_channels)
    for k, (token, line) in enumerate(remaining):
        try:
            values[k] = float(token)
        except ValueError:
            frame = frame_start + k // max(n_channels, 1)
            raise tokens.error(f"frame {frame}: {token!r} is not a number", line) from None
        if not np.isfinite(values[k]) or abs(values[k]) > MAX_MAGNITUDE:
            frame = frame_start + k // max(n_channels, 1)
            raise tokens.error(f"frame {frame}: {token!r} is not finite or out of range", line)
    return joints, frame_time, values.reshape(n_frames, n_channels)


def bvh_world_transforms(joints: list[BvhJoint], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World rotations (F, J, 3, 3) and positions (F, J, 3) in file units and axes."""
    n_frames = len(values)
    R_world = np.empty((n_frames, len(joints), 3, 3))
    p_world = np.empty((n_frames, len(joints), 3))
    for j, joint in enumerate(joints):
        t = np.broadcast_to(joint.offset, (n_frames, 3)).copy()
        R = np.broadcast_to(np.eye(3), (n_frames, 3, 3)).copy()
        for k, channel in enumerate(joint.channels):
            column = values[:, joint.first_channel + k]
            axis = channel[0]
            if channel.endswith("position"):
                t[:, "XYZ".index(axis)] = column
            else:
                R = R @ axis_angle_matrix(_AXES[axis], np.radians(column))
        if joint.parent < 0:
            R_world[:, j], p_world[:, j] = R, t
        else:
            Rp = R_world[:, joint.parent]
            R_world[:, j] = Rp @ R
            p_world[:, j] = p_world[:, joint.parent] + np.einsum("fab,fb->fa", Rp, t)
    return R_world, p_world


def read_bvh(
    path, length_unit: str = "cm", up_axis: str = "Y", frame_start: int = 1, text: str | None = None
) -> Clip:
    """A BVH file as a :class:`Clip` of joint world transforms (metres, Z up).

    length_unit / up_axis: those of the file (BVH does not state them).
    frame_start: frame number given to the first sample.
    """
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise TrackError(f"cannot read file: {error.strerror or error}", path) from None
    joints, frame_time, values = parse_bvh(text, path, frame_start)
    names = [j.name for j in joints]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise TrackError(f"joint name {duplicate!r} appears twice", path)
    R_world, p_world = bvh_world_transforms(joints, values)
    tracks = {}
    for j, name in enumerate(names):
        p, q = to_looprig(p_world[:, j], quat_from_matrix(R_world[:, j]), length_unit, up_axis, path)
        tracks[name] = Track(p, quat_normalize(q), True)
    return Clip(
        1.0 / frame_time,
        frame_start,
        tracks,
        {"application": "BVH", "length_unit": length_unit, "up_axis": up_axis.upper()},
    )
