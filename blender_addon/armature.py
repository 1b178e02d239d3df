"""Armature rigs as robots: bones become bodies (placeholder until the rig reader lands)."""


def bone_body_name(armature_object, bone_name: str) -> str:
    """The body name of a bone: ``<armature>:<bone>``."""
    return f"{armature_object.name}:{bone_name}"


def read_armature(ob, record, depsgraph, s: float) -> None:
    """Add the bodies and joints of an armature to a robot record."""


def frame_body(ob):
    """Body of an Empty parented to a bone, or None."""
    if ob.parent_type == "BONE" and ob.parent_bone:
        return bone_body_name(ob.parent, ob.parent_bone)
    return None


def write_bone_motion(context, collection, model, world, frames, action) -> None:
    """Key the pose bones of the robot's armatures (none until the rig reader lands)."""
