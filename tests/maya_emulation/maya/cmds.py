"""An emulation of the few maya.cmds calls looprig uses, for tests; not Maya.

Each command accepts only the flags looprig's facade passes (plus ``q``/``query``
and ``e``/``edit``); any other flag raises ``TypeError``, so the facade cannot
quietly start relying on something this emulation does not model. Errors are
raised as Maya raises them for these cases (``ValueError`` for names that match
no object or more than one, ``RuntimeError`` for files and bad arguments).
State and semantics: :mod:`maya._scene`.
"""

from __future__ import annotations

import functools

from . import _scene
from ._scene import ATTRIBUTE_TYPES, LINEAR_CM, TRANSFORM_TYPES, fps_of


def _command(*allowed):
    """Count calls, reject unknown flags, fold ``q``/``e`` into ``query``/``edit``."""
    allowed = set(allowed) | {"query", "edit"}

    def wrap(function):
        @functools.wraps(function)
        def run(*args, **flags):
            state = _scene.session()
            state.calls[function.__name__] += 1
            if "q" in flags:
                flags["query"] = flags.pop("q")
            if "e" in flags:
                flags["edit"] = flags.pop("e")
            unknown = set(flags) - allowed
            if unknown:
                raise TypeError(
                    f"emulated cmds.{function.__name__}: flag(s) {sorted(unknown)} are not emulated"
                )
            return function(state, *args, **flags)

        return run

    return wrap


# ----------------------------------------------------------------------------- session
@_command("version", "batch")
def about(state, version=False, batch=False, **_):
    if version:
        return state.version
    if batch:
        return state.batch
    raise TypeError("emulated cmds.about: give version=True or batch=True")


@_command("open", "force", "sceneName")
def file(state, path=None, open=False, force=False, sceneName=False, query=False, **_):
    if query and sceneName:
        return state.scene_name
    if open:
        _scene.load_scene_file(path)
        return path
    raise TypeError("emulated cmds.file: only open=True and query sceneName are emulated")


@_command("linear", "angle", "time", "updateAnimation")
def currentUnit(state, linear=None, angle=None, time=None, updateAnimation=True, query=False, **_):
    if query:
        if linear:
            return state.linear
        if angle:
            return state.angle
        if time:
            return state.time_unit
        raise TypeError("emulated cmds.currentUnit: query linear, angle or time")
    if linear is not None:
        if linear not in LINEAR_CM:
            raise RuntimeError(f"Invalid linear unit: {linear}")
        state.linear = _scene.LINEAR_SHORT.get(linear, linear)
    if angle is not None:
        if angle not in _scene.ANGLE_RAD:
            raise RuntimeError(f"Invalid angle unit: {angle}")
        state.angle = _scene.ANGLE_SHORT.get(angle, angle)
    if time is not None:
        fps_of(time)
        state.time_unit = time
    return None


@_command("axis", "rotateView")
def upAxis(state, axis=None, rotateView=False, query=False, **_):
    if query:
        return state.up
    if axis not in ("y", "z"):
        raise RuntimeError(f"Invalid up axis: {axis}")
    state.up = axis
    return None


@_command("update")
def currentTime(state, time=None, update=True, query=False, edit=False, **_):
    if query:
        return state.to_frames(state.current_seconds)
    state.current_seconds = state.to_seconds(time)
    return state.to_frames(state.current_seconds)


@_command("minTime", "maxTime")
def playbackOptions(state, minTime=None, maxTime=None, query=False, **_):
    lo, hi = state.playback_seconds
    if query:
        if minTime:
            return state.to_frames(lo)
        if maxTime:
            return state.to_frames(hi)
        raise TypeError("emulated cmds.playbackOptions: query minTime or maxTime")
    state.playback_seconds = (
        lo if minTime is None else state.to_seconds(minTime),
        hi if maxTime is None else state.to_seconds(maxTime),
    )
    return None


@_command("suspend")
def refresh(state, suspend=None, **_):
    if suspend is not None:
        state.refresh_suspended = bool(suspend)


# ----------------------------------------------------------------------------- nodes
def _is_type(node, node_type) -> bool:
    if node_type is None:
        return True
    types = [node_type] if isinstance(node_type, str) else list(node_type)
    return any(node.type == t or (t == "transform" and node.type in TRANSFORM_TYPES) for t in types)


