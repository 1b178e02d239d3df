"""The native looprig mechanism file: versioned JSON, lossless for a Mechanism.

The reader is :mod:`.native_read`; the round-trip tests keep the two in step.

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
import os
from pathlib import Path

import numpy as np

from ..core.model.filevalues import limit_to_file
from ..core.model.mechanism import Mechanism
from ..core.model.parts import (
    LIMIT_FIELDS,
    ActuatedMotion,
    Coupling,
    JointKind,
    LimitSource,
)
from .errors import FileFormatError
from .specs import ImportedModel

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


def _named_list(required: list[str], properties: dict) -> dict:
    """Schema of a list of objects that each have a non-empty ``name``: ``required`` lists the
    other properties an object must have, ``properties`` describes all of them but the name."""
    name = {"type": "string", "minLength": 1}
    item = {"type": "object", "required": ["name", *required], "properties": {"name": name, **properties}}
    return {"type": "array", "items": item}


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
        "bodies": _named_list(
            ["position", "orientation", "mass"],
            {
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
        ),
        "joints": _named_list(
            ["kind", "parent", "child", "anchor", "axis"],
            {
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
                            "properties": {k: {"enum": [s.value for s in LimitSource]} for k in LIMIT_FIELDS},
                        },
                    },
                },
            },
        ),
        "couplings": {
            "description": "joints that follow others: value(joint) = offset + sum_k (ratios[k] "
            "value(sources[k]) + sum_p polynomial[k][p - 2] value(sources[k])^p), p = 2, 3, ...; "
            "one source: a gear, several: a differential (a file written before differentials "
            "may give one 'source' and 'ratio' instead)",
            **_named_list(
                ["joint", "sources", "ratios"],
                {
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
            ),
        },
        "frames": _named_list(
            ["body", "position", "orientation"],
            {
                "body": {"type": "string"},
                "position": _vec3,
                "orientation": _quat,
            },
        ),
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
