"""looprig for Blender: retarget animation onto robots with kinematic loops, bake motor curves.

This module only registers; the add-on's parts are laid out by role:
``properties`` (``scene.looprig``, ``object.looprig_joint``/``looprig_body``),
``scene_graph`` (scene -> robot), ``sampling`` (world transforms per frame),
``operators_robot`` / ``operators_retarget`` / ``operators_bake`` /
``operators_recording`` / ``chains`` (workflows; ``recording``: a played clip's read-back;
``chains``: NLA strips played in sequence),
``panels`` (the "looprig" sidebar tab), ``live_link`` (the robot on real servos while the
timeline plays or scrubs), ``status_display`` (per-frame status: markers,
summary, ghost poses) and ``overlays`` (Graph Editor bands, the status band, the ghost).
"""

from . import (
    aims,
    chains,
    live_link,
    operators_bake,
    operators_recording,
    operators_retarget,
    operators_robot,
    overlays,
    panels,
    properties,
)

#: Registered in this order, unregistered in reverse.
modules = (
    properties,
    operators_robot,
    operators_retarget,
    operators_bake,
    operators_recording,
    chains,
    panels,
    live_link,
    aims,
    overlays,
)


def register():
    for module in modules:
        module.register()


def unregister():
    for module in reversed(modules):
        module.unregister()