@_command("long", "selection", "type")
def ls(state, *names, long=False, selection=False, type=None, **_):
    if selection:
        found = [n for n in state.selection if not isinstance(n, str)]
    elif names:
        found = []
        for entry in names:
            for name in [entry] if isinstance(entry, str) else list(entry):
                found += [n for n in state.find(name) if n not in found]
    else:
        found = list(state.nodes)
    found = [n for n in found if _is_type(n, type)]
    return [n.path if long else state.short_name(n) for n in found]


@_command()
def objExists(state, name, **_):
    if "." in name:
        try:
            node, attr, _index = state.plug(name)
        except ValueError:
            return False
        return node.attribute(attr) is not None or attr in ("worldMatrix", "wm")
    return len(state.find(name)) > 0


@_command()
def nodeType(state, name, **_):
    return state.one(name, RuntimeError).type


@_command("replace", "clear")
def select(state, *names, replace=True, clear=False, **_):
    if clear:
        state.selection = []
        return
    chosen = []
    for entry in names:
        for name in [entry] if isinstance(entry, str) else list(entry):
            chosen.append(state.one(name))
    state.selection = chosen


@_command("name", "add")
def sets(state, *members, name=None, add=None, query=False, **_):
    if query:
        node = state.one(members[0])
        if node.type != "objectSet":
            raise ValueError(f"{members[0]} is not a set")
        return [state.short_name(m) for m in node.members] or None
    nodes = []
    for entry in members:
        for item in [entry] if isinstance(entry, str) else list(entry):
            nodes.append(state.one(item))
    if add is not None:
        target = state.one(add)
        target.members += [n for n in nodes if n not in target.members]
        return None
    node = state.add_node(state.unique_name(name or "set1"), "objectSet")
    node.members = nodes
    return node.name


@_command("children", "type", "fullPath")
def listRelatives(state, name, children=True, type=None, fullPath=False, **_):
    """The children of ``name`` (of ``type``); None when there are none, as in Maya."""
    found = [n for n in state.one(name).children if _is_type(n, type)]
    return [n.path if fullPath else state.short_name(n) for n in found] or None


_AIM_FLAGS = ("targetList", "aimVector", "upVector", "worldUpType", "worldUpVector", "worldUpObject")


@_command(*_AIM_FLAGS)
def aimConstraint(state, name, query=False, **flags):
    """Query one flag of an aim constraint (creating and editing them is not emulated)."""
    node = state.one(name)
    asked = [flag for flag, value in flags.items() if value]
    if not query or len(asked) != 1 or node.type != "aimConstraint":
        raise RuntimeError("emulated cmds.aimConstraint: query one flag of an aimConstraint node")
    key = "targets" if asked[0] == "targetList" else asked[0]
    value = node.aim[key]
    if key == "targets":
        return [state.short_name(state.one(t)) for t in value]
    if key == "worldUpObject":
        return None if value is None else state.short_name(state.one(value))
    return list(value) if isinstance(value, list | tuple) else value


@_command("name")
def spaceLocator(state, name=None, **_):
    transform = state.add_node(state.unique_name(name or "locator1"), "transform")
    state.add_node(state.unique_name(transform.name + "Shape"), "locator", transform)
    state.selection = [transform]  # creating a node selects it, as in Maya
    return [transform.name]


# ----------------------------------------------------------------------------- attributes and keys
@_command("node", "exists")
def attributeQuery(state, attribute, node=None, exists=False, **_):
    if not exists:
        raise TypeError("emulated cmds.attributeQuery: only exists=True is emulated")
    found = state.find(node)
    return len(found) == 1 and found[0].attribute(attribute) is not None


@_command("longName", "niceName", "attributeType", "keyable")
def addAttr(state, node, longName=None, niceName=None, attributeType="double", keyable=False, **_):
    target = state.one(node)
    if target.attribute(longName) is not None:
        raise RuntimeError(f"Found attribute {longName!r} on {node}: attribute names must be unique")
    if attributeType not in ATTRIBUTE_TYPES:
        raise RuntimeError(f"emulated addAttr: attributeType {attributeType!r} is not emulated")
    kind = ATTRIBUTE_TYPES[attributeType]
    target.attrs[longName] = _scene.Attribute(longName, longName, kind, 0.0, keyable, niceName)


