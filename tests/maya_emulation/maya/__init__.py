"""An emulation of the few ``maya`` modules and calls looprig uses, for tests; not Maya.

Maya cannot be installed where looprig's tests run, so ``tests/maya_emulation``
(put on ``sys.path`` by the tests, never installed) provides a small, *stateful*
stand-in for exactly the calls ``looprig.maya_scripts.maya_facade`` makes:

* ``maya.cmds``: a scene of transforms with parents; translate, rotate (with
  ``rotateOrder``) and scale channels, static or keyed, evaluated at any time
  including fractional frames; ``worldMatrix[0]`` computed from the hierarchy
  in Maya's row-vector, flat-16 convention (translation at 12-14, centimetres);
  linear/angle/time units, up axis, current time, playback range, selection,
  object sets, locators, custom attributes and their keys, opening a scene,
  and the handful of UI commands the menu and dialogs use (recorded, with
  buttons and menu items that tests can press).
* ``maya.api.OpenMaya``: ``MSelectionList``, ``MDagPath``, ``MFnDependencyNode``,
  ``MPlug``, ``MDGContext``, ``MTime``, ``MFnMatrixData``, ``MMatrix``, ``MGlobal``.
* ``maya.standalone`` and ``maya.utils`` (``executeDeferred``).

What it does **not** emulate (and looprig's scripts do not rely on): pivots,
shear, ``rotateAxis``, ``jointOrient``, constraints, expressions, spline
tangents (keys interpolate linearly, or hold with a ``step`` out-tangent),
undo, references, namespaces beyond plain ``:`` in names, ``.ma``/``.mb``
files. A scene file for ``cmds.file(path, open=True)`` is a JSON description
defined in :mod:`maya._scene` (``"emulated_maya_scene": 1``), not a Maya file.

The state lives in :mod:`maya._scene`; tests reset and inspect it there.
"""
