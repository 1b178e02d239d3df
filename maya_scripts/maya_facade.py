"""The one module of looprig that talks to Maya (``maya.cmds``, ``maya.api.OpenMaya``).

Every Maya call the exporter, the batch command, the review import and the UI
make goes through a function here, so the rest of ``looprig.maya_scripts`` is
plain Python, and the tests replace Maya with a small stateful emulation of
exactly these calls (``tests/maya_emulation``).

Units: Maya commands take and return values in the scene's UI units (linear,
angle, time); API matrices are in Maya's internal unit, **centimetres**,
whatever the UI unit. :class:`WorldMatrixSampler` returns centimetres.
"""

from __future__ import annotations

from dataclasses import dataclass

import maya.api.OpenMaya as om
from maya import cmds

MAIN_WINDOW = "MayaWindow"


# ----------------------------------------------------------------------------- session
def maya_version() -> str:
    """Maya's version string, e.g. ``"2025"``."""
    return str(cmds.about(version=True))


def is_batch() -> bool:
    """True in ``mayapy``/batch mode (no UI)."""
    return bool(cmds.about(batch=True))


def initialize_standalone() -> None:
    """Start Maya in this Python (``mayapy``); needed before any command runs there."""
    import maya.standalone

    maya.standalone.initialize(name="python")


def uninitialize_standalone() -> None:
    """Shut the standalone session down cleanly (Maya 2016+ expects it before exit)."""
    import maya.standalone

    maya.standalone.uninitialize()


def open_scene(path: str) -> None:
    """Open a scene file, discarding unsaved changes of the current one."""
    cmds.file(path, open=True, force=True)


def scene_path() -> str:
    """Path of the open scene ('' when untitled)."""
    return cmds.file(query=True, sceneName=True) or ""


def defer(function) -> None:
    """Run ``function()`` when Maya is idle (e.g. once the main window exists)."""
    import maya.utils

    maya.utils.executeDeferred(function)


# ----------------------------------------------------------------------------- units and time
def linear_unit() -> str:
    """The UI linear unit: mm, cm, m, km, in, ft, yd or mi."""
    return cmds.currentUnit(query=True, linear=True)


def angle_unit() -> str:
    """The UI angle unit: deg or rad."""
    return cmds.currentUnit(query=True, angle=True)


def time_unit() -> str:
    """The UI time unit name (film, ntsc, pal, 120fps, ...)."""
    return cmds.currentUnit(query=True, time=True)


def frames_per_second() -> float:
    """Frames per second of the UI time unit (exact for named and NTSC rates)."""
    return om.MTime(1.0, om.MTime.kSeconds).asUnits(om.MTime.uiUnit())


def up_axis() -> str:
    """World up axis: ``"y"`` or ``"z"``."""
    return cmds.upAxis(query=True, axis=True)


def current_time() -> float:
    """Current frame (UI time unit)."""
    return float(cmds.currentTime(query=True))


def set_current_time(frame: float) -> None:
    cmds.currentTime(frame, update=True)


def playback_range() -> tuple[float, float]:
    """(first, last) frame of the playback range."""
    return (
        float(cmds.playbackOptions(query=True, minTime=True)),
        float(cmds.playbackOptions(query=True, maxTime=True)),
    )


def suspend_refresh(suspend: bool) -> None:
    """Stop (or resume) viewport redraws while stepping through time."""
    cmds.refresh(suspend=suspend)


# ----------------------------------------------------------------------------- nodes
def transforms_named(name: str) -> list[str]:
    """Long DAG paths of the transforms (joints included) matching ``name``."""
    return list(cmds.ls(name, long=True, type="transform") or [])


def all_transforms() -> list[str]:
    """Long DAG paths of every transform in the scene."""
    return list(cmds.ls(long=True, type="transform") or [])


def node_exists(name: str) -> bool:
    return bool(cmds.objExists(name))


def node_type(name: str) -> str:
    return cmds.nodeType(name)


def selection() -> list[str]:
    """The selection, long names."""
    return list(cmds.ls(selection=True, long=True) or [])


def selected_transforms() -> list[str]:
    """Selected transforms, long names, in selection order."""
    return list(cmds.ls(selection=True, long=True, type="transform") or [])


def set_selection(nodes) -> None:
    """Replace the selection (an empty list clears it)."""
    if nodes:
        cmds.select(list(nodes), replace=True)
    else:
        cmds.select(clear=True)


def set_members(set_name: str) -> list[str] | None:
    """Long names of the members of object set ``set_name``; None if there is no such set."""
    if not cmds.objExists(set_name) or cmds.nodeType(set_name) != "objectSet":
        return None
    members = cmds.sets(set_name, query=True) or []
    return list(cmds.ls(members, long=True) or [])


