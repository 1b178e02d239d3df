"""Export tracked frames from Maya as a looprig tracks file (standard library only).

One module although long: the exporter runs inside Maya's Python with the standard
library only, loaded as one file.

For chosen transforms (names, the selection, or the object set
``looprig_tracks``), sample world matrices over a frame range at a given
rate, sub-frame up to :data:`MAX_RATE_HZ`, and write the tracks file that
``looprig.core.tracks.read_tracks`` reads (format ``looprig-tracks``,
version 1; see that module's docstring): positions in the scene's linear unit
and orientation quaternions ``[w, x, y, z]`` in the scene's up axis, with the
Maya time unit, fps, frame range and scene path recorded in ``source``.

**Sample grid.** The tracks format places sample ``k`` at ``k / fps`` seconds
(``fps`` = the file's sample rate), so samples lie on multiples of
``1 / rate`` seconds from Maya's time zero (frame 0): sample ``k`` is Maya
frame ``k · scene_fps / rate``, and the export covers every such sample
inside ``[start, end]``. When ``rate`` is a whole multiple of the scene's
frame rate (the default rate *is* the scene's), every scene frame is a
sample and frame ``f`` is sample ``f · rate / scene_fps``: 1200 Hz in a
24 fps scene takes 50 samples per frame. :class:`SamplePlan` holds the grid.

**Matrices.** Maya's world matrices are row-major, row-vector (``p_world =
p_local · M``): rows 0-2 are the object's axes in world coordinates (scaled),
row 3 its origin (centimetres from the API). The rotation written is the
polar decomposition of the upper 3x3 block (scale and shear removed); a
mirrored transform (negative determinant) is written with all three axes
negated, and the export lists it in ``ExportResult.warnings``. Quaternions
are made continuous (each sample in the hemisphere of the previous one).

**Aim constraints.** A node driven by an aim constraint brings the node it looks at (and
its world up object, for ``objectrotation``) into the export as tracks, and the file's
``aims`` list gets the mapping entry that says the same (:func:`aim_entries`): copied
into a mapping, the robot frame looks at the target from where the robot's head is.

**Efficiency.** One evaluation per sample time for all nodes (an API
``MDGContext`` per time, see :class:`~looprig.maya_scripts.maya_facade.WorldMatrixSampler`),
no per-attribute queries. The current time and selection are restored
afterwards, also on errors. The file is written to a temporary name and
renamed, so a failure or a cancel never leaves a partial file (and never
touches an existing file of that name).
"""

from __future__ import annotations

import array
import difflib
import io
import json
import math
import os
import struct
import sys
import uuid
import zipfile
from dataclasses import dataclass, field

from .. import __version__
from .errors import ExportCancelled, MayaScriptError, NodeError, RangeError, SampleError

FORMAT = "looprig-tracks"
VERSION = 1
#: Highest sample rate accepted [Hz] (the paper's robots are driven at 1200 Hz).
MAX_RATE_HZ = 1200.0
#: The object set whose members are exported when no nodes are named.
DEFAULT_SET_NAME = "looprig_tracks"
#: Centimetres per Maya linear unit (short and long names).
CM_PER_UNIT = {
    "mm": 0.1,
    "cm": 1.0,
    "m": 100.0,
    "km": 100000.0,
    "in": 2.54,
    "ft": 30.48,
    "yd": 91.44,
    "mi": 160934.4,
}
_LONG_UNIT_NAMES = {
    "millimeter": "mm",
    "centimeter": "cm",
    "meter": "m",
    "kilometer": "km",
    "inch": "in",
    "foot": "ft",
    "yard": "yd",
    "mile": "mi",
}
#: Length units of the tracks format; other Maya units are written in metres.
TRACKS_UNITS = ("m", "cm", "mm", "in", "ft")
#: Tolerance on sample indices when deciding whether a range end is on the grid.
INDEX_TOLERANCE = 1e-6


