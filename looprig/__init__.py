"""looprig: retarget keyframed animation onto robots with kinematic loops.

The distribution's subpackages are the repository's top-level folders:
``looprig.core`` (pure numpy/scipy solver), ``looprig.cad_import`` (files to
mechanisms), ``looprig.blender_addon`` and ``looprig.maya_scripts`` (host glue).
The package's own modules are the app layer: ``app`` (what commands, batch jobs
and hosts call), ``outputs`` (a run's set of files), ``batch``, ``play``,
``demo``, ``plotting``, and the command line (``cli``, ``console``).
"""

__version__ = "0.1.0"
