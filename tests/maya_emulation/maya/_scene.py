"""State of the emulated Maya session: scene graph, units, time, keys, UI (tests only; not Maya).

Everything the emulated :mod:`maya.cmds` and :mod:`maya.api.OpenMaya` return is
computed here from a small stateful model:

* **Nodes** have a short name, a type (``transform``, ``joint``, ``locator``
  shape, ``objectSet``) and a parent. Full DAG paths are ``|a|b|c``; a name
  may be given as a full path, a partial path (``b|c``), a short name, or a
  pattern with ``*``/``?`` (short names only).
* **Attributes** are stored in Maya's internal units (centimetres, radians)
  and converted to and from the current UI units at the command boundary,
  as ``maya.cmds`` does. ``worldMatrix`` (a matrix attribute) carries no unit:
  its translation is in centimetres whatever the UI unit.
* **Keys** are (time [s], value [internal unit], out-tangent) triples; between
  keys the value is linear, or held when the earlier key's out-tangent is
  ``step``; before the first key and after the last it is constant. Times are
  kept in seconds, so changing the time unit keeps keys at the same seconds
  (Maya's ``currentUnit -updateAnimation true``).
* **Aim constraints** (``aimConstraint`` nodes, children of the transform they drive)
  hold what ``cmds.aimConstraint -query`` answers: targets, aim and up vectors, world up
  type, vector and object. They do not move the matrices here (the exporter reads what
  they aim at, not how Maya evaluates them).
* **Transform matrix**: ``local = S · R · T`` in Maya's row-vector convention
  (``p_world = p_local · local · parent_world``), with ``R`` the product of the
  elementary rotations in ``rotateOrder`` (``xyz`` → ``Rx · Ry · Rz``: x is
  applied first), ``Rx = [[1,0,0],[0,c,s],[0,-s,c]]`` and so on, as the Maya
  ``transform`` node documentation writes them. No pivots, shear, rotateAxis
  or jointOrient.

Scene files (``cmds.file(path, open=True)``) are JSON::

    {"emulated_maya_scene": 1,
     "units": {"linear": "cm", "angle": "deg", "time": "film"},
     "up_axis": "y", "playback": [1, 24], "current_time": 1,
     "nodes": [{"name": "base", "type": "transform", "parent": null,
                "rotateOrder": "yzx",
                "values": {"translateX": 10},
                "keys": {"rotateY": [[1, 0], [24, 90]]}},
               {"name": "aim1", "type": "aimConstraint", "parent": "base",
                "aim": {"targets": ["look"], "aimVector": [1, 0, 0], "upVector": [0, 1, 0],
                        "worldUpType": "scene", "worldUpVector": [0, 1, 0],
                        "worldUpObject": null}}],
     "sets": {"looprig_tracks": ["tip"]}, "selection": ["tip"]}

Values and keys are in the file's units, key times in frames of its time unit.
"""

from __future__ import annotations

import collections
import fnmatch
import json
import math

#: Centimetres per linear unit (all names ``currentUnit -linear`` accepts).
LINEAR_CM = {
    "mm": 0.1,
    "millimeter": 0.1,
    "cm": 1.0,
    "centimeter": 1.0,
    "m": 100.0,
    "meter": 100.0,
    "km": 100000.0,
    "kilometer": 100000.0,
    "in": 2.54,
    "inch": 2.54,
    "ft": 30.48,
    "foot": 30.48,
    "yd": 91.44,
    "yard": 91.44,
    "mi": 160934.4,
    "mile": 160934.4,
}
LINEAR_SHORT = {
    "millimeter": "mm",
    "centimeter": "cm",
    "meter": "m",
    "kilometer": "km",
    "inch": "in",
    "foot": "ft",
    "yard": "yd",
    "mile": "mi",
}
#: Radians per angular unit.
ANGLE_RAD = {"deg": math.pi / 180.0, "degree": math.pi / 180.0, "rad": 1.0, "radian": 1.0}
ANGLE_SHORT = {"degree": "deg", "radian": "rad"}
#: Frames per second of the named time units.
TIME_FPS = {
    "hour": 1.0 / 3600.0,
    "min": 1.0 / 60.0,
    "sec": 1.0,
    "millisec": 1000.0,
    "game": 15.0,
    "film": 24.0,
    "pal": 25.0,
    "ntsc": 30.0,
    "show": 48.0,
    "palf": 50.0,
    "ntscf": 60.0,
    "23.976fps": 24000.0 / 1001.0,
    "29.97fps": 30000.0 / 1001.0,
    "29.97df": 30000.0 / 1001.0,
    "47.952fps": 48000.0 / 1001.0,
    "59.94fps": 60000.0 / 1001.0,
}
ROTATE_ORDERS = ("xyz", "yzx", "zxy", "xzy", "yxz", "zyx")
TRANSFORM_TYPES = ("transform", "joint")