def add_to_set(set_name: str, nodes) -> str:
    """Add ``nodes`` to object set ``set_name``, creating it if needed; returns the set's name."""
    if cmds.objExists(set_name) and cmds.nodeType(set_name) == "objectSet":
        cmds.sets(list(nodes), add=set_name)
        return set_name
    return cmds.sets(list(nodes), name=set_name)


def aim_constraints(node: str) -> list:
    """The aim constraints driving transform ``node`` (its ``aimConstraint`` children), each a
    dict: ``name``; ``targets`` (long names); ``aim`` and ``up`` (3 floats, the node's axes);
    ``world_up_type`` (scene, vector, object, objectrotation or none); ``world_up_vector``
    (3 floats: world axes, or the up object's for objectrotation); ``world_up_object`` (a
    long name or None)."""
    found = cmds.listRelatives(node, children=True, type="aimConstraint", fullPath=True) or []
    out = []
    for constraint in found:

        def query(constraint=constraint, **flag):
            return cmds.aimConstraint(constraint, query=True, **flag)

        up_object = query(worldUpObject=True)
        if isinstance(up_object, (list, tuple)):
            up_object = up_object[0] if up_object else None
        targets = [path for t in (query(targetList=True) or []) for path in cmds.ls(t, long=True) or []]
        out.append(
            {
                "name": constraint,
                "targets": targets,
                "aim": [float(v) for v in query(aimVector=True)],
                "up": [float(v) for v in query(upVector=True)],
                "world_up_type": str(query(worldUpType=True)),
                "world_up_vector": [float(v) for v in query(worldUpVector=True)],
                "world_up_object": (cmds.ls(up_object, long=True) or [None])[0] if up_object else None,
            }
        )
    return out


class WorldMatrixSampler:
    """World matrices of many transforms at any time, in one evaluation per time.

    nodes: DAG paths, resolved once. ``evaluation``:

    * ``"context"`` (default): API 2.0 ``MDGContext(MTime)`` per sample time;
      every node's ``worldMatrix[instance]`` plug is read in that one context,
      without touching the current time. Fast; right for keyed animation,
      constraints and rigs without history.
    * ``"timeline"``: set the current time, then read each node's
      ``MDagPath.inclusiveMatrix()``. Slower, but right for simulations,
      caches and expressions that need the time to advance frame by frame.

    ``sample(frame)`` returns one list of 16 floats per node: Maya's flat
    row-major matrix (row-vector convention, translation at 12-14) in
    **centimetres**.
    """

    def __init__(self, nodes, evaluation: str = "context"):
        if evaluation not in ("context", "timeline"):
            raise ValueError(f"evaluation must be 'context' or 'timeline', got {evaluation!r}")
        self.evaluation = evaluation
        self._dag_paths, self._plugs = [], []
        for name in nodes:
            selection_list = om.MSelectionList()
            selection_list.add(name)
            dag = selection_list.getDagPath(0)
            plug = om.MFnDependencyNode(dag.node()).findPlug("worldMatrix", False)
            self._dag_paths.append(dag)
            self._plugs.append(plug.elementByLogicalIndex(dag.instanceNumber()))
        self._ui_unit = om.MTime.uiUnit()

    def sample(self, frame: float) -> list[list[float]]:
        if self.evaluation == "timeline":
            cmds.currentTime(frame, update=True)
            return [_flat(dag.inclusiveMatrix()) for dag in self._dag_paths]
        context = om.MDGContext(om.MTime(frame, self._ui_unit))
        return [_flat(om.MFnMatrixData(plug.asMObject(context)).matrix()) for plug in self._plugs]


def _flat(matrix) -> list[float]:
    return [matrix.getElement(row, column) for row in range(4) for column in range(4)]


# ----------------------------------------------------------------------------- review: attributes, keys
_ATTRIBUTE_TYPES = {"angle": "doubleAngle", "linear": "doubleLinear", "double": "double", "bool": "bool"}


def create_locator(name: str) -> str:
    """Create a locator; returns its transform's name (Maya may add a number to ``name``)."""
    return cmds.spaceLocator(name=name)[0]


def has_attribute(node: str, attribute: str) -> bool:
    return bool(cmds.attributeQuery(attribute, node=node, exists=True))


def add_attribute(node: str, attribute: str, kind: str, nice_name: str | None = None) -> None:
    """Add a keyable attribute of ``kind``: angle (doubleAngle), linear (doubleLinear), double or bool."""
    flags = {"longName": attribute, "attributeType": _ATTRIBUTE_TYPES[kind], "keyable": True}
    if nice_name:
        flags["niceName"] = nice_name
    cmds.addAttr(node, **flags)


def clear_keys(node: str, attribute: str) -> None:
    """Remove all keys of ``node.attribute``."""
    cmds.cutKey(f"{node}.{attribute}", clear=True)


