"""Scene builders and snapshots shared by the Blender tests."""

import bpy
import numpy as np
from mathutils import Matrix


def snapshot(context):
    """What a failed operation must leave untouched: objects, matrices, actions, animation."""
    context.view_layer.update()
    return {
        "objects": sorted(o.name for o in bpy.data.objects),
        "matrices": {o.name: np.array(o.matrix_world).round(9).tolist() for o in bpy.data.objects},
        "actions": sorted(a.name for a in bpy.data.actions),
        "animated": sorted(
            (o.name, o.animation_data.action.name if o.animation_data and o.animation_data.action else "")
            for o in bpy.data.objects
        ),
        "markers": sorted(m.name for m in context.scene.timeline_markers),
        "custom": {o.name: sorted(o.keys()) for o in bpy.data.objects},
    }


def box(name, location, size=(0.1, 0.02, 0.02), collection=None):
    from blender_addon import scene_build

    mesh = scene_build.box_mesh(name, size)
    ob = bpy.data.objects.new(name, mesh)
    (collection or bpy.context.scene.collection).objects.link(ob)
    ob.location = location
    return ob


def constraint(name, kind, a, b, location, collection, rotation=None):
    from blender_addon import scene_build

    matrix = Matrix.Translation(location)
    if rotation is not None:
        matrix = matrix @ rotation
    return scene_build.constraint_object(bpy.context, name, kind, a, b, matrix, collection)


def robot_collection(name="robot"):
    collection = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(collection)
    bpy.context.scene.looprig.robot = collection
    return collection


def problems(context):
    return [(p.severity, p.object_name, p.message) for p in context.scene.looprig.problems]


def fails(operator, *args, **kwargs) -> str:
    """Run an operator that must report an error (Blender raises it as RuntimeError); its message."""
    import pytest

    with pytest.raises(RuntimeError) as error:
        operator(*args, **kwargs)
    return str(error.value)


def fourbar_rig(collection, name="rig"):
    """The demo four-bar as an armature: crank, coupler, rocker bones (hinges about z), an
    anchor bone locked at the rocker pivot, and an IK constraint closing the loop there."""
    from blender_addon import demo_scene as demo

    A, B, P = demo.fourbar_points(demo.CRANK_START)
    O4 = (demo.GROUND, 0.0, 0.0)
    data = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, data)
    collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    anchor = data.edit_bones.new("anchor")
    anchor.head, anchor.tail = O4, (O4[0], 0.0, 0.05)
    crank = data.edit_bones.new("crank")
    crank.head, crank.tail = (0, 0, 0), tuple(A)
    coupler = data.edit_bones.new("coupler")
    coupler.head, coupler.tail, coupler.parent, coupler.use_connect = tuple(A), tuple(B), crank, True
    rocker = data.edit_bones.new("rocker")
    rocker.head, rocker.tail, rocker.parent, rocker.use_connect = tuple(B), O4, coupler, True
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in rig.pose.bones:
        pb.lock_location = (True, True, True)
        pb.lock_rotation = (True, True, pb.name == "anchor")
        pb.lock_rotation_w = pb.name == "anchor"
    ik = rig.pose.bones["rocker"].constraints.new("IK")
    ik.target, ik.subtarget, ik.chain_count, ik.use_tail = rig, "anchor", 3, True
    js = rig.pose.bones["crank"].looprig_joint
    js.actuated, js.velocity_limit, js.hardware_id = True, demo.CRANK_VELOCITY_LIMIT, "1"
    frame = bpy.data.objects.new("coupler_point", None)
    collection.objects.link(frame)
    frame.parent, frame.parent_type, frame.parent_bone = rig, "BONE", "coupler"
    bpy.context.view_layer.update()
    frame.matrix_world = Matrix.Translation(tuple(P))
    bpy.context.view_layer.update()
    return rig