# ----------------------------------------------------------------------------- sample plan
@dataclass(frozen=True)
class SamplePlan:
    """The samples of one export.

    scene_fps: Maya frames per second; rate: samples per second [Hz];
    first, last: indices of the first and last sample on the ``1 / rate``
    grid (sample ``k`` at ``k / rate`` s = Maya frame ``k · scene_fps / rate``);
    start_frame, end_frame: the requested Maya frame range.
    """

    scene_fps: float
    rate: float
    first: int
    last: int
    start_frame: float
    end_frame: float

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def frame(self, index: int) -> float:
        """Maya frame (UI time unit) of sample ``index``."""
        return index * self.scene_fps / self.rate

    @property
    def frames(self) -> list[float]:
        """Maya frames of all samples, in order."""
        return [self.frame(k) for k in range(self.first, self.last + 1)]

    @property
    def samples_per_frame(self) -> float:
        return self.rate / self.scene_fps


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RangeError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def plan_samples(start_frame, end_frame, scene_fps, rate=None) -> SamplePlan:
    """The sample grid covering Maya frames ``[start_frame, end_frame]`` at ``rate`` Hz.

    rate: samples per second, 0 < rate <= :data:`MAX_RATE_HZ`; None = the
    scene's frame rate (one sample per frame). Raises :class:`RangeError`.
    """
    start = _number(start_frame, "start frame")
    end = _number(end_frame, "end frame")
    fps = _number(scene_fps, "scene frame rate")
    if fps <= 0:
        raise RangeError(f"scene frame rate must be positive, got {fps} fps")
    rate = fps if rate is None else _number(rate, "sample rate")
    if rate <= 0:
        raise RangeError(f"sample rate must be positive, got {rate} Hz")
    if rate > MAX_RATE_HZ:
        raise RangeError(f"sample rate {rate:g} Hz is above the {MAX_RATE_HZ:g} Hz limit")
    if end < start:
        raise RangeError(f"end frame {end:g} is before start frame {start:g}")
    first = math.ceil(start * rate / fps - INDEX_TOLERANCE)
    last = math.floor(end * rate / fps + INDEX_TOLERANCE)
    if last < first:
        raise RangeError(
            f"no sample of the {rate:g} Hz grid (every {fps / rate:g} frames from frame 0) "
            f"falls within frames {start:g}..{end:g}"
        )
    return SamplePlan(fps, rate, first, last, start, end)


# ----------------------------------------------------------------------------- matrices
def _det3(a) -> float:
    return (
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    )


def _inverse_transpose3(a, det: float):
    """``(a^-1)^T`` = cofactor matrix / det."""
    c = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(3):
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            c[i][j] = (a[i1][j1] * a[i2][j2] - a[i1][j2] * a[i2][j1]) / det
    return c


def _frobenius(a) -> float:
    return math.sqrt(sum(x * x for row in a for x in row))


def polar_rotation(a, tolerance: float = 1e-15, max_iterations: int = 100):
    """The rotation factor ``R`` of ``a = R · P`` (P symmetric positive definite), 3x3 nested lists.

    ``a`` must have a positive determinant. Scaled Newton iteration
    ``X <- (g X + (g X)^-T) / 2`` (Higham); pure scale is removed in one step.
    """
    x = [list(row) for row in a]
    for _ in range(max_iterations):
        det = _det3(x)
        inverse_t = _inverse_transpose3(x, det)
        gamma = math.sqrt(_frobenius(inverse_t) / _frobenius(x))
        new = [[0.5 * (gamma * x[i][j] + inverse_t[i][j] / gamma) for j in range(3)] for i in range(3)]
        change = _frobenius([[new[i][j] - x[i][j] for j in range(3)] for i in range(3)])
        x = new
        if change <= tolerance * 10:
            break
    return x


