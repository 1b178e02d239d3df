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