#: Transform channels: long name -> (short name, kind, default).
CHANNELS = {
    "translateX": ("tx", "linear", 0.0),
    "translateY": ("ty", "linear", 0.0),
    "translateZ": ("tz", "linear", 0.0),
    "rotateX": ("rx", "angle", 0.0),
    "rotateY": ("ry", "angle", 0.0),
    "rotateZ": ("rz", "angle", 0.0),
    "scaleX": ("sx", "double", 1.0),
    "scaleY": ("sy", "double", 1.0),
    "scaleZ": ("sz", "double", 1.0),
    "rotateOrder": ("ro", "enum", 0.0),
    "visibility": ("v", "bool", 1.0),
}
#: ``addAttr -attributeType`` -> kind.
ATTRIBUTE_TYPES = {
    "doubleLinear": "linear",
    "doubleAngle": "angle",
    "double": "double",
    "bool": "bool",
    "float": "double",
    "long": "double",
}


def fps_of(unit: str) -> float:
    """Frames per second of a time unit name (``film``, ``ntsc``, ``120fps``...)."""
    if unit in TIME_FPS:
        return TIME_FPS[unit]
    if unit.endswith("fps"):
        try:
            value = float(unit[:-3])
        except ValueError:
            value = 0.0
        if value > 0:
            return value
    raise RuntimeError(f"emulated Maya: unknown time unit {unit!r}")


# ----------------------------------------------------------------------------- matrices
def identity():
    return [[1.0 if r == c else 0.0 for c in range(4)] for r in range(4)]


def multiply(a, b):
    return [[sum(a[r][k] * b[k][c] for k in range(4)) for c in range(4)] for r in range(4)]


def rotation(axis: str, angle: float):
    """Elementary rotation in Maya's row-vector form (``v' = v · R``)."""
    c, s = math.cos(angle), math.sin(angle)
    m = identity()
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    m[i][i], m[i][j], m[j][i], m[j][j] = c, s, -s, c
    return m


# ----------------------------------------------------------------------------- scene model
class Attribute:
    """One attribute: kind (linear, angle, double, bool, enum), value and keys in internal units."""

    def __init__(self, name, short, kind, value, keyable=True, nice_name=None):
        self.name, self.short, self.kind = name, short, kind
        self.value = float(value)
        self.keys: list[list] = []  # [time_s, value, out_tangent], sorted by time
        self.keyable, self.nice_name = keyable, nice_name

    def at(self, seconds: float) -> float:
        """Value at ``seconds`` (linear between keys, held after a ``step`` key, constant outside)."""
        keys = self.keys
        if not keys:
            return self.value
        if seconds <= keys[0][0]:
            return keys[0][1]
        if seconds >= keys[-1][0]:
            return keys[-1][1]
        lo, hi = 0, len(keys) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if keys[mid][0] <= seconds:
                lo = mid
            else:
                hi = mid
        t0, v0, tangent = keys[lo]
        t1, v1, _ = keys[hi]
        if tangent == "step":
            return v0
        return v0 + (v1 - v0) * (seconds - t0) / (t1 - t0)

    def set_key(self, seconds: float, value: float, out_tangent: str = "linear"):
        for key in self.keys:
            if abs(key[0] - seconds) < 1e-12:
                key[1], key[2] = value, out_tangent
                return
        self.keys.append([seconds, value, out_tangent])
        self.keys.sort(key=lambda k: k[0])


