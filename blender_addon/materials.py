"""Colours of imported robots: a material per file colour, the object colour for the viewport.

A body's visual meshes are merged into one mesh object; each part keeps the colour its
file gave it (URDF ``<material><color rgba>``, MJCF ``rgba`` or material) as a material
slot (Principled BSDF base colour and alpha, and the viewport colour), shared by every
body with that colour. The object colour (what Solid shading with *Object* colours and
looprig's motor tint show) is the colour of the body's first coloured part.
"""

from __future__ import annotations

import bpy
import numpy as np


def colour_material(rgba):
    """The shared material of one colour (created on first use)."""
    r, g, b, a = (float(c) for c in rgba)
    name = f"looprig rgba {r:.3f} {g:.3f} {b:.3f} {a:.3f}"
    material = bpy.data.materials.get(name)
    if material is None:
        material = bpy.data.materials.new(name)
        material.diffuse_color = (r, g, b, a)
        bsdf = next((n for n in material.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
        if bsdf is not None:
            bsdf.inputs["Base Color"].default_value = (r, g, b, 1.0)
            bsdf.inputs["Alpha"].default_value = a
    return material


def apply_colours(ob, part_colours) -> None:
    """Give a merged mesh object its parts' colours.

    part_colours: rgba (4,) or None per merged part; each polygon's ``material_index``
    holds the number of its part (see :func:`.scene_build.triangle_mesh`) and becomes
    the slot of its part's colour. Parts without a colour take the first slot.
    """
    mesh = ob.data
    keys = [None if c is None else tuple(float(x) for x in c) for c in part_colours]
    coloured = [k for k in keys if k is not None]
    slots: dict[tuple, int] = {}
    for key in coloured:
        if key not in slots:
            slots[key] = len(mesh.materials)
            mesh.materials.append(colour_material(key))
    part = np.zeros(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("material_index", part)
    slot_of_part = np.array([slots.get(k, 0) for k in keys] or [0], np.int32)
    mesh.polygons.foreach_set("material_index", slot_of_part[np.clip(part, 0, len(slot_of_part) - 1)])
    if coloured:
        ob.color = coloured[0]