def set_keys(node: str, attribute: str, frames, values, stepped: bool = False) -> None:
    """Key ``node.attribute`` at ``frames`` (UI time) to ``values`` (UI units).

    Linear tangents, so the curve between keys is the straight line between
    samples; ``stepped`` holds each value until the next key.
    """
    plug = f"{node}.{attribute}"
    out_tangent = "step" if stepped else "linear"
    for frame, value in zip(frames, values):  # noqa: B905 (Python 3.7 in Maya 2022)
        cmds.setKeyframe(plug, time=frame, value=value, inTangentType="linear", outTangentType=out_tangent)


# ----------------------------------------------------------------------------- UI
def message(title: str, text: str) -> None:
    """A modal message box (UI) or a printed line (batch)."""
    if is_batch():
        print(f"{title}: {text}")
        return
    cmds.confirmDialog(title=title, message=text, button=["OK"], defaultButton="OK")


def warning(text: str) -> None:
    """A warning in the script editor / command line."""
    cmds.warning(text)


def add_main_menu(name: str, label: str, items) -> str:
    """(Re)build menu ``name`` in Maya's main menu bar; items: [(label, callback) or None for a divider]."""
    if cmds.menu(name, exists=True):
        cmds.deleteUI(name, menu=True)
    menu = cmds.menu(name, parent=MAIN_WINDOW, label=label, tearOff=True)
    for item in items:
        if item is None:
            cmds.menuItem(parent=menu, divider=True)
        else:
            item_label, callback = item
            cmds.menuItem(parent=menu, label=item_label, command=lambda *_, run=callback: run())
    return menu


@dataclass
class FormField:
    """One row of a :func:`show_form` dialog.

    kind: ``text``, ``float``, ``save_file`` or ``open_file`` (a text field with
    a browse button using ``file_filter``, Maya's ``"Name (*.ext)"`` syntax).
    """

    key: str
    label: str
    kind: str
    value: object = ""
    file_filter: str = "All Files (*.*)"


def close_window(name: str) -> None:
    if cmds.window(name, exists=True):
        cmds.deleteUI(name, window=True)


def show_form(name: str, title: str, fields, buttons, note: str = "") -> str:
    """A small dialog: one row per :class:`FormField`, then buttons.

    buttons: [(label, callback)]; a callback receives ``{key: value}`` of the
    fields as typed (floats for ``float`` fields, strings otherwise).
    """
    close_window(name)
    window = cmds.window(name, title=title, sizeable=True)
    cmds.columnLayout(adjustableColumn=True, rowSpacing=4)
    if note:
        cmds.text(label=note)
    controls = {}
    for field in fields:
        if field.kind == "float":
            controls[field.key] = (
                "float",
                cmds.floatFieldGrp(label=field.label, numberOfFields=1, value1=float(field.value)),
            )
        elif field.kind in ("save_file", "open_file"):
            control = cmds.textFieldButtonGrp(label=field.label, text=str(field.value), buttonLabel="...")
            cmds.textFieldButtonGrp(
                control,
                edit=True,
                buttonCommand=lambda *_, c=control, f=field: _browse(c, f),
            )
            controls[field.key] = ("file", control)
        else:
            controls[field.key] = ("text", cmds.textFieldGrp(label=field.label, text=str(field.value)))

    def values() -> dict:
        out = {}
        for key, (kind, control) in controls.items():
            if kind == "float":
                out[key] = float(cmds.floatFieldGrp(control, query=True, value1=True))
            elif kind == "file":
                out[key] = cmds.textFieldButtonGrp(control, query=True, text=True)
            else:
                out[key] = cmds.textFieldGrp(control, query=True, text=True)
        return out

    for label, callback in buttons:
        cmds.button(label=label, command=lambda *_, run=callback: run(values()))
    cmds.setParent("..")
    cmds.showWindow(window)
    return window


def _browse(control: str, field: FormField) -> None:
    chosen = cmds.fileDialog2(
        fileMode=0 if field.kind == "save_file" else 1,
        caption=field.label,
        fileFilter=field.file_filter,
        dialogStyle=2,
    )
    if chosen:
        cmds.textFieldButtonGrp(control, edit=True, text=chosen[0])


class Progress:
    """Maya's progress window (UI) or nothing (batch); ``update`` returns True when the user cancels."""

    def __init__(self, title: str, maximum: int):
        self.active = not is_batch()
        if self.active:
            cmds.progressWindow(
                title=title, status=title, progress=0, maxValue=max(1, int(maximum)), isInterruptable=True
            )

    def update(self, done: int, status: str) -> bool:
        if not self.active:
            return False
        cmds.progressWindow(edit=True, progress=int(done), status=status)
        return bool(cmds.progressWindow(query=True, isCancelled=True))

    def close(self) -> None:
        if self.active:
            cmds.progressWindow(endProgress=True)
            self.active = False