#: What an aim constraint answers when the scene file does not say (Maya's defaults).
AIM_DEFAULTS = {
    "targets": [],
    "aimVector": [1.0, 0.0, 0.0],
    "upVector": [0.0, 1.0, 0.0],
    "worldUpType": "scene",
    "worldUpVector": [0.0, 1.0, 0.0],
    "worldUpObject": None,
}


class Node:
    def __init__(self, name: str, node_type: str, parent: Node | None):
        self.name, self.type, self.parent = name, node_type, parent
        self.children: list[Node] = []
        self.attrs: dict[str, Attribute] = {}
        self.members: list[Node] = []  # objectSet members
        self.aim: dict = {}  # aimConstraint: what cmds.aimConstraint -query answers
        if parent is not None:
            parent.children.append(self)
        if node_type in TRANSFORM_TYPES:
            for long_name, (short, kind, default) in CHANNELS.items():
                self.attrs[long_name] = Attribute(long_name, short, kind, default)

    @property
    def path(self) -> str:
        if self.type == "objectSet":
            return self.name
        parts, node = [], self
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return "|" + "|".join(reversed(parts))

    def attribute(self, name: str) -> Attribute | None:
        if name in self.attrs:
            return self.attrs[name]
        for attr in self.attrs.values():
            if attr.short == name:
                return attr
        return None

    def local_matrix(self, seconds: float):
        """``S · R · T`` (row-vector convention) at ``seconds``, translation in cm."""
        v = {name: attr.at(seconds) for name, attr in self.attrs.items()}
        scale = identity()
        scale[0][0], scale[1][1], scale[2][2] = v["scaleX"], v["scaleY"], v["scaleZ"]
        order = ROTATE_ORDERS[round(v["rotateOrder"])]
        rot = identity()
        for axis in order:
            rot = multiply(rot, rotation(axis, v["rotate" + axis.upper()]))
        trans = identity()
        trans[3][0], trans[3][1], trans[3][2] = v["translateX"], v["translateY"], v["translateZ"]
        return multiply(multiply(scale, rot), trans)

    def world_matrix(self, seconds: float):
        """``local · parent_world``: flat 16 floats, row-major, translation at 12-14 [cm]."""
        m = identity()
        node = self
        while node is not None:
            if node.type in TRANSFORM_TYPES:
                m = multiply(m, node.local_matrix(seconds))
            node = node.parent
        return [m[r][c] for r in range(4) for c in range(4)]