def quaternion_from_rotation(r) -> tuple[float, float, float, float]:
    """Unit quaternion ``(w, x, y, z)`` of a rotation matrix ``r`` (column convention, ``v' = r v``)."""
    trace = r[0][0] + r[1][1] + r[2][2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = (0.25 * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s)
    elif r[0][0] > r[1][1] and r[0][0] > r[2][2]:
        s = 2.0 * math.sqrt(1.0 + r[0][0] - r[1][1] - r[2][2])
        q = ((r[2][1] - r[1][2]) / s, 0.25 * s, (r[0][1] + r[1][0]) / s, (r[0][2] + r[2][0]) / s)
    elif r[1][1] > r[2][2]:
        s = 2.0 * math.sqrt(1.0 + r[1][1] - r[0][0] - r[2][2])
        q = ((r[0][2] - r[2][0]) / s, (r[0][1] + r[1][0]) / s, 0.25 * s, (r[1][2] + r[2][1]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r[2][2] - r[0][0] - r[1][1])
        q = ((r[1][0] - r[0][1]) / s, (r[0][2] + r[2][0]) / s, (r[1][2] + r[2][1]) / s, 0.25 * s)
    norm = math.sqrt(sum(c * c for c in q))
    return tuple(c / norm for c in q)


def decompose_world_matrix(m, node: str = "?", frame: float = float("nan")):
    """Origin and orientation of a Maya world matrix.

    m: 16 floats, Maya's flat row-major, row-vector matrix. Returns
    ``(position, quaternion, mirrored)``: position (3,) in the matrix's unit,
    quaternion ``(w, x, y, z)`` rotating the object's axes into the world,
    mirrored True when the matrix has a negative determinant. Raises
    :class:`SampleError` for non-finite values or a (near) zero scale.
    """
    if len(m) != 16 or not all(math.isfinite(x) for x in m):
        raise SampleError(f"node {node!r} at frame {frame:g}: world matrix is not 16 finite numbers")
    # column j of a = row j of m = the object's axis j in world coordinates
    a = [[m[4 * j + i] for j in range(3)] for i in range(3)]
    lengths = [math.sqrt(sum(a[i][j] ** 2 for i in range(3))) for j in range(3)]
    det = _det3(a)
    if min(lengths) == 0.0 or abs(det) <= 1e-9 * lengths[0] * lengths[1] * lengths[2]:
        raise SampleError(
            f"node {node!r} at frame {frame:g}: zero (or flattening) scale, so its orientation is undefined"
        )
    mirrored = det < 0.0
    if mirrored:
        a = [[-x for x in row] for row in a]
    unit = [[a[i][j] / lengths[j] for j in range(3)] for i in range(3)]
    orthogonal = all(
        abs(sum(unit[i][j] * unit[i][k] for i in range(3))) < 1e-12 for j, k in ((0, 1), (0, 2), (1, 2))
    )
    rotation = unit if orthogonal else polar_rotation(a)
    return (m[12], m[13], m[14]), quaternion_from_rotation(rotation), mirrored


# ----------------------------------------------------------------------------- nodes
def _short(path: str) -> str:
    return path.rsplit("|", 1)[-1]


def _parse_entry(entry: str) -> tuple[str, str | None]:
    """``"node"`` or ``"node=track_name"``."""
    if not isinstance(entry, str) or not entry.strip():
        raise NodeError(f"node names must be non-empty strings, got {entry!r}")
    name, sep, track = entry.partition("=")
    name, track = name.strip(), track.strip()
    if sep and not track:
        raise NodeError(f"{entry!r}: give a track name after '='")
    return name, (track if sep else None)


def resolve_nodes(host, nodes=None, use_selection: bool = False, set_name: str | None = None):
    """The transforms to export: ``[(dag_path, track_name or None)]``, in the order given.

    Exactly one source: ``nodes`` (names, DAG paths or ``*`` patterns, each
    optionally ``"name=track"``), the selection, or object set ``set_name``.
    With none, the set :data:`DEFAULT_SET_NAME` if it exists, else the
    selection. Every missing, ambiguous or non-transform name is reported in
    one :class:`NodeError`.
    """
    given = sum([nodes is not None, bool(use_selection), set_name is not None])
    if given > 1:
        raise MayaScriptError("give node names, the selection or an object set, not several at once")
    if given == 0:
        if host.set_members(DEFAULT_SET_NAME) is not None:
            set_name = DEFAULT_SET_NAME
        elif host.selected_transforms():
            use_selection = True
        else:
            raise NodeError(
                "nothing to export: name the transforms, select them, or put them in an object set "
                f"named {DEFAULT_SET_NAME!r}"
            )
    if use_selection:
        chosen = [(path, None) for path in host.selected_transforms()]
        if not chosen:
            raise NodeError("nothing to export: no transform is selected")
        return _unique(chosen)
    if set_name is not None:
        members = host.set_members(set_name)
        if members is None:
            raise NodeError(f"no object set {set_name!r} in the scene")
        chosen = []
        for member in members:
            paths = host.transforms_named(member)
            if len(paths) == 1:
                chosen.append((paths[0], None))
        if not chosen:
            raise NodeError(f"object set {set_name!r} holds no transforms")
        return _unique(chosen)

    if isinstance(nodes, str):
        nodes = [nodes]
    chosen, missing, ambiguous, wrong_type = [], [], {}, {}
    for entry in nodes:
        name, track = _parse_entry(entry)
        paths = host.transforms_named(name)
        if any(c in name for c in "*?") and paths:
            chosen += [(p, None) for p in paths]
        elif len(paths) == 1:
            chosen.append((paths[0], track))
        elif len(paths) > 1:
            ambiguous[name] = paths
        elif host.node_exists(name):
            wrong_type[name] = host.node_type(name)
        else:
            missing.append(name)
    if missing or ambiguous or wrong_type:
        problems = []
        if missing:
            known = sorted({_short(p) for p in host.all_transforms()})
            for name in missing:
                close = difflib.get_close_matches(_short(name), known, n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                problems.append(f"no transform {name!r} in the scene{hint}")
        for name, paths in ambiguous.items():
            problems.append(
                f"{name!r} matches {len(paths)} transforms ({', '.join(paths)}); give a longer path"
            )
        for name, kind in wrong_type.items():
            problems.append(f"{name!r} is not a transform (it is a {kind})")
        raise NodeError("cannot export: " + "; ".join(problems), missing, ambiguous)
    if not chosen:
        raise NodeError("nothing to export: no node names given")
    return _unique(chosen)


def _unique(chosen):
    seen, out = set(), []
    for path, track in chosen:
        if path not in seen:
            seen.add(path)
            out.append((path, track))
    return out


def track_names_for(chosen) -> dict[str, str]:
    """``{track_name: dag_path}``: the given names, else the node's short name.

    Short names that clash (same name under different parents) grow into the
    shortest distinguishing path (``armL|hand``). Raises :class:`NodeError`
    when two given names are the same.
    """
    names: dict[str, str] = {}
    automatic = [path for path, track in chosen if track is None]
    for path, track in chosen:
        if track is not None:
            if track in names:
                raise NodeError(f"track name {track!r} is given to both {names[track]!r} and {path!r}")
            names[track] = path
    labels = {}
    for path in automatic:
        parts = path.strip("|").split("|")
        for k in range(1, len(parts) + 1):
            label = "|".join(parts[-k:])
            clash = [
                other
                for other in automatic
                if other != path and other.strip("|").split("|")[-k:] == parts[-k:]
            ]
            if not clash and label not in names:
                break
        labels[path] = label
    for path in automatic:
        if labels[path] in names:
            taken = labels[path]
            raise NodeError(f"track name {taken!r} is given to both {names[taken]!r} and {path!r}")
        names[labels[path]] = path
    order = {path: k for k, (path, _track) in enumerate(chosen)}
    return dict(sorted(names.items(), key=lambda item: order[item[1]]))


# ----------------------------------------------------------------------------- aim constraints
def with_aim_targets(host, chosen):
    """``chosen`` ``[(dag_path, track or None)]`` with the nodes the aim constraints driving
    them look at (and their world up objects, for ``objectrotation``) added, and those
    constraints ``[(dag_path, constraint)]`` (see ``maya_facade.aim_constraints``)."""
    aimed, extra = [], []
    for path, _track in chosen:
        for constraint in host.aim_constraints(path):
            aimed.append((path, constraint))
            extra += [(target, None) for target in constraint["targets"][:1]]
            if constraint["world_up_type"] == "objectrotation" and constraint["world_up_object"]:
                extra.append((constraint["world_up_object"], None))
    return _unique(list(chosen) + extra), aimed


def _z_up(vector, up_axis: str):
    """A world direction of the scene in looprig's Z-up axes (Y up: ``(x, y, z) -> (x, -z, y)``)."""
    x, y, z = vector
    return [x, -z, y] if up_axis.upper() == "Y" else [x, y, z]


def aim_entries(aimed, names: dict, up_axis: str):
    """The mapping's ``aims`` entries of aim constraints ``[(dag_path, constraint)]``, and
    warnings for what they cannot say.

    Each entry aims the constrained node's track (``frame``: looprig resolves it to the robot
    frame the mapping's target of that track drives, its axes turned by the target's
    offset) along ``aimVector`` at the first target's track; ``upVector`` (made
    perpendicular to the aim) is kept towards the scene's up (``scene``), a world vector
    (``vector``, in looprig's Z-up axes) or the up object's axes (``objectrotation``);
    ``none`` leaves the roll free. ``object`` (up towards a point) is written as the
    scene's up, with a warning.
    """
    tracks = {path: name for name, path in names.items()}
    entries, warnings = [], []
    for path, constraint in aimed:
        label = f"aim constraint {_short(constraint['name'])!r} on {path!r}"
        targets = constraint["targets"]
        aim = [float(v) for v in constraint["aim"]]
        norm = math.sqrt(sum(v * v for v in aim))
        if not targets or norm == 0.0:
            warnings.append(f"{label}: {'no target' if not targets else 'a zero aim vector'}; left out")
            continue
        if len(targets) > 1:
            warnings.append(
                f"{label} has {len(targets)} targets: its aim entry looks at the first, {targets[0]!r}"
            )
        entry = {"frame": tracks[path], "axis": aim, "track": tracks[targets[0]]}
        kind = constraint["world_up_type"]
        if kind != "none":
            up = [float(v) for v in constraint["up"]]
            along = sum(u * a for u, a in zip(up, aim)) / (norm * norm)  # noqa: B905 (Python 3.7)
            up = [u - along * a for u, a in zip(up, aim)]  # noqa: B905
            if math.sqrt(sum(u * u for u in up)) <= 1e-9 * norm:
                warnings.append(f"{label}: its up vector is along its aim vector; the roll is left free")
            else:
                entry["up"] = up
                if kind == "objectrotation" and constraint["world_up_object"]:
                    entry["up_direction"] = [float(v) for v in constraint["world_up_vector"]]
                    entry["up_track"] = tracks[constraint["world_up_object"]]
                elif kind == "vector":
                    entry["up_direction"] = _z_up([float(v) for v in constraint["world_up_vector"]], up_axis)
                else:
                    if kind != "scene":
                        warnings.append(f"{label}: world up type {kind!r} is written as the scene's up")
                    entry["up_direction"] = [0.0, 0.0, 1.0]
        entries.append(entry)
    return entries, warnings


# ----------------------------------------------------------------------------- files
def file_length_unit(maya_unit: str) -> str:
    """The tracks-file unit for a Maya linear unit: the same when the format has it, else ``m``."""
    unit = _LONG_UNIT_NAMES.get(maya_unit, maya_unit)
    if unit not in CM_PER_UNIT:
        raise MayaScriptError(f"unknown Maya linear unit {maya_unit!r}; units are: {', '.join(CM_PER_UNIT)}")
    return unit if unit in TRACKS_UNITS else "m"


def tracks_document(plan: SamplePlan, tracks, length_unit: str, up_axis: str, source: dict) -> dict:
    """The ``looprig-tracks`` version 1 document.

    tracks: ``{name: (positions, quaternions)}``, each a list of per-sample
    ``[x, y, z]`` (``length_unit``) and ``[w, x, y, z]``.
    """
    return {
        "format": FORMAT,
        "version": VERSION,
        "fps": float(plan.rate),
        "length_unit": length_unit,
        "up_axis": up_axis.upper(),
        "source": source,
        "frame_start": int(plan.first),
        "frame_end": int(plan.last),
        "tracks": {
            name: {"position": [list(p) for p in positions], "orientation": [list(q) for q in quaternions]}
            for name, (positions, quaternions) in tracks.items()
        },
    }


def tracks_json_text(document: dict) -> str:
    """JSON text: an indented header, then one line per track (compact sample arrays)."""
    header = {k: v for k, v in document.items() if k != "tracks"}
    text = json.dumps(header, indent=1, allow_nan=False)
    lines = [
        f" {json.dumps(name)}: " + json.dumps(entry, separators=(",", ":"), allow_nan=False)
        for name, entry in document["tracks"].items()
    ]
    body = ',\n "tracks": {\n' + ",\n".join(" " + line for line in lines) + "\n }\n}\n"
    return text[: text.rindex("}")].rstrip() + body


def _npy(descr: str, shape: tuple, payload: bytes) -> bytes:
    """One ``.npy`` (format 1.0) file: magic, header dict padded to 64 bytes, raw data."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    pad = (-(10 + len(header) + 1)) % 64
    header += " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def _float64(values) -> bytes:
    data = array.array("d", values)
    if sys.byteorder == "big":
        data.byteswap()
    return data.tobytes()


def tracks_npz_bytes(document: dict) -> bytes:
    """The NPZ variant of a tracks document (see ``looprig.core.tracks``), built without numpy.

    Arrays ``header`` (0-d unicode: the JSON header with ``track_names`` and
    ``has_orientation``), ``positions`` (T, F, 3) and ``orientations`` (T, F, 4), float64.
    """
    names = list(document["tracks"])
    header = {k: v for k, v in document.items() if k != "tracks"}
    header["track_names"] = names
    header["has_orientation"] = [True] * len(names)
    header_text = json.dumps(header, allow_nan=False)
    n_frames = document["frame_end"] - document["frame_start"] + 1
    positions = [x for n in names for p in document["tracks"][n]["position"] for x in p]
    orientations = [x for n in names for q in document["tracks"][n]["orientation"] for x in q]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.npy", _npy(f"<U{len(header_text)}", (), header_text.encode("utf-32-le")))
        archive.writestr("positions.npy", _npy("<f8", (len(names), n_frames, 3), _float64(positions)))
        archive.writestr("orientations.npy", _npy("<f8", (len(names), n_frames, 4), _float64(orientations)))
    return buffer.getvalue()


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file next to ``path``, then rename it over ``path``."""
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise MayaScriptError(f"cannot write {path!r}: folder {folder!r} does not exist")
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "xb") as stream:
            stream.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_tracks_file(document: dict, path: str) -> str:
    """Write a tracks document as JSON, or NPZ when ``path`` ends in ``.npz``; returns the path."""
    if path.lower().endswith(".npz"):
        write_atomic(path, tracks_npz_bytes(document))
    else:
        write_atomic(path, tracks_json_text(document).encode("utf-8"))
    return os.path.abspath(path)


# ----------------------------------------------------------------------------- export
@dataclass
class ExportResult:
    """What an export wrote: path, ``{track: dag_path}``, the sample plan, the file's unit and up axis."""

    path: str
    tracks: dict
    plan: SamplePlan
    length_unit: str
    up_axis: str
    warnings: list = field(default_factory=list)
    aims: list = field(default_factory=list)  # the mapping's aims entries its aim constraints give

    @property
    def samples(self) -> int:
        return self.plan.count

    def summary(self) -> str:
        p = self.plan
        return (
            f"wrote {len(self.tracks)} track(s) x {p.count} samples at {p.rate:g} Hz "
            f"(Maya frames {p.frame(p.first):g}..{p.frame(p.last):g}, {self.length_unit}, "
            f"{self.up_axis} up) to {self.path}"
            + (f", with {len(self.aims)} aim(s) from aim constraints" if self.aims else "")
        )


def _default_host():
    from . import maya_facade

    return maya_facade


def export_tracks(
    path: str,
    nodes=None,
    *,
    use_selection: bool = False,
    set_name: str | None = None,
    start: float | None = None,
    end: float | None = None,
    rate: float | None = None,
    evaluation: str = "context",
    progress=None,
    host=None,
) -> ExportResult:
    """Sample the world transforms of Maya nodes and write a looprig tracks file.

    path: ``.json`` (or ``.npz``) file to write. nodes / use_selection /
    set_name: what to export (see :func:`resolve_nodes`). start, end: Maya
    frames (default: the playback range). rate: samples per second, up to
    :data:`MAX_RATE_HZ` (default: the scene's fps). evaluation: ``context``
    or ``timeline`` (see ``maya_facade.WorldMatrixSampler``). progress:
    ``progress(done, total)`` called as samples are taken; raise
    :class:`ExportCancelled` from it to stop (nothing is written). host: the
    Maya facade (tests pass the same module, running on the emulation).

    Raises :class:`NodeError`, :class:`RangeError`, :class:`SampleError`,
    :class:`ExportCancelled` (all :class:`MayaScriptError`); no file is
    written then, and the current time and selection are restored.
    """
    host = host or _default_host()
    saved_time = host.current_time()
    saved_selection = host.selection()
    suspended = False
    try:
        chosen, aimed = with_aim_targets(host, resolve_nodes(host, nodes, use_selection, set_name))
        names = track_names_for(chosen)
        first_frame, last_frame = host.playback_range()
        plan = plan_samples(
            first_frame if start is None else start,
            last_frame if end is None else end,
            host.frames_per_second(),
            rate,
        )
        maya_unit = _LONG_UNIT_NAMES.get(host.linear_unit(), host.linear_unit())
        unit = file_length_unit(maya_unit)
        scale = CM_PER_UNIT[unit]
        up = host.up_axis().upper()
        sampler = host.WorldMatrixSampler(list(names.values()), evaluation)
        if evaluation == "timeline":
            host.suspend_refresh(True)
            suspended = True
        track_list = list(names)
        positions = {n: [] for n in track_list}
        quaternions = {n: [] for n in track_list}
        warnings: list[str] = []
        mirrored_seen = set()
        step = max(1, plan.count // 100)
        for done, index in enumerate(range(plan.first, plan.last + 1), start=1):
            frame = plan.frame(index)
            matrices = sampler.sample(frame)
            for name, matrix in zip(track_list, matrices):  # noqa: B905 (Python 3.7 in Maya 2022)
                p, q, mirrored = decompose_world_matrix(matrix, names[name], frame)
                if mirrored and name not in mirrored_seen:
                    mirrored_seen.add(name)
                    warnings.append(
                        f"node {names[name]!r} is mirrored (negative scale) from frame {frame:g}: "
                        "its orientation is written with all three axes negated"
                    )
                previous = quaternions[name][-1] if quaternions[name] else (1.0, 0.0, 0.0, 0.0)
                if sum(a * b for a, b in zip(q, previous)) < 0.0:  # noqa: B905 (Python 3.7 in Maya 2022)
                    q = tuple(-c for c in q)
                positions[name].append([c / scale for c in p])
                quaternions[name].append(list(q))
            if progress is not None and (done % step == 0 or done == plan.count):
                progress(done, plan.count)
        source = {
            "application": f"Maya {host.maya_version()}",
            "scene": host.scene_path() or "(untitled)",
            "exporter": f"looprig.maya_scripts {__version__}",
            "maya_linear_unit": maya_unit,
            "maya_up_axis": up,
            "maya_time_unit": host.time_unit(),
            "maya_fps": plan.scene_fps,
            "maya_frame_start": plan.start_frame,
            "maya_frame_end": plan.end_frame,
            "maya_first_sample_frame": plan.frame(plan.first),
            "maya_last_sample_frame": plan.frame(plan.last),
            "sample_rate_hz": plan.rate,
            "evaluation": evaluation,
            "nodes": dict(names),
        }
        aims, aim_warnings = aim_entries(aimed, names, up)
        warnings += aim_warnings
        if warnings:
            source["warnings"] = list(warnings)
        document = tracks_document(
            plan, {n: (positions[n], quaternions[n]) for n in track_list}, unit, up, source
        )
        if aims:
            document["aims"] = aims
        written = write_tracks_file(document, path)
        return ExportResult(written, dict(names), plan, unit, up, warnings, aims)
    finally:
        if suspended:
            host.suspend_refresh(False)
        if host.current_time() != saved_time:
            host.set_current_time(saved_time)
        if host.selection() != saved_selection:
            host.set_selection(saved_selection)


__all__ = [
    "DEFAULT_SET_NAME",
    "MAX_RATE_HZ",
    "ExportCancelled",
    "ExportResult",
    "SamplePlan",
    "decompose_world_matrix",
    "export_tracks",
    "plan_samples",
    "resolve_nodes",
    "track_names_for",
    "write_tracks_file",
]
