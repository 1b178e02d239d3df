"""Tracks: the motion interchange format (Maya, Blender, mocap -> looprig).

A tracks file holds named tracks, each the **world transform per sample** of a
tracked object (a target empty, a bone, a locator): a position and a unit
quaternion. It is versioned JSON, or NPZ for long clips, written by the Maya
exporter and the Blender add-on and read here. Readers convert into looprig's
convention, **metres and Z up**; writers convert back.

JSON layout (version 1)::

    {
      "format": "looprig-tracks",
      "version": 1,
      "fps": 24.0,                       # samples per second, > 0
      "length_unit": "cm",               # m | cm | mm | in | ft
      "up_axis": "Y",                    # Y or Z: the world up of the positions
      "source": {"application": "Maya 2025", "scene": "shot010.ma"},   # free-form
      "frame_start": 1,                  # frame number of the first sample
      "frame_end": 3,                    # last frame; samples = end - start + 1
      "tracks": {
        "hand_target": {
          "position": [[0, 100, 0], [0, 101, 0], [0, 102, 0]],          # length_unit
          "orientation": [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]     # w, x, y, z
        },
        "foot_target": {"position": [[10, 0, 5], [10, 0, 5], [10, 0, 5]]}
      }
    }

* ``position`` is the object's origin in world coordinates of the file's unit
  and up axis; ``orientation`` (optional) the unit quaternion ``[w, x, y, z]``
  rotating the object's axes into the world (norm within 1e-3 of 1; it is
  renormalised). A track without orientation is a point target.
* **Up axis**: a Y-up world is turned into looprig's Z-up world by the
  rotation ``C`` of +90 degrees about x: ``(x, y, z) -> (x, -z, y)``. Positions
  become ``C p``, orientations ``C R`` (the object's own axes are kept, so an
  object that points up, along its y, in Maya points up, along world z, here).
* **Units**: positions are scaled to metres.

NPZ layout: the same header (everything but ``tracks``) as a JSON string in
the array ``header`` plus ``track_names``, ``has_orientation`` in it, and the
arrays ``positions`` (T, F, 3) and ``orientations`` (T, F, 4), in track order.

Problems (non-finite values, non-unit quaternions, wrong sample counts,
unknown units or axes) raise :class:`TrackError` naming the file, the track and
the frame.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import LooprigError
from ..maths.rotations import quat_conjugate, quat_multiply, quat_normalize, quat_to_matrix

FORMAT = "looprig-tracks"
VERSION = 1

#: Metres per unit.
LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "in": 0.0254, "ft": 0.3048}
UP_AXES = ("Z", "Y")
#: Tolerance on ``| |q| - 1 |`` for orientation quaternions read from files.
QUATERNION_NORM_TOLERANCE = 1e-3
#: Largest coordinate accepted in a file, in the file's unit.
MAX_MAGNITUDE = 1e100

_S = math.sqrt(0.5)
#: Rotation turning Y-up world coordinates into Z-up ones, as a quaternion (w, x, y, z).
Y_UP_TO_Z_UP = np.array([_S, _S, 0.0, 0.0])


class TrackError(LooprigError, ValueError):
    """A tracks file (or clip) is malformed.

    Attributes: ``path``, ``track`` (name or None), ``frame`` (frame number or
    None), ``line`` (BVH line or None), ``problem``.
    """

    def __init__(
        self,
        problem: str,
        path=None,
        track: str | None = None,
        frame: int | None = None,
        line: int | None = None,
    ):
        self.path = None if path is None else str(path)
        self.track, self.frame, self.line, self.problem = track, frame, line, problem
        where = self.path or "tracks"
        if line is not None:
            where += f":{line}"
        if track is not None:
            where += f": track {track!r}"
        if frame is not None:
            where += f", frame {frame}"
        super().__init__(f"{where}: {problem}")


@dataclass
class Track:
    """One tracked object in looprig's convention (metres, Z up).

    positions: (F, 3) [m], world. orientations: (F, 4) unit quaternions
    (w, x, y, z), object to world; identity (in looprig's axes) when
    ``has_orientation`` is False (a point target).
    """

    positions: np.ndarray
    orientations: np.ndarray
    has_orientation: bool = True


@dataclass
class Clip:
    """Named tracks sampled at ``fps`` from frame ``frame_start`` on.

    source: free-form description of where the clip came from (application,
    scene, the file's unit and up axis as read).
    """

    fps: float
    frame_start: int
    tracks: dict[str, Track]
    source: dict = field(default_factory=dict)

    @property
    def n_frames(self) -> int:
        return len(next(iter(self.tracks.values())).positions) if self.tracks else 0

    @property
    def frame_end(self) -> int:
        return self.frame_start + self.n_frames - 1

    @property
    def frames(self) -> np.ndarray:
        """(F,) frame numbers."""
        return self.frame_start + np.arange(self.n_frames)

    @property
    def times(self) -> np.ndarray:
        """(F,) [s] sample times, frame ``frame_start`` at ``frame_start / fps``."""
        return self.frames / self.fps

    def samples(self):
        """The clip as :class:`~looprig.core.retarget.TrackSamples` (rotation matrices)."""
        from .samples import TrackSamples

        return TrackSamples(
            times=self.times,
            positions={n: t.positions.copy() for n, t in self.tracks.items()},
            rotations={n: quat_to_matrix(t.orientations) for n, t in self.tracks.items()},
        )

    def validate(self, path=None) -> Clip:
        """Check shapes, finiteness and unit quaternions; returns self."""
        check_clip(self, path)
        return self


# --------------------------------------------------------------------- conversions
def length_scale(unit: str, path=None) -> float:
    """Metres per ``unit`` (m, cm, mm, in, ft)."""
    if not isinstance(unit, str) or unit.strip().lower() not in LENGTH_UNITS:
        raise TrackError(f"unknown length unit {unit!r}; units are: {', '.join(LENGTH_UNITS)}", path)
    return LENGTH_UNITS[unit.strip().lower()]


def _up(up_axis: str, path=None) -> str:
    axis = up_axis.strip().upper().lstrip("+") if isinstance(up_axis, str) else up_axis
    if axis not in UP_AXES:
        raise TrackError(f"unknown up axis {up_axis!r}; up axes are: Y, Z", path)
    return axis


def to_looprig(positions, orientations, length_unit: str = "m", up_axis: str = "Z", path=None):
    """Positions (..., 3) and quaternions (..., 4) of a file -> metres, Z up."""
    scale = length_scale(length_unit, path)
    p = np.asarray(positions, dtype=float) * scale
    q = np.asarray(orientations, dtype=float)
    if _up(up_axis, path) == "Y":
        p = np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)
        q = quat_multiply(Y_UP_TO_Z_UP, q)
    return p, q


def from_looprig(positions, orientations, length_unit: str = "m", up_axis: str = "Z", path=None):
    """Inverse of :func:`to_looprig`: metres, Z up -> the given unit and up axis."""
    scale = length_scale(length_unit, path)
    p = np.asarray(positions, dtype=float)
    q = np.asarray(orientations, dtype=float)
    if _up(up_axis, path) == "Y":
        p = np.stack([p[..., 0], p[..., 2], -p[..., 1]], axis=-1)
        q = quat_multiply(quat_conjugate(Y_UP_TO_Z_UP), q)
    return p / scale, q


# --------------------------------------------------------------------- checks
def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_clip(clip: Clip, path=None) -> None:
    """Raise TrackError for bad fps, ragged tracks, non-finite values, non-unit quaternions."""
    if not (isinstance(clip.fps, (int, float)) and math.isfinite(clip.fps) and clip.fps > 0):
        raise TrackError(f"fps must be a positive number, got {clip.fps!r}", path)
    n = None
    for name, track in clip.tracks.items():
        check_samples(name, track.positions, track.orientations, clip.frame_start, n, path)
        n = len(track.positions)


def check_samples(name, positions, orientations, frame_start: int, expected: int | None, path=None):
    """Validate one track's raw arrays (file units); returns normalised quaternions."""
    p = np.asarray(positions)
    if p.ndim != 2 or p.shape[1] != 3:
        raise TrackError(f"positions must be a list of [x, y, z], got shape {p.shape}", path, name)
    if expected is not None and len(p) != expected:
        raise TrackError(f"{len(p)} position samples, but the frame range has {expected}", path, name)
    bad = ~np.all(np.isfinite(p), axis=1)
    if bad.any():
        k = _first_bad(bad)
        raise TrackError(f"position {p[k].tolist()} is not finite", path, name, frame_start + k)
    bad = np.any(np.abs(p) > MAX_MAGNITUDE, axis=1)
    if bad.any():
        k = _first_bad(bad)
        raise TrackError(f"position {p[k].tolist()} is out of range", path, name, frame_start + k)
    if orientations is None:
        return None
    q = np.asarray(orientations)
    if q.shape != (len(p), 4):
        raise TrackError(
            f"orientations must be {len(p)} quaternions [w, x, y, z], got shape {q.shape}", path, name
        )
    bad = ~np.all(np.isfinite(q), axis=1)
    if bad.any():
        k = _first_bad(bad)
        raise TrackError(f"orientation {q[k].tolist()} is not finite", path, name, frame_start + k)
    with np.errstate(over="ignore"):
        norm = np.linalg.norm(q, axis=1)
    bad = np.abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE
    if bad.any():
        k = _first_bad(bad)
        raise TrackError(
            f"orientation {q[k].tolist()} is not a unit quaternion (norm {norm[k]:.6g})",
            path,
            name,
            frame_start + k,
        )
    return quat_normalize(q)


# --------------------------------------------------------------------- reading
def _number_array(value, name, what, path, width):
    """A (F, width) float array from nested lists, with clear errors."""
    if not isinstance(value, list):
        raise TrackError(f"{what} must be a list of samples, got {type(value).__name__}", path, name)
    for k, sample in enumerate(value):
        if (
            not isinstance(sample, list)
            or len(sample) != width
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in sample)
        ):
            raise TrackError(f"{what} sample is not {width} numbers: {sample!r:.80}", path, name, k)
    try:
        return np.array(value, dtype=float).reshape(len(value), width)
    except OverflowError:
        raise TrackError(f"{what} has a number too large for a float", path, name) from None


def _header_fields(data: Mapping, path) -> tuple[float, int, int | None, str, str, dict]:
    if not isinstance(data, Mapping):
        raise TrackError("expected a JSON object", path)
    if data.get("format") != FORMAT:
        raise TrackError(f'expected "format": "{FORMAT}", got {data.get("format")!r}', path)
    if data.get("version") != VERSION:
        raise TrackError(
            f"this looprig reads tracks version {VERSION}, the file is version {data.get('version')!r}", path
        )
    fps = data.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) or fps <= 0:
        raise TrackError(f"fps must be a positive number, got {fps!r}", path)
    start = data.get("frame_start", 0)
    end = data.get("frame_end")
    for key, value in (("frame_start", start), ("frame_end", end)):
        if (value is None and key == "frame_start") or (
            value is not None and (isinstance(value, bool) or not isinstance(value, int))
        ):
            raise TrackError(f"{key} must be an integer frame number, got {value!r}", path)
    if end is not None and end < start:
        raise TrackError(f"frame_end {end} is before frame_start {start}", path)
    unit = data.get("length_unit", "m")
    length_scale(unit, path)
    up = _up(data.get("up_axis", "Z"), path)
    source = data.get("source") or {}
    if not isinstance(source, dict):
        raise TrackError(f"source must be an object, got {source!r:.80}", path)
    return float(fps), start, end, unit, up, source


