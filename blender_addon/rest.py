"""The robot's rest pose: an object's transform channels from before looprig keyed it.

looprig's own actions carry the custom property ``ACTION_KEY`` (the robot
collection's name); an object that looprig animates keeps its earlier channels
in ``REST_KEY`` so "Clear" and the robot reader can put it back.
"""

from __future__ import annotations

import contextlib

from .scene_data import idprop_to_python

#: ID property with an object's transform channels before looprig animated it.
REST_KEY = "looprig_rest"
#: Custom property on actions that looprig writes (value: the robot collection's name).
ACTION_KEY = "looprig_robot"


def is_looprig_action(action) -> bool:
    return action is not None and ACTION_KEY in action.keys()


def looprig_animated(ob) -> bool:
    ad = ob.animation_data
    return ad is not None and is_looprig_action(ad.action)


@contextlib.contextmanager
def rest_pose(context, objects):
    """Show ``objects`` without looprig's animation while the block runs, then restore.

    Objects animated by a looprig action get their transform channels from
    before the retarget (kept in ``REST_KEY``) and no action; afterwards the
    action and slot come back and the frame is re-evaluated. Nothing changes
    when no object is animated by looprig.
    """
    saved = []
    for ob in objects:
        ad = ob.animation_data
        if ad is None or not is_looprig_action(ad.action) or REST_KEY not in ob.keys():
            continue
        modes = (ob.rotation_mode, {pb.name: pb.rotation_mode for pb in ob.pose.bones} if ob.pose else {})
        saved.append((ob, ad.action, ad.action_slot, modes))
        ad.action = None
        apply_rest(ob)
    if saved:
        context.view_layer.update()
    try:
        yield
    finally:
        for ob, action, slot, (mode, bone_modes) in saved:
            ob.animation_data.action = action
            if slot is not None:
                ob.animation_data.action_slot = slot
            ob.rotation_mode = mode
            for name, bone_mode in bone_modes.items():
                ob.pose.bones[name].rotation_mode = bone_mode
        if saved:
            context.scene.frame_set(context.scene.frame_current, subframe=context.scene.frame_subframe)


def rest_channels(ob) -> dict:
    """The robot reader's view of an object's transform channels (and its pose bones'): the ones
    stored before looprig keyed it, else the current ones."""
    if looprig_animated(ob) and REST_KEY in ob.keys():
        return idprop_to_python(ob[REST_KEY])
    return current_channels(ob)


def current_channels(ob) -> dict:
    """An object's transform channels (and its pose bones', with their constraints' influence)."""
    rest = {
        "location": list(ob.location),
        "rotation_mode": ob.rotation_mode,
        "rotation_quaternion": list(ob.rotation_quaternion),
        "rotation_euler": list(ob.rotation_euler),
        "rotation_axis_angle": list(ob.rotation_axis_angle),
        "scale": list(ob.scale),
    }
    if ob.type == "ARMATURE" and ob.pose is not None:
        rest["bones"] = {
            pb.name: {
                "location": list(pb.location),
                "rotation_mode": pb.rotation_mode,
                "rotation_quaternion": list(pb.rotation_quaternion),
                "rotation_euler": list(pb.rotation_euler),
                "scale": list(pb.scale),
                "influence": {c.name: c.influence for c in pb.constraints},
            }
            for pb in ob.pose.bones
        }
    return rest


def store_rest(ob) -> None:
    """Remember an object's transform channels (and its pose bones') before looprig keys it."""
    if REST_KEY not in ob.keys():
        ob[REST_KEY] = current_channels(ob)


#: Transform channels kept for the rest pose (the rotation mode first: it picks the rotation).
_CHANNELS = ("rotation_mode", "location", "rotation_quaternion", "rotation_euler", "scale")


def _set_channels(owner, values: dict, extra=()) -> None:
    for key in (*_CHANNELS, *extra):
        setattr(owner, key, values[key])


def apply_rest(ob) -> None:
    """Set an object's transform channels (and pose bones') back to the stored rest values."""
    rest = idprop_to_python(ob.get(REST_KEY))
    if not rest:
        return
    _set_channels(ob, rest, ("rotation_axis_angle",))
    for name, b in rest.get("bones", {}).items():
        pb = ob.pose.bones.get(name)
        if pb is None:
            continue
        _set_channels(pb, b)
        for name, influence in b.get("influence", {}).items():
            if name in pb.constraints:
                pb.constraints[name].influence = influence
