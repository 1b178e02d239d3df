"""The native looprig mechanism file: versioned JSON, lossless for a Mechanism.

One module although long: writer, reader and schema of one file format stay in step only side by side.

A native file holds everything a :class:`~looprig.core.model.mechanism.Mechanism`
can express — bodies, every joint kind, actuators with limits and hardware
ids, named frames, mesh references — so ``save -> load`` gives the same
mechanism (floats are written with Python's shortest round-trip repr; unit
quaternions and axes are renormalised by the Mechanism on load, which may move
them by one unit in the last place). It is what the Blender add-on saves and
what the command line reads. The schema (JSON Schema, draft 2020-12) is
:data:`NATIVE_SCHEMA`, also printed in ``docs/files.md``.

Conventions: lengths in metres, angles in radians, masses in kilograms; all
geometry in world coordinates of the initial configuration (as in the
Mechanism); quaternions ``[w, x, y, z]``; 4x4 matrices as lists of rows;
unbounded limits as ``null`` (JSON has no infinity).

Mesh paths: a relative path is relative to the file's folder; on saving, an
absolute path inside that folder is written relative (so a folder of model and
meshes can move), any other path or URI as it is. Relative paths held in
memory are taken relative to the current directory and come back absolute.

Example (a pendulum)::

    {
      "format": "looprig-mechanism",
      "version": 1,
      "name": "pendulum",
      "bodies": [
        {"name": "base", "position": [0, 0, 0], "orientation": [1, 0, 0, 0],
         "mass": 1.0, "grounded": true},
        {"name": "arm", "position": [0.1, 0, 0], "orientation": [1, 0, 0, 0],
         "mass": 0.2, "inertia": null, "mesh": "meshes/arm.stl"}
      ],
      "joints": [
        {"name": "hinge", "kind": "revolute", "parent": "base", "child": "arm",
         "anchor": [0, 0, 0], "axis": [0, 0, 1],
         "actuator": {"motion": "angle", "lower": -1.5, "upper": 1.5,
                      "velocity_limit": 6.0, "acceleration_limit": null,
                      "hardware_id": 1}}
      ],
      "frames": [{"name": "tip", "body": "arm", "position": [0.2, 0, 0],
                  "orientation": [1, 0, 0, 0]}]
    }
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from ..core.errors import MechanismError
from ..core.model.filevalues import limit_from_file, limit_to_file
from ..core.model.mechanism import Mechanism
from ..core.model.parts import (
    LIMIT_FIELDS,
    ActuatedMotion,
    Actuator,
    Body,
    Coupling,
    Frame,
    Joint,
    JointKind,
    LimitSource,
)
from ..core.model.servos import ServoError, servo_model
from .errors import MAX_MODEL_BYTES, FileFormatError, check_file_size
from .tree import ImportedModel, MeshRef

FORMAT = "looprig-mechanism"
#: Largest magnitude accepted for any number in a file (lengths in metres, masses in kg...).
MAX_MAGNITUDE = 1e100
VERSION = 1
SUFFIX = ".looprig.json"

_vec3 = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
_quat = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
_mat = {
    "type": "array",
    "items": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
    "minItems": 4,
    "maxItems": 4,
}
_limit = {"type": ["number", "null"]}

#: JSON Schema of the native mechanism file (version 1).
NATIVE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "looprig mechanism file",
    "type": "object",
    "required": ["format", "version", "name", "bodies", "joints"],
    "properties": {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "name": {"type": "string"},
        "units": {
            "description": "informative; always metres, radians, kilograms",
            "type": "object",
        },
        "bodies": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "position", "orientation", "mass"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "position": {**_vec3, "description": "CoM, world, initial [m]"},
                    "orientation": {**_quat, "description": "unit quaternion w, x, y, z: body to world"},
                    "mass": {"type": "number", "exclusiveMinimum": 0, "description": "[kg]"},
                    "inertia": {
                        "description": "3x3 about the CoM in body axes [kg m^2], or null",
                        "type": ["array", "null"],
                        "items": _vec3,
                        "minItems": 3,
                        "maxItems": 3,
                    },
                    "grounded": {"type": "boolean", "default": False},
                    "mesh": {"type": ["string", "null"], "description": "display mesh path or URI"},
                    "color": {**_quat, "description": "display colour r, g, b, a in [0, 1] (optional)"},
                    "T_body_mesh": {**_mat, "description": "mesh file -> body coordinates (may scale)"},
                    "meshes": {
                        "description": "every mesh of the body (the importers' visual and collision meshes)",
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["path", "T_body_mesh"],
                            "properties": {
                                "path": {"type": "string"},
                                "T_body_mesh": _mat,
                                "role": {"enum": ["visual", "collision"]},
                                "rgba": {"type": ["array", "null"], "items": {"type": "number"}},
                            },
                        },
                    },
                },
            },
        },
        "joints": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "kind", "parent", "child", "anchor", "axis"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "kind": {"enum": [k.value for k in JointKind]},
                    "parent": {"type": "string"},
                    "child": {"type": "string"},
                    "anchor": {**_vec3, "description": "world, initial [m]"},
                    "axis": {**_vec3, "description": "world, initial; non-zero"},
                    "secondary_axis": {"type": ["array", "null"], "items": {"type": "number"}},
                    "gap": {
                        "type": "number",
                        "minimum": 0,
                        "description": "[m] how far apart the loop this joint closes is left by "
                        "the file it came from (the solvers meet the constraints to it); default 0",
                    },
                    "actuator": {
                        "type": ["object", "null"],
                        "properties": {
                            "name": {
                                "type": ["string", "null"],
                                "minLength": 1,
                                "description": "the motor's name (curves carry it); null: the joint's",
                            },
                            "motion": {"enum": [m.value for m in ActuatedMotion]},
                            "lower": _limit,
                            "upper": _limit,
                            "velocity_limit": _limit,
                            "acceleration_limit": _limit,
                            "hardware_id": {"type": ["integer", "string", "null"]},
                            "zero_offset_ticks": {"type": "integer", "description": "servo ticks at value 0"},
                            "direction": {"enum": [1, -1]},
                            "metres_per_revolution": {
                                "type": ["number", "null"],
                                "description": "displacement per servo turn [m]",
                            },
                            "servo": {
                                "type": ["string", "null"],
                                "description": "servo model, a name of looprig's catalogue",
                            },
                            "rotor_inertia": {
                                "type": "number",
                                "description": "rotor inertia reflected to the joint [kg m^2 or kg]",
                            },
                            "limit_sources": {
                                "type": "object",
                                "description": "where a limit came from, when not the file itself",
                                "properties": {
                                    k: {"enum": [s.value for s in LimitSource]} for k in LIMIT_FIELDS
                                },
                            },
                        },
                    },
                },
            },
        },
        "couplings": {
            "description": "joints that follow others: value(joint) = offset + sum_k (ratios[k] "
            "value(sources[k]) + sum_p polynomial[k][p - 2] value(sources[k])^p), p = 2, 3, ...; "
            "one source: a gear, several: a differential (a file written before differentials "
            "may give one 'source' and 'ratio' instead)",
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "joint", "sources", "ratios"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "joint": {"type": "string", "description": "revolute or prismatic joint that follows"},
                    "sources": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "string"},
                        "description": "revolute or prismatic joints it follows",
                    },
                    "ratios": {
                        "type": "array",
                        "items": {"type": "number"},
                        "description": "one per source [rad/rad, m/m, rad/m or m/rad]",
                    },
                    "offset": {"type": "number", "default": 0, "description": "[rad or m] of joint"},
                    "polynomial": {
                        "type": "array",
                        "items": {"type": "array", "items": {"type": "number"}},
                        "description": "none (linear), or per source the coefficients of its value "
                        "squared, cubed, ... [unit of joint / unit of source^p]",
                    },
                },
            },
        },
        "frames": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "body", "position", "orientation"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "body": {"type": "string"},
                    "position": _vec3,
                    "orientation": _quat,
                },
            },
        },
    },
}


# --------------------------------------------------------------------- writing
def _floats(array) -> list:
    return np.asarray(array, dtype=float).tolist()


def _path_out(path: str, base: Path) -> str:
    if "://" in path:
        return path
    p = Path(path)
    if not p.is_absolute():
        p = Path(os.path.abspath(p))
    text = str(p)
    if os.path.normpath(text) == text:
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            pass
    return text


def mechanism_to_dict(mechanism: Mechanism, meshes=None, base_dir=None) -> dict:
    """The native-file content of a mechanism (paths relative to ``base_dir``).

    meshes: optional ``{body name: [MeshRef, ...]}`` (body coordinates), as an
    :class:`ImportedModel` carries.
    """
    base = Path(os.path.abspath(base_dir or "."))
    bodies = []
    for b in mechanism.bodies:
        entry = {
            "name": b.name,
            "position": _floats(b.position),
            "orientation": _floats(b.orientation),
            "mass": float(b.mass),
            "inertia": None if b.inertia is None else _floats(b.inertia),
            "grounded": bool(b.grounded),
            "mesh": None if b.mesh is None else _path_out(str(b.mesh), base),
        }
        if not np.array_equal(b.T_body_mesh, np.eye(4)):
            entry["T_body_mesh"] = _floats(b.T_body_mesh)
        if b.color is not None:
            entry["color"] = [float(c) for c in b.color]
        if meshes and meshes.get(b.name):
            entry["meshes"] = [
                {
                    "path": _path_out(m.path, base),
                    "T_body_mesh": _floats(m.T_link_mesh),
                    "role": m.role,
                    "rgba": None if m.rgba is None else [float(c) for c in m.rgba],
                }
                for m in meshes[b.name]
            ]
        bodies.append(entry)
    joints = []
    for j in mechanism.joints:
        entry = {
            "name": j.name,
            "kind": j.kind.value,
            "parent": j.parent,
            "child": j.child,
            "anchor": _floats(j.anchor),
            "axis": _floats(j.axis),
            "secondary_axis": None if j.secondary_axis is None else _floats(j.secondary_axis),
            "actuator": None,
        }
        if j.gap > 0:
            entry["gap"] = float(j.gap)
        a = j.actuator
        if a is not None:
            hardware = a.hardware_id
            if isinstance(hardware, np.integer):
                hardware = int(hardware)
            entry["actuator"] = {
                "name": a.name,
                "motion": ActuatedMotion(a.motion).value,
                "lower": limit_to_file(a.lower),
                "upper": limit_to_file(a.upper),
                "velocity_limit": limit_to_file(a.velocity_limit),
                "acceleration_limit": limit_to_file(a.acceleration_limit),
                "hardware_id": hardware,
                "zero_offset_ticks": int(a.zero_offset_ticks),
                "direction": int(a.direction),
                "metres_per_revolution": None
                if a.metres_per_revolution is None
                else float(a.metres_per_revolution),
                "servo": a.servo,
                "rotor_inertia": float(a.rotor_inertia),
                "limit_sources": dict(a.limit_sources),
            }
        joints.append(entry)
    frames = [
        {
            "name": f.name,
            "body": f.body,
            "position": _floats(f.position),
            "orientation": _floats(f.orientation),
        }
        for f in mechanism.frames
    ]
    document = {
        "format": FORMAT,
        "version": VERSION,
        "name": mechanism.name,
        "units": {"length": "m", "angle": "rad", "mass": "kg"},
        "bodies": bodies,
        "joints": joints,
        "frames": frames,
    }
    if mechanism.couplings:
        document["couplings"] = [coupling_to_dict(c) for c in mechanism.couplings]
    return document


def coupling_to_dict(coupling: Coupling) -> dict:
    """A coupling as the native file writes it (an entry of ``couplings``)."""
    c = coupling
    return {
        "name": c.name,
        "joint": c.joint,
        "sources": list(c.sources),
        "ratios": [float(r) for r in c.ratios],
        "offset": float(c.offset),
        **({"polynomial": [[float(x) for x in p] for p in c.polynomial]} if c.polynomial else {}),
    }


def coupling_from_dict(entry, where: str, path=None) -> Coupling:
    """The coupling a native ``couplings`` entry describes; a malformed one raises
    FileFormatError naming ``path`` and the element ``where``."""
    return _Reader(path, Path(".")).coupling(entry, where)


def _compact_json(value, indent: int = 0) -> str:
    """JSON with one line per object member and numeric arrays kept on one line."""
    pad, inner = " " * indent, " " * (indent + 2)

    def scalar_list(v):
        return isinstance(v, list) and all(not isinstance(x, (list, dict)) for x in v)

    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {_compact_json(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if scalar_list(value) or (all(scalar_list(v) for v in value) and value):
            return json.dumps(value, allow_nan=False)
        items = [inner + _compact_json(v, indent + 2) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]" if items else "[]"
    return json.dumps(value, allow_nan=False)


def save_mechanism(mechanism, path, meshes=None) -> Path:
    """Write a mechanism (or an :class:`ImportedModel`, meshes included) as a native file.

    Returns the path written. The conventional suffix is ``.looprig.json``.
    """
    if isinstance(mechanism, ImportedModel):
        meshes = mechanism.meshes if meshes is None else meshes
        mechanism = mechanism.mechanism
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a Mechanism or ImportedModel, got {type(mechanism).__name__}")
    path = Path(path)
    data = mechanism_to_dict(mechanism, meshes, path.parent)
    try:
        path.write_text(_compact_json(data) + "\n")
    except OSError as error:
        raise FileFormatError(path, f"cannot write file: {error.strerror or error}") from None
    return path


# --------------------------------------------------------------------- reading
class _Reader:
    """Checks one native document, naming the element of every problem."""

    def __init__(self, path, base: Path):
        self.path = path
        self.base = base

    def fail(self, where: str, problem: str):
        raise FileFormatError(self.path, problem, where)

    def obj(self, value, where) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {type(value).__name__}")
        return value

    def get(self, obj: dict, key: str, where: str, default=..., kind=None):
        if key not in obj:
            if default is ...:
                self.fail(where, f"missing {key!r}")
            return default
        value = obj[key]
        if (kind is not None and not isinstance(value, kind)) or (
            isinstance(value, bool) and kind in (int, float)
        ):
            self.fail(f"{where}.{key}", f"expected {getattr(kind, '__name__', kind)}, got {value!r}")
        return value

    def name(self, obj, key, where) -> str:
        value = self.get(obj, key, where)
        if not isinstance(value, str) or not value:
            self.fail(f"{where}.{key}", f"expected a non-empty string, got {value!r}")
        return value

    def numbers(self, value, shape, where) -> np.ndarray:
        def numeric(v, depth=0):
            if isinstance(v, list):
                return depth < 3 and all(numeric(x, depth + 1) for x in v)
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        array = None
        if numeric(value):
            try:
                array = np.array(value, dtype=float)
            except (ValueError, OverflowError):
                array = None
        if array is None or array.shape != shape:
            got = "ragged or non-numeric data" if array is None else f"shape {array.shape}"
            self.fail(where, f"expected numbers of shape {shape}, got {got}")
        if not np.all(np.isfinite(array)):
            self.fail(where, "values must be finite")
        if np.any(np.abs(array) > MAX_MAGNITUDE):
            self.fail(where, f"values out of range (magnitude above {MAX_MAGNITUDE:g})")
        return array

    def number(self, value, where) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, f"expected a number, got {value!r}")
        try:
            value = float(value)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            self.fail(where, "must be finite (write null for no limit)")
        if abs(value) > MAX_MAGNITUDE:
            self.fail(where, f"value out of range (magnitude above {MAX_MAGNITUDE:g})")
        return value

    def path_in(self, value, where) -> str:
        if not isinstance(value, str) or not value:
            self.fail(where, f"expected a path string, got {value!r}")
        if "://" in value:
            return value
        p = Path(value)
        return str(p) if p.is_absolute() else os.path.normpath(self.base / p)

    def body(self, entry, where) -> tuple[Body, list[MeshRef]]:
        entry = self.obj(entry, where)
        inertia = entry.get("inertia")
        mesh = entry.get("mesh")
        T = entry.get("T_body_mesh")
        color = entry.get("color")
        meshes = []
        for k, m in enumerate(self.get(entry, "meshes", where, [], list)):
            w = f"{where}.meshes[{k}]"
            m = self.obj(m, w)
            role = m.get("role", "visual")
            if role not in ("visual", "collision"):
                self.fail(f"{w}.role", f"expected 'visual' or 'collision', got {role!r}")
            rgba = m.get("rgba")
            meshes.append(
                MeshRef(
                    self.path_in(self.get(m, "path", w), f"{w}.path"),
                    self.numbers(self.get(m, "T_body_mesh", w), (4, 4), f"{w}.T_body_mesh"),
                    role,
                    None if rgba is None else tuple(self.numbers(rgba, (4,), f"{w}.rgba")),
                )
            )
        grounded = self.get(entry, "grounded", where, False)
        if not isinstance(grounded, bool):
            self.fail(f"{where}.grounded", f"expected true or false, got {grounded!r}")
        body = Body(
            name=self.name(entry, "name", where),
            position=self.numbers(self.get(entry, "position", where), (3,), f"{where}.position"),
            orientation=self.numbers(self.get(entry, "orientation", where), (4,), f"{where}.orientation"),
            mass=self.number(self.get(entry, "mass", where), f"{where}.mass"),
            inertia=None if inertia is None else self.numbers(inertia, (3, 3), f"{where}.inertia"),
            grounded=grounded,
            mesh=None if mesh is None else self.path_in(mesh, f"{where}.mesh"),
            T_body_mesh=np.eye(4) if T is None else self.numbers(T, (4, 4), f"{where}.T_body_mesh"),
            color=None if color is None else tuple(self.numbers(color, (4,), f"{where}.color")),
        )
        return body, meshes

    def limit(self, obj, key, where, unbounded):
        value = obj.get(key)
        return limit_from_file(None if value is None else self.number(value, f"{where}.{key}"), unbounded)

    def joint(self, entry, where) -> Joint:
        entry = self.obj(entry, where)
        kind = self.get(entry, "kind", where)
        valid = [k.value for k in JointKind]
        if kind not in valid:
            self.fail(f"{where}.kind", f"unknown joint kind {kind!r}; kinds are: {', '.join(valid)}")
        actuator = entry.get("actuator")
        if actuator is not None:
            w = f"{where}.actuator"
            actuator = self.obj(actuator, w)
            motion = actuator.get("motion", "angle")
            if motion not in [m.value for m in ActuatedMotion]:
                self.fail(f"{w}.motion", f"expected 'angle' or 'displacement', got {motion!r}")
            hardware = actuator.get("hardware_id")
            if isinstance(hardware, bool) or not isinstance(hardware, (int, str, type(None))):
                self.fail(f"{w}.hardware_id", f"expected an integer, a string or null, got {hardware!r}")
            zero = actuator.get("zero_offset_ticks", 2048)
            if isinstance(zero, bool) or not isinstance(zero, int):
                self.fail(f"{w}.zero_offset_ticks", f"expected an integer, got {zero!r}")
            direction = actuator.get("direction", 1)
            if direction not in (1, -1) or isinstance(direction, bool):
                self.fail(f"{w}.direction", f"expected 1 or -1, got {direction!r}")
            motor_name = actuator.get("name")
            if motor_name is not None and (not isinstance(motor_name, str) or not motor_name):
                self.fail(f"{w}.name", f"expected a non-empty string, got {motor_name!r}")
            travel = actuator.get("metres_per_revolution")
            if travel is not None and (
                isinstance(travel, bool) or not isinstance(travel, (int, float)) or not travel > 0
            ):
                self.fail(f"{w}.metres_per_revolution", f"expected a positive number or null, got {travel!r}")
            servo = actuator.get("servo")
            if servo is not None:
                try:
                    servo = servo_model(str(servo)).name
                except ServoError as error:
                    self.fail(f"{w}.servo", str(error))
            rotor = actuator.get("rotor_inertia", 0.0)
            if isinstance(rotor, bool) or not isinstance(rotor, (int, float)) or not 0 <= rotor < math.inf:
                self.fail(f"{w}.rotor_inertia", f"expected a finite number >= 0, got {rotor!r}")
            sources = self.obj(actuator.get("limit_sources", {}), f"{w}.limit_sources")
            for limit, source in sources.items():
                if limit not in LIMIT_FIELDS or source not in [s.value for s in LimitSource]:
                    self.fail(
                        f"{w}.limit_sources",
                        f"expected limit: source with limits {', '.join(LIMIT_FIELDS)} and sources "
                        f"{', '.join(s.value for s in LimitSource)}, got {limit!r}: {source!r}",
                    )
            actuator = Actuator(
                motion=ActuatedMotion(motion),
                lower=self.limit(actuator, "lower", w, -math.inf),
                upper=self.limit(actuator, "upper", w, math.inf),
                velocity_limit=self.limit(actuator, "velocity_limit", w, math.inf),
                acceleration_limit=self.limit(actuator, "acceleration_limit", w, math.inf),
                hardware_id=hardware,
                zero_offset_ticks=zero,
                direction=direction,
                metres_per_revolution=None if travel is None else float(travel),
                name=motor_name,
                servo=servo,
                limit_sources=tuple(sorted(sources.items())),
                rotor_inertia=rotor,
            )
        secondary = entry.get("secondary_axis")
        gap = entry.get("gap", 0.0)
        if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not 0 <= gap < math.inf:
            self.fail(f"{where}.gap", f"expected a finite number of metres >= 0, got {gap!r}")
        return Joint(
            name=self.name(entry, "name", where),
            kind=JointKind(kind),
            parent=self.name(entry, "parent", where),
            child=self.name(entry, "child", where),
            anchor=self.numbers(self.get(entry, "anchor", where), (3,), f"{where}.anchor"),
            axis=self.numbers(self.get(entry, "axis", where), (3,), f"{where}.axis"),
            secondary_axis=None
            if secondary is None
            else self.numbers(secondary, (3,), f"{where}.secondary_axis"),
            actuator=actuator,
            gap=float(gap),
        )

    def number_list(self, value, where) -> tuple[float, ...]:
        if not isinstance(value, list):
            self.fail(where, f"expected a list of numbers, got {value!r}")
        return tuple(self.number(x, f"{where}[{k}]") for k, x in enumerate(value))

    def coupling(self, entry, where) -> Coupling:
        entry = self.obj(entry, where)
        if "source" in entry and "sources" not in entry:  # a file written before differentials
            sources = (self.name(entry, "source", where),)
            ratios = (self.number(self.get(entry, "ratio", where), f"{where}.ratio"),)
        else:
            sources = tuple(self.get(entry, "sources", where, kind=list))
            if not all(isinstance(n, str) and n for n in sources):
                self.fail(f"{where}.sources", f"expected a list of joint names, got {list(sources)!r}")
            ratios = self.number_list(self.get(entry, "ratios", where), f"{where}.ratios")
        rows = self.get(entry, "polynomial", where, [], list)
        return Coupling(
            name=self.name(entry, "name", where),
            joint=self.name(entry, "joint", where),
            sources=sources,
            ratios=ratios,
            offset=self.number(entry.get("offset", 0.0), f"{where}.offset"),
            polynomial=tuple(self.number_list(row, f"{where}.polynomial[{k}]") for k, row in enumerate(rows)),
        )

    def frame(self, entry, where) -> Frame:
        entry = self.obj(entry, where)
        return Frame(
            name=self.name(entry, "name", where),
            body=self.name(entry, "body", where),
            position=self.numbers(self.get(entry, "position", where), (3,), f"{where}.position"),
            orientation=self.numbers(self.get(entry, "orientation", where), (4,), f"{where}.orientation"),
        )


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON (write null for an unbounded limit)")


def mechanism_from_dict(data, path=None, base_dir=None) -> ImportedModel:
    """Build the mechanism a native document describes (see :data:`NATIVE_SCHEMA`)."""
    reader = _Reader(path, Path(os.path.abspath(base_dir or ".")))
    data = reader.obj(data, "document")
    if data.get("format") != FORMAT:
        reader.fail("format", f'expected "format": "{FORMAT}", got {data.get("format")!r}')
    version = data.get("version")
    if version != VERSION:
        reader.fail("version", f"this looprig reads version {VERSION}, the file is version {version!r}")
    name = reader.get(data, "name", "document", "mechanism", str)
    bodies, meshes = [], {}
    for k, entry in enumerate(reader.get(data, "bodies", "document", kind=list)):
        body, body_meshes = reader.body(entry, f"bodies[{k}]")
        bodies.append(body)
        if body_meshes:
            meshes[body.name] = body_meshes
    joints = [
        reader.joint(e, f"joints[{k}]")
        for k, e in enumerate(reader.get(data, "joints", "document", kind=list))
    ]
    frames = [
        reader.frame(e, f"frames[{k}]")
        for k, e in enumerate(reader.get(data, "frames", "document", [], list))
    ]
    couplings = [
        reader.coupling(e, f"couplings[{k}]")
        for k, e in enumerate(reader.get(data, "couplings", "document", [], list))
    ]
    try:
        mechanism = Mechanism(bodies, joints, frames, name=name, couplings=couplings)
    except MechanismError as error:
        raise FileFormatError(path, str(error)) from None
    return ImportedModel(mechanism, meshes, {}, 0.0, None if path is None else str(path), [])


def load_native(path, text: str | None = None) -> ImportedModel:
    """Read a native mechanism file."""
    path = Path(path)
    try:
        if text is None:
            check_file_size(path, MAX_MODEL_BYTES)
            text = path.read_text(encoding="utf-8")
        data = json.loads(text, parse_constant=_reject_constant)
    except OSError as error:
        raise FileFormatError(path, f"cannot read file: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise FileFormatError(path, f"not UTF-8 text: {error.reason}") from None
    except json.JSONDecodeError as error:
        raise FileFormatError(
            path, f"not valid JSON: {error.msg} (column {error.colno})", line=error.lineno
        ) from None
    except (ValueError, RecursionError) as error:
        raise FileFormatError(path, f"not valid JSON: {error}") from None
    try:
        return mechanism_from_dict(data, path, path.parent)
    except RecursionError:
        raise FileFormatError(path, "nesting too deep") from None