def clip_from_dict(data: Mapping, path=None) -> Clip:
    """A :class:`Clip` (metres, Z up) from a parsed tracks document."""
    fps, start, end, unit, up, source = _header_fields(data, path)
    tracks_in = data.get("tracks")
    if not isinstance(tracks_in, dict):
        raise TrackError("'tracks' must be an object of named tracks", path)
    expected = None if end is None else end - start + 1
    tracks = {}
    for name, entry in tracks_in.items():
        if not isinstance(entry, dict) or "position" not in entry:
            raise TrackError("expected an object with 'position' (and optionally 'orientation')", path, name)
        p = _number_array(entry["position"], name, "position", path, 3)
        orientation = entry.get("orientation")
        q = None if orientation is None else _number_array(orientation, name, "orientation", path, 4)
        q = check_samples(name, p, q, start, expected, path)
        expected = len(p)
        tracks[name] = _converted(p, q, unit, up, path)
    return Clip(fps, start, tracks, {**source, "length_unit": unit, "up_axis": up})


def _converted(p, q, unit, up, path) -> Track:
    """Track in looprig's convention; a point track gets identity orientations (looprig axes)."""
    if q is None:
        p, _ = to_looprig(p, np.tile([1.0, 0.0, 0.0, 0.0], (len(p), 1)), unit, up, path)
        return Track(p, np.tile([1.0, 0.0, 0.0, 0.0], (len(p), 1)), False)
    p, q = to_looprig(p, q, unit, up, path)
    return Track(p, quat_normalize(q), True)