def _attribute(state, plug):
    node, name, _index = state.plug(plug)
    attr = node.attribute(name)
    if attr is None:
        raise ValueError(f"No object matches name: {plug}")
    return node, attr


def _plain(attr, value):
    if attr.kind == "bool":
        return bool(round(value))
    if attr.kind == "enum":
        return round(value)
    return value


@_command("time")
def getAttr(state, plug, time=None, **_):
    seconds = state.current_seconds if time is None else state.to_seconds(time)
    node, name, index = state.plug(plug)
    if name in ("worldMatrix", "wm"):
        if node.type not in TRANSFORM_TYPES or index not in (None, 0):
            raise ValueError(f"No object matches name: {plug}")
        return node.world_matrix(seconds)  # a matrix carries no unit: centimetres
    attr = node.attribute(name)
    if attr is None:
        raise ValueError(f"No object matches name: {plug}")
    return _plain(attr, state.to_ui(attr.kind, attr.at(seconds)))


@_command()
def setAttr(state, plug, value, **_):
    _node, attr = _attribute(state, plug)
    if attr.keys:
        attr.set_key(state.current_seconds, state.to_internal(attr.kind, value))
    else:
        attr.value = state.to_internal(attr.kind, value)


@_command("time", "value", "inTangentType", "outTangentType")
def setKeyframe(state, plug, time=None, value=None, inTangentType="auto", outTangentType="auto", **_):
    _node, attr = _attribute(state, plug)
    seconds = state.current_seconds if time is None else state.to_seconds(time)
    internal = attr.at(seconds) if value is None else state.to_internal(attr.kind, value)
    if outTangentType not in ("linear", "step", "auto"):
        raise RuntimeError(f"emulated setKeyframe: outTangentType {outTangentType!r} is not emulated")
    attr.set_key(seconds, internal, "step" if outTangentType == "step" else "linear")
    return 1


@_command("timeChange", "valueChange", "keyframeCount")
def keyframe(state, plug, timeChange=False, valueChange=False, keyframeCount=False, query=False, **_):
    if not query:
        raise TypeError("emulated cmds.keyframe: only queries are emulated")
    _node, attr = _attribute(state, plug)
    if keyframeCount:
        return len(attr.keys)
    if not attr.keys:
        return None
    if timeChange:
        return [state.to_frames(k[0]) for k in attr.keys]
    if valueChange:
        return [state.to_ui(attr.kind, k[1]) for k in attr.keys]
    raise TypeError("emulated cmds.keyframe: query timeChange, valueChange or keyframeCount")


@_command("clear")
def cutKey(state, plug, clear=False, **_):
    _node, attr = _attribute(state, plug)
    count = len(attr.keys)
    attr.value = attr.at(state.current_seconds)
    attr.keys = []
    return count


# ----------------------------------------------------------------------------- UI
def _new_widget(state, widget_type, name, parent, **flags):
    if name is None:
        state.counter[widget_type] += 1
        name = f"{widget_type}{state.counter[widget_type]}"
    if name in state.widgets:
        raise RuntimeError(f"Object's name '{name}' is not unique.")
    state.widgets[name] = {"type": widget_type, "parent": parent, **flags}
    return name


def _current_parent(state):
    return state.parent_stack[-1] if state.parent_stack else None


def _widget(state, name, widget_type):
    if name not in state.widgets or state.widgets[name]["type"] != widget_type:
        raise RuntimeError(f"Object '{name}' not found.")
    return state.widgets[name]


@_command("title", "exists", "sizeable")
def window(state, name=None, title="", exists=False, sizeable=True, **_):
    if exists:
        return name in state.widgets and state.widgets[name]["type"] == "window"
    name = _new_widget(state, "window", name, None, title=title, shown=False)
    state.parent_stack = [name]
    return name


@_command()
def showWindow(state, name, **_):
    _widget(state, name, "window")["shown"] = True


