"""An emulation of the few ``maya.api.OpenMaya`` (API 2.0) classes looprig uses, for tests; not Maya.

Only the members ``looprig.maya_scripts.maya_facade`` calls exist. As in Maya,
matrices from the API are in internal units (centimetres), ``MTime.uiUnit()``
is the scene's time unit, and ``MPlug.asMObject(context)`` evaluates the plug
at the context's time without changing the current time. Every
``MDGContext`` and ``asMObject`` is counted in ``maya._scene.session().calls``
so tests can check how often the scene is evaluated.
"""

from __future__ import annotations

import typing

from .. import _scene

_UNIT_NAMES = (
    "hour",
    "min",
    "sec",
    "millisec",
    "game",
    "film",
    "pal",
    "ntsc",
    "show",
    "palf",
    "ntscf",
    "23.976fps",
    "29.97fps",
    "29.97df",
    "47.952fps",
    "59.94fps",
)


def _count(name: str):
    _scene.session().calls[name] += 1


class MTime:
    """A time: ``value`` in ``unit`` (an int code, as in the API)."""

    kHours, kMinutes, kSeconds, kMilliseconds = 1, 2, 3, 4
    kGames, kFilm, kPALFrame, kNTSCFrame, kShowScan, kPALField, kNTSCField = 5, 6, 7, 8, 9, 10, 11
    _names: typing.ClassVar[dict[int, str]] = dict(enumerate(_UNIT_NAMES, start=1))

    def __init__(self, value: float = 0.0, unit: int | None = None):
        self.value = float(value)
        self.unit = MTime.uiUnit() if unit is None else unit

    @classmethod
    def _code(cls, name: str) -> int:
        for code, known in cls._names.items():
            if known == name:
                return code
        code = 100 + len(cls._names)
        cls._names[code] = name
        return code

    @staticmethod
    def uiUnit() -> int:
        return MTime._code(_scene.session().time_unit)

    def seconds(self) -> float:
        return self.value / _scene.fps_of(MTime._names[self.unit])

    def asUnits(self, unit: int) -> float:
        return self.seconds() * _scene.fps_of(MTime._names[unit])


class MDGContext:
    """Evaluation at a given time (``MDGContext(MTime)``) or at the current time."""

    def __init__(self, time: MTime | None = None):
        _count("MDGContext")
        self.time = time

    def seconds(self) -> float:
        return _scene.session().current_seconds if self.time is None else self.time.seconds()


MDGContext.kNormal = MDGContext.__new__(MDGContext)
MDGContext.kNormal.time = None


class MMatrix:
    """A 4x4 matrix, row-major flat list of 16 floats (Maya's row-vector convention)."""

    def __init__(self, values=None):
        self._m = (
            [float(x) for x in values]
            if values is not None
            else [1.0 if r == c else 0.0 for r in range(4) for c in range(4)]
        )

    def getElement(self, row: int, column: int) -> float:
        return self._m[4 * row + column]

    def __getitem__(self, index: int) -> float:
        return self._m[index]

    def __len__(self) -> int:
        return 16


class MObject:
    def __init__(self, node=None, data=None):
        self._node, self._data = node, data

    def isNull(self) -> bool:
        return self._node is None and self._data is None


class MDagPath:
    def __init__(self, node):
        self._node = node

    def node(self) -> MObject:
        return MObject(node=self._node)

    def instanceNumber(self) -> int:
        return 0

    def fullPathName(self) -> str:
        return self._node.path

    def inclusiveMatrix(self) -> MMatrix:
        _count("MDagPath.inclusiveMatrix")
        return MMatrix(self._node.world_matrix(_scene.session().current_seconds))


class MSelectionList:
    def __init__(self):
        self._items = []

    def add(self, name: str):
        state = _scene.session()
        found = state.find(name)
        if len(found) != 1:
            raise RuntimeError(
                "(kInvalidParameter): Object does not exist"
                if not found
                else f"(kInvalidParameter): more than one object matches {name}"
            )
        self._items.append(found[0])
        return self

    def getDagPath(self, index: int) -> MDagPath:
        node = self._items[index]
        if node.type == "objectSet":
            raise TypeError("item is not a DAG path")
        return MDagPath(node)


class MPlug:
    def __init__(self, node, attribute: str, index: int | None = None):
        self._node, self._attribute, self._index = node, attribute, index

    def elementByLogicalIndex(self, index: int) -> MPlug:
        return MPlug(self._node, self._attribute, index)

    def asMObject(self, context: MDGContext | None = None) -> MObject:
        _count("MPlug.asMObject")
        if self._attribute != "worldMatrix" or self._index != 0:
            raise RuntimeError("emulated MPlug.asMObject: only worldMatrix[0] is emulated")
        context = context or MDGContext.kNormal
        return MObject(data=MMatrix(self._node.world_matrix(context.seconds())))


class MFnDependencyNode:
    def __init__(self, obj: MObject):
        self._node = obj._node

    def findPlug(self, name: str, want_networked_plug: bool) -> MPlug:
        if name != "worldMatrix" or self._node.type not in _scene.TRANSFORM_TYPES:
            raise RuntimeError(f"(kInvalidParameter): no plug {name!r} on {self._node.name}")
        return MPlug(self._node, name)


class MFnMatrixData:
    def __init__(self, obj: MObject):
        if not isinstance(obj._data, MMatrix):
            raise RuntimeError("(kInvalidParameter): object is not matrix data")
        self._matrix = obj._data

    def matrix(self) -> MMatrix:
        return self._matrix


class MGlobal:
    @staticmethod
    def displayInfo(message: str):
        _scene.session().messages.append(("info", str(message)))

    @staticmethod
    def displayWarning(message: str):
        _scene.session().warnings.append(str(message))