class Session:
    """The whole emulated Maya session; :func:`reset` makes a fresh one."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.selection: list = []  # Nodes, or plain strings for components
        self.linear, self.angle, self.time_unit = "cm", "deg", "film"
        self.up = "y"
        self.current_seconds = 1.0 / 24.0
        self.playback_seconds = (1.0 / 24.0, 120.0 / 24.0)
        self.scene_name = ""
        self.batch = False
        self.standalone = False
        self.version = "2025"
        self.refresh_suspended = False
        self.calls: collections.Counter = collections.Counter()
        # UI
        self.widgets: dict[str, dict] = {"MayaWindow": {"type": "window", "parent": None, "shown": True}}
        self.parent_stack: list[str] = []
        self.counter = collections.Counter()
        self.progress: dict | None = None
        self.progress_log: list[dict] = []
        self.cancel_after_queries: int | None = None
        self.file_dialog_answers: list = []
        self.dialog_log: list[dict] = []
        self.warnings: list[str] = []
        self.messages: list[tuple[str, str]] = []
        self.deferred: list = []

    # -------------------------------------------------------------- units and time
    @property
    def fps(self) -> float:
        return fps_of(self.time_unit)

    def to_seconds(self, frames: float) -> float:
        return float(frames) / self.fps

    def to_frames(self, seconds: float) -> float:
        return seconds * self.fps

    def to_internal(self, kind: str, value: float) -> float:
        if kind == "linear":
            return float(value) * LINEAR_CM[self.linear]
        if kind == "angle":
            return float(value) * ANGLE_RAD[self.angle]
        return float(value)

    def to_ui(self, kind: str, value: float) -> float:
        if kind == "linear":
            return value / LINEAR_CM[self.linear]
        if kind == "angle":
            return value / ANGLE_RAD[self.angle]
        return value

    # -------------------------------------------------------------- nodes
    def add_node(self, name: str, node_type: str = "transform", parent: Node | None = None) -> Node:
        node = Node(name, node_type, parent)
        self.nodes.append(node)
        return node

    def dag_nodes(self):
        return [n for n in self.nodes if n.type != "objectSet"]

    def find(self, name: str) -> list[Node]:
        """Nodes matching a full path, partial path, short name or short-name pattern."""
        if not isinstance(name, str) or not name:
            return []
        if name.startswith("|"):
            return [n for n in self.dag_nodes() if n.path == name]
        if "|" in name:
            return [n for n in self.dag_nodes() if n.path.endswith("|" + name)]
        if any(c in name for c in "*?["):
            return [n for n in self.nodes if fnmatch.fnmatchcase(n.name, name)]
        return [n for n in self.nodes if n.name == name]

    def one(self, name: str, error=ValueError) -> Node:
        found = self.find(name)
        if not found:
            raise error(f"No object matches name: {name}")
        if len(found) > 1:
            raise error(f"More than one object matches name: {name}")
        return found[0]

    def short_name(self, node: Node) -> str:
        """Maya's default name: the short name if unique, else the shortest unique partial path."""
        if node.type == "objectSet":
            return node.name
        parts = node.path.split("|")[1:]
        for k in range(1, len(parts) + 1):
            candidate = "|".join(parts[-k:])
            if len(self.find(candidate)) == 1:
                return candidate
        return node.path

    def unique_name(self, base: str) -> str:
        if not self.find(base):
            return base
        stem = base.rstrip("0123456789")
        k = 1
        while self.find(f"{stem}{k}"):
            k += 1
        return f"{stem}{k}"

    def plug(self, plug: str):
        """(node, attribute name, index) of ``node.attr`` or ``node.attr[i]``."""
        if not isinstance(plug, str) or "." not in plug:
            raise ValueError(f"No valid objects supplied to command: {plug!r} is not node.attribute")
        node_name, attr = plug.split(".", 1)
        node = self.one(node_name)
        index = None
        if attr.endswith("]") and "[" in attr:
            attr, _, rest = attr.partition("[")
            index = int(rest[:-1])
        return node, attr, index

    # -------------------------------------------------------------- scene files
    def load(self, data: dict, path: str = ""):
        if not isinstance(data, dict) or data.get("emulated_maya_scene") != 1:
            raise RuntimeError(f"emulated Maya: {path!r} is not an emulated scene description")
        units = data.get("units", {})
        kept = {name: getattr(self, name) for name in _KEPT_ON_OPEN}
        self.__init__()  # a new scene; the session (mode, UI, call counts) goes on
        for name, value in kept.items():
            setattr(self, name, value)
        self.linear = LINEAR_SHORT.get(units.get("linear", "cm"), units.get("linear", "cm"))
        self.angle = ANGLE_SHORT.get(units.get("angle", "deg"), units.get("angle", "deg"))
        self.time_unit = units.get("time", "film")
        self.up = data.get("up_axis", "y").lower()
        start, end = data.get("playback", [1, 120])
        self.playback_seconds = (self.to_seconds(start), self.to_seconds(end))
        self.current_seconds = self.to_seconds(data.get("current_time", start))
        by_name: dict[str, Node] = {}
        for entry in data.get("nodes", []):
            parent = by_name[entry["parent"]] if entry.get("parent") else None
            node = self.add_node(entry["name"], entry.get("type", "transform"), parent)
            by_name[entry.get("id", entry["name"])] = node
            order = entry.get("rotateOrder", 0)
            if isinstance(order, str):
                order = ROTATE_ORDERS.index(order)
            if node.type in TRANSFORM_TYPES:
                node.attrs["rotateOrder"].value = float(order)
            if node.type == "aimConstraint":
                node.aim = dict(AIM_DEFAULTS, **entry.get("aim", {}))
            for attr_name, value in entry.get("values", {}).items():
                attr = node.attribute(attr_name)
                attr.value = self.to_internal(attr.kind, value)
            for attr_name, keys in entry.get("keys", {}).items():
                attr = node.attribute(attr_name)
                for key in keys:
                    frame, value = key[0], key[1]
                    tangent = key[2] if len(key) > 2 else "linear"
                    attr.set_key(self.to_seconds(frame), self.to_internal(attr.kind, value), tangent)
        for set_name, members in data.get("sets", {}).items():
            node = self.add_node(set_name, "objectSet")
            node.members = [by_name[m] for m in members]
        self.selection = [by_name[m] for m in data.get("selection", [])]
        self.scene_name = path


