"""looprig: retarget keyframed animation onto robots with kinematic loops.

The distribution's subpackages are the repository's top-level folders:
``looprig.core`` (pure numpy/scipy solver), ``looprig.cad_import`` (files to
mechanisms), ``looprig.blender_addon`` and ``looprig.maya_scripts`` (host glue).
"""

__version__ = "0.1.0"
