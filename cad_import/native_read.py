"""Reading the native looprig mechanism file (:mod:`.native`: the format, its schema and the
writer): every element checked, every problem a :class:`~.errors.FileFormatError` naming it."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from ..core.errors import MechanismError
from ..core.model.filevalues import limit_from_file
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
from .native import FORMAT, MAX_MAGNITUDE, VERSION
from .specs import ImportedModel, MeshRef


def coupling_from_dict(entry, where: str, path=None) -> Coupling:
    """The coupling a native ``couplings`` entry describes; a malformed one raises
    FileFormatError naming ``path`` and the element ``where``."""
    return _Reader(path, Path(".")).coupling(entry, where)


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
