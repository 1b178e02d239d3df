"""looprig's own action: one layered action per robot, one slot per animated object.

The retarget never writes over the animator's keys: it creates (or replaces)
the action tagged ``looprig_robot = <collection name>``, with one slot per
robot object it animates. An object that already had another action keeps it
with a fake user and gets it back on "Clear" (:func:`release`). Keys are
written in bulk (``keyframe_points.add`` + ``foreach_set``), not one by one.
"""

from __future__ import annotations

import bpy
import numpy as np

from .rest import ACTION_KEY, REST_KEY, apply_rest, is_looprig_action, store_rest

#: Object custom property naming the action the object had before looprig took over.
STASH_KEY = "looprig_stashed_action"
STASH_SLOT_KEY = "looprig_stashed_slot"

#: Keyframe interpolation and type values for foreach_set (Blender's internal enums).
INTERPOLATION = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}
KEY_TYPE = {"KEYFRAME": 0, "EXTREME": 1, "BREAKDOWN": 2, "JITTER": 3, "MOVING_HOLD": 4, "GENERATED": 5}


def action_name(collection) -> str:
    return f"looprig {collection.name}"


def find_action(collection):
    """The looprig action of a robot collection, or None."""
    for action in bpy.data.actions:
        if action.get(ACTION_KEY) == collection.name:
            return action
    return None


def remove_action(collection, objects) -> None:
    """Delete a robot's looprig action (objects using it are released first)."""
    action = find_action(collection)
    if action is None:
        return
    for ob in objects:
        if ob.animation_data is not None and ob.animation_data.action == action:
            release(ob)
    for ob in bpy.data.objects:  # objects no longer in the collection
        if ob.animation_data is not None and ob.animation_data.action == action:
            release(ob)
    bpy.data.actions.remove(action)


def new_action(collection):
    """A fresh, empty looprig action for the robot (one layer, one keyframe strip)."""
    action = bpy.data.actions.new(action_name(collection))
    action[ACTION_KEY] = collection.name
    layer = action.layers.new("looprig")
    layer.strips.new(type="KEYFRAME")
    return action


def slot_for(action, ob):
    """The action's slot for object ``ob`` (created when missing)."""
    identifier = "OB" + ob.name
    for slot in action.slots:
        if slot.identifier == identifier:
            return slot
    return action.slots.new(id_type="OBJECT", name=ob.name)


def channelbag(action, slot):
    return action.layers[0].strips[0].channelbag(slot, ensure=True)


def take_over(ob, action):
    """Assign looprig's action to ``ob`` (rest pose and any other action kept); returns
    the object's channelbag."""
    store_rest(ob)
    ad = ob.animation_data or ob.animation_data_create()
    previous = ad.action
    if previous is not None and not is_looprig_action(previous) and STASH_KEY not in ob.keys():
        previous.use_fake_user = True
        ob[STASH_KEY] = previous.name
        ob[STASH_SLOT_KEY] = ad.action_slot.identifier if ad.action_slot else ""
    slot = slot_for(action, ob)
    ad.action = action
    ad.action_slot = slot
    return channelbag(action, slot)


def release(ob) -> None:
    """Undo :func:`take_over`: the previous action (or none) and the rest pose come back."""
    ad = ob.animation_data
    if ad is not None and is_looprig_action(ad.action):
        ad.action = None
        stashed = ob.get(STASH_KEY)
        if stashed and stashed in bpy.data.actions:
            previous = bpy.data.actions[stashed]
            ad.action = previous
            identifier = ob.get(STASH_SLOT_KEY, "")
            for slot in previous.slots:
                if slot.identifier == identifier:
                    ad.action_slot = slot
    apply_rest(ob)
    for key in (STASH_KEY, STASH_SLOT_KEY, REST_KEY):
        if key in ob.keys():
            del ob[key]


def write_fcurve(
    bag,
    data_path: str,
    index: int,
    frames: np.ndarray,
    values: np.ndarray,
    group: str = "",
    interpolation: str = "LINEAR",
    key_types: np.ndarray | None = None,
):
    """Replace the F-curve ``data_path[index]`` in a channelbag with keys at (frames, values).

    Written with ``keyframe_points.add`` + ``foreach_set`` (about 0.3 µs per key).
    key_types: optional (F,) keyframe type values (see ``KEY_TYPE``).
    """
    existing = bag.fcurves.find(data_path, index=index)
    if existing is not None:
        bag.fcurves.remove(existing)
    fc = bag.fcurves.new(data_path, index=index)
    if group:  # (fcurves.new takes group_name only from Blender 5.0)
        fc.group = bag.groups.get(group) or bag.groups.new(group)
    n = len(frames)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2], co[1::2] = frames, values
    fc.keyframe_points.add(n)
    fc.keyframe_points.foreach_set("co", co)
    fc.keyframe_points.foreach_set("interpolation", np.full(n, INTERPOLATION[interpolation], np.int32))
    if key_types is not None:
        fc.keyframe_points.foreach_set("type", np.asarray(key_types, np.int32))
    fc.update()
    return fc


def read_fcurve(fc) -> tuple[np.ndarray, np.ndarray]:
    """(frames, values) of an F-curve's keys, in one ``foreach_get``."""
    n = len(fc.keyframe_points)
    co = np.empty(2 * n, dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return co[0::2].astype(float), co[1::2].astype(float)
