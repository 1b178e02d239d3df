"""looprig in Maya: export tracked frames, review baked actuator curves.

Runs inside Maya's own Python with the standard library only (no numpy, no
``looprig.core``); the files it writes are read by ``looprig.core``.

* :mod:`.export_tracks` — sample world matrices of chosen transforms (sub-frame
  up to 1200 Hz) and write a looprig tracks file (JSON or NPZ).
* :mod:`.batch` — ``mayapy -m looprig.maya_scripts.batch scene.ma --nodes ... -o out.tracks.json``.
* :mod:`.review` — key baked actuator curves (looprig CSV/JSON) on a locator.
* :mod:`.ui` — the looprig menu and dialogs.
* :mod:`.maya_facade` — the only module that calls Maya.

Install the menu from ``userSetup.py`` with one line::

    import looprig.maya_scripts; looprig.maya_scripts.install()
"""


def install() -> bool:
    """Add the looprig menu to Maya's main window (deferred until the UI exists; no-op in batch mode)."""
    from . import ui

    return ui.install()