def read_tracks(path) -> Clip:
    """Read a tracks file (``.json``, or ``.npz``), converted to metres and Z up."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TrackError(f"cannot read file: {error.strerror or error}", path) from None
    if raw[:4] == b"PK\x03\x04" or path.suffix.lower() == ".npz":
        return _read_npz(raw, path)
    try:
        data = json.loads(raw.decode("utf-8"))  # NaN/Infinity tokens are named by the checks
    except UnicodeDecodeError as error:
        raise TrackError(f"not UTF-8 text: {error.reason}", path) from None
    except json.JSONDecodeError as error:
        raise TrackError(
            f"not valid JSON: {error.msg} (column {error.colno})", path, line=error.lineno
        ) from None
    except (ValueError, RecursionError) as error:
        raise TrackError(f"not valid JSON: {error}", path) from None
    return clip_from_dict(data, path)


def _read_npz(raw: bytes, path) -> Clip:
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            header = json.loads(str(archive["header"]))
            positions = np.asarray(archive["positions"], dtype=float)
            orientations = np.asarray(archive["orientations"], dtype=float)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as error:
        raise TrackError(f"not a looprig tracks NPZ file: {error}", path) from None
    fps, start, end, unit, up, source = _header_fields(header, path)
    names = header.get("track_names")
    flags = header.get("has_orientation")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TrackError("header 'track_names' must be a list of names", path)
    if not isinstance(flags, list) or len(flags) != len(names):
        raise TrackError("header 'has_orientation' must have one flag per track", path)
    if positions.ndim != 3 or positions.shape[0] != len(names) or positions.shape[2] != 3:
        raise TrackError(f"'positions' must have shape ({len(names)}, F, 3), got {positions.shape}", path)
    if orientations.shape != positions.shape[:2] + (4,):
        raise TrackError(
            f"'orientations' must have shape {positions.shape[:2] + (4,)}, got {orientations.shape}", path
        )
    expected = None if end is None else end - start + 1
    tracks = {}
    for k, name in enumerate(names):
        q = check_samples(name, positions[k], orientations[k] if flags[k] else None, start, expected, path)
        tracks[name] = _converted(positions[k], q, unit, up, path)
    return Clip(fps, start, tracks, {**source, "length_unit": unit, "up_axis": up})


# --------------------------------------------------------------------- writing
def _header(clip: Clip, length_unit: str, up_axis: str, source) -> dict:
    src = {
        k: v
        for k, v in (clip.source if source is None else source).items()
        if k not in ("length_unit", "up_axis")
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "fps": float(clip.fps),
        "length_unit": length_unit,
        "up_axis": _up(up_axis),
        "source": src,
        "frame_start": int(clip.frame_start),
        "frame_end": int(clip.frame_end),
    }


def clip_to_dict(clip: Clip, length_unit: str = "m", up_axis: str = "Z", source: dict | None = None) -> dict:
    """The JSON document of a clip, converted to ``length_unit`` and ``up_axis``."""
    clip.validate()
    data = _header(clip, length_unit, up_axis, source)
    tracks = {}
    for name, track in clip.tracks.items():
        p, q = from_looprig(track.positions, track.orientations, length_unit, up_axis)
        entry = {"position": p.tolist()}
        if track.has_orientation:
            entry["orientation"] = quat_normalize(q).tolist()
        tracks[name] = entry
    data["tracks"] = tracks
    return data


def write_tracks(
    clip: Clip, path, length_unit: str = "m", up_axis: str = "Z", source: dict | None = None
) -> Path:
    """Write a clip as JSON (or NPZ when ``path`` ends in ``.npz``), in the given unit and up axis."""
    path = Path(path)
    if path.suffix.lower() == ".npz":
        clip.validate()
        header = _header(clip, length_unit, up_axis, source)
        names = list(clip.tracks)
        header["track_names"] = names
        header["has_orientation"] = [clip.tracks[n].has_orientation for n in names]
        converted = [
            from_looprig(clip.tracks[n].positions, clip.tracks[n].orientations, length_unit, up_axis)
            for n in names
        ]
        n_frames = clip.n_frames
        positions = np.array([p for p, _ in converted]).reshape(len(names), n_frames, 3)
        orientations = np.array([quat_normalize(q) for _, q in converted]).reshape(len(names), n_frames, 4)
        with path.open("wb") as stream:
            np.savez_compressed(
                stream, header=np.array(json.dumps(header)), positions=positions, orientations=orientations
            )
        return path
    path.write_text(json.dumps(clip_to_dict(clip, length_unit, up_axis, source), allow_nan=False) + "\n")
    return path