@_command("adjustableColumn", "rowSpacing")
def columnLayout(state, adjustableColumn=False, rowSpacing=0, **_):
    name = _new_widget(state, "columnLayout", None, _current_parent(state))
    state.parent_stack.append(name)
    return name


@_command()
def setParent(state, where, **_):
    if where == ".." and state.parent_stack:
        state.parent_stack.pop()


def _field(widget_type, value_flags):
    """A text or number field group: created with flags, queried and edited by flag."""

    def field(state, name=None, query=False, edit=False, **flags):
        if query:
            widget = _widget(state, name, widget_type)
            (flag,) = [f for f in flags if flags[f]]
            return widget.get(flag)
        if edit:
            _widget(state, name, widget_type).update(flags)
            return name
        return _new_widget(state, widget_type, name, _current_parent(state), **flags)

    field.__name__ = field.__qualname__ = widget_type
    return _command("label", "buttonLabel", "buttonCommand", "numberOfFields", *value_flags)(field)


textFieldGrp = _field("textFieldGrp", ("text",))
textFieldButtonGrp = _field("textFieldButtonGrp", ("text",))
floatFieldGrp = _field("floatFieldGrp", ("value1",))


@_command("label", "command")
def button(state, label="", command=None, **_):
    return _new_widget(state, "button", None, _current_parent(state), label=label, command=command)


@_command("label")
def text(state, label="", **_):
    return _new_widget(state, "text", None, _current_parent(state), label=label)


@_command("window", "menu")
def deleteUI(state, name, window=False, menu=False, **_):
    if name not in state.widgets:
        raise RuntimeError(f"Object '{name}' not found.")
    doomed = {name}
    changed = True
    while changed:
        changed = False
        for child, widget in state.widgets.items():
            if widget["parent"] in doomed and child not in doomed:
                doomed.add(child)
                changed = True
    for child in doomed:
        del state.widgets[child]
    state.parent_stack = [p for p in state.parent_stack if p not in doomed]


@_command("parent", "label", "tearOff", "exists")
def menu(state, name=None, parent=None, label="", tearOff=False, exists=False, **_):
    if exists:
        return name in state.widgets and state.widgets[name]["type"] == "menu"
    if parent not in state.widgets:
        raise RuntimeError(f"Object '{parent}' not found.")
    return _new_widget(state, "menu", name, parent, label=label)


@_command("parent", "label", "command", "divider")
def menuItem(state, parent=None, label="", command=None, divider=False, **_):
    if parent not in state.widgets:
        raise RuntimeError(f"Object '{parent}' not found.")
    return _new_widget(state, "menuItem", None, parent, label=label, command=command, divider=divider)


@_command("title", "status", "progress", "maxValue", "isInterruptable", "isCancelled", "endProgress")
def progressWindow(state, query=False, edit=False, endProgress=False, isCancelled=False, **flags):
    if endProgress:
        if state.progress is None:
            raise RuntimeError("progressWindow: no progress window is open")
        state.progress_log.append({"event": "end"})
        state.progress = None
        return None
    if query:
        if state.progress is None:
            raise RuntimeError("progressWindow: no progress window is open")
        if isCancelled:
            state.progress["queries"] += 1
            limit = state.cancel_after_queries
            return limit is not None and state.progress["queries"] >= limit
        raise TypeError("emulated progressWindow: only isCancelled is queried")
    if edit:
        if state.progress is None:
            raise RuntimeError("progressWindow: no progress window is open")
        state.progress.update(flags)
        state.progress_log.append({"event": "edit", **flags})
        return None
    if state.progress is not None:
        raise RuntimeError("progressWindow: a progress window is already open")
    state.progress = {"queries": 0, **flags}
    state.progress_log.append({"event": "begin", **flags})
    return True


@_command("fileMode", "caption", "fileFilter", "dialogStyle")
def fileDialog2(state, **flags):
    state.dialog_log.append({"dialog": "fileDialog2", **flags})
    answer = state.file_dialog_answers.pop(0) if state.file_dialog_answers else None
    return None if answer is None else [answer]


@_command("title", "message", "button", "defaultButton", "icon")
def confirmDialog(state, title="", message="", button=("OK",), **flags):
    state.messages.append((title, message))
    return next(iter(button))


@_command()
def warning(state, message, **_):
    state.warnings.append(str(message))
