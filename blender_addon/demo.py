"""Build the demo scene from a shell, retarget, bake and save it (the ``bpy`` module from PyPI).

``python -m looprig.blender_addon.demo --blend out/demo.blend`` registers the
add-on, builds the four-bar of :mod:`.demo_scene`, runs the retarget (which
bakes) and saves the .blend.
"""

from __future__ import annotations

import argparse
import os
import sys

import bpy

from . import register
from .demo_scene import setup_demo


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the looprig four-bar demo scene in Blender")
    parser.add_argument("--blend", help="save the scene (retargeted and baked) to this .blend")
    parser.add_argument("--no-retarget", action="store_true", help="only build the scene")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of the crank turn [s]")
    args = parser.parse_args(argv)
    try:
        register()
    except ValueError:
        pass  # already registered
    bpy.ops.wm.read_homefile(use_empty=True)
    setup_demo(bpy.context, args.seconds)
    if not args.no_retarget:
        result = bpy.ops.looprig.retarget()
        if "FINISHED" not in result:
            print("retarget failed:", bpy.context.scene.looprig.status, file=sys.stderr)
            return 1
        print(bpy.context.scene.looprig.status)
    if args.blend:
        os.makedirs(os.path.dirname(os.path.abspath(args.blend)), exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.blend), check_existing=False)
        print("saved", args.blend)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