#: Session state that survives opening another scene.
_KEPT_ON_OPEN = (
    "batch",
    "standalone",
    "version",
    "calls",
    "widgets",
    "parent_stack",
    "counter",
    "progress_log",
    "cancel_after_queries",
    "file_dialog_answers",
    "dialog_log",
    "warnings",
    "messages",
    "deferred",
)

_SESSION: Session = Session()


def session() -> Session:
    return _SESSION


def reset(batch: bool = False) -> Session:
    """A fresh, empty session (GUI mode unless ``batch``)."""
    global _SESSION
    _SESSION = Session()
    _SESSION.batch = batch
    return _SESSION


def load_scene(data: dict, path: str = "") -> Session:
    """Replace the scene by a scene description (see the module doc); keeps batch/standalone mode."""
    _SESSION.load(data, path)
    return _SESSION


def load_scene_file(path: str) -> Session:
    try:
        with open(path, encoding="utf-8") as stream:
            data = json.load(stream)
    except FileNotFoundError:
        raise RuntimeError(f"File not found: {path}") from None
    except (OSError, ValueError) as error:
        raise RuntimeError(f"emulated Maya cannot read scene {path!r}: {error}") from None
    return load_scene(data, path)


def run_deferred():
    """Run the calls queued with ``maya.utils.executeDeferred`` (Maya runs them when idle)."""
    queue, _SESSION.deferred = _SESSION.deferred, []
    for function, args, kwargs in queue:
        if isinstance(function, str):
            exec(function, {})
        else:
            function(*args, **kwargs)


# ----------------------------------------------------------------------------- UI helpers for tests
def widgets_of_type(widget_type: str) -> list[str]:
    return [name for name, w in _SESSION.widgets.items() if w["type"] == widget_type]


def press(label: str, widget_type: str = "button"):
    """Press the button or menu item labelled ``label`` (runs its command as Maya would)."""
    matches = [w for w in _SESSION.widgets.values() if w["type"] == widget_type and w.get("label") == label]
    if len(matches) != 1:
        raise LookupError(f"{len(matches)} {widget_type} widgets labelled {label!r}")
    command = matches[0].get("command")
    if command is None:
        raise LookupError(f"{widget_type} {label!r} has no command")
    return command(False) if widget_type == "menuItem" else command()


def field_by_label(label: str) -> str:
    matches = [
        name for name, w in _SESSION.widgets.items() if w.get("label") == label and w["type"] != "button"
    ]
    if len(matches) != 1:
        raise LookupError(f"{len(matches)} fields labelled {label!r}")
    return matches[0]
