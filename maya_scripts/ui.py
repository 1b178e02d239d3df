"""looprig in Maya's UI: a main-menu entry and two small dialogs (export tracks, review curves).

Installed from ``userSetup.py`` with one line (see :func:`looprig.maya_scripts.install`)::

    import looprig.maya_scripts; looprig.maya_scripts.install()

Menu **looprig**:

* *Export Tracks...* — nodes (names, ``node=track``, or empty for the
  ``looprig_tracks`` set / the selection), frame range (default: playback
  range), rate [Hz] (default: the scene's fps; sub-frame up to 1200 Hz),
  file. A progress window shows the samples taken and can cancel; nothing is
  written on a cancel or an error, and the error is shown in a message box.
* *Add Selection to Tracks Set* — puts the selected transforms in the
  ``looprig_tracks`` set, which the export (and the batch command) use by default.
* *Import Curves for Review...* — a looprig curves CSV/JSON and a node
  (empty: a new ``looprig_curves`` locator); see :mod:`.review`.

Each dialog turns its fields into plain values and calls one function of
:mod:`.export_tracks` or :mod:`.review`; all Maya calls go through the facade.
"""

from __future__ import annotations

import os
import re

from .errors import ExportCancelled, MayaScriptError
from .export_tracks import DEFAULT_SET_NAME, MAX_RATE_HZ, export_tracks
from .review import import_curves

MENU_NAME = "looprigMenu"
EXPORT_WINDOW = "looprigExportWindow"
REVIEW_WINDOW = "looprigReviewWindow"
TRACKS_FILTER = "looprig tracks (*.json *.npz)"
CURVES_FILTER = "looprig curves (*.json *.csv)"


def _facade(host):
    if host is not None:
        return host
    from . import maya_facade

    return maya_facade


def install(host=None) -> bool:
    """Add the looprig menu once Maya's main window exists; does nothing in batch mode.

    Returns True when the menu was scheduled.
    """
    host = _facade(host)
    if host.is_batch():
        return False
    host.defer(lambda: build_menu(host))
    return True


def build_menu(host=None) -> str:
    """(Re)build the looprig menu in Maya's main menu bar."""
    host = _facade(host)
    return host.add_main_menu(
        MENU_NAME,
        "looprig",
        [
            ("Export Tracks...", lambda: show_export_dialog(host)),
            ("Add Selection to Tracks Set", lambda: add_selection_to_set(host)),
            None,
            ("Import Curves for Review...", lambda: show_review_dialog(host)),
        ],
    )


def _short(path: str) -> str:
    return path.rsplit("|", 1)[-1]


def export_defaults(host) -> dict:
    """Dialog defaults from the scene: nodes of the tracks set or the selection, playback range, fps, file."""
    members = host.set_members(DEFAULT_SET_NAME)
    nodes = members if members else host.selected_transforms()
    start, end = host.playback_range()
    scene = host.scene_path()
    path = os.path.splitext(scene)[0] + ".tracks.json" if scene else os.path.abspath("untitled.tracks.json")
    # short names where they are unique in the scene, DAG paths where they are not
    labels = [_short(n) if len(host.transforms_named(_short(n))) == 1 else n for n in nodes]
    return {
        "nodes": " ".join(labels),
        "start": start,
        "end": end,
        "rate": host.frames_per_second(),
        "path": path,
    }


def _show_dialog(host, window: str, title: str, fields, action, note: str) -> str:
    """Show the form ``window`` with one action button and a Close button; ``action`` is
    ``(label, run)``, ``run(values, host)`` called with the form's values. Returns the window."""
    label, run = action
    buttons = [
        (label, lambda values: run(values, host)),
        ("Close", lambda _values: host.close_window(window)),
    ]
    return host.show_form(window, title, fields, buttons, note)


def show_export_dialog(host=None) -> str:
    host = _facade(host)
    defaults = export_defaults(host)
    fields = [
        host.FormField("nodes", "Nodes", "text", defaults["nodes"]),
        host.FormField("start", "Start frame", "float", defaults["start"]),
        host.FormField("end", "End frame", "float", defaults["end"]),
        host.FormField("rate", "Rate [Hz]", "float", defaults["rate"]),
        host.FormField("path", "Tracks file", "save_file", defaults["path"], TRACKS_FILTER),
    ]
    note = (
        f"Nodes: names or node=track, space separated; empty = the {DEFAULT_SET_NAME} set or the "
        f"selection. Rate up to {MAX_RATE_HZ:g} Hz samples between frames."
    )
    return _show_dialog(host, EXPORT_WINDOW, "looprig: Export Tracks", fields, ("Export", run_export), note)


def split_nodes(text: str) -> list[str] | None:
    """Node entries typed in the dialog (spaces or commas between them); None when empty."""
    entries = [e for e in re.split(r"[\s,]+", text.strip()) if e]
    return entries or None


def run_export(values: dict, host=None):
    """Export with the dialog's values and a progress window; returns the result, or None on failure."""
    host = _facade(host)
    path = values["path"].strip()
    if not path:
        host.message("looprig export", "Choose a tracks file to write.")
        return None
    progress_window = None

    def progress(done: int, total: int) -> None:
        nonlocal progress_window
        if progress_window is None:
            progress_window = host.Progress("looprig: sampling tracks", total)
        if progress_window.update(done, f"{done} / {total} samples"):
            raise ExportCancelled("export cancelled; no file written")

    try:
        result = export_tracks(
            path,
            split_nodes(values["nodes"]),
            start=values["start"],
            end=values["end"],
            rate=values["rate"],
            progress=progress,
            host=host,
        )
    except MayaScriptError as error:
        host.message("looprig export failed", str(error))
        return None
    finally:
        if progress_window is not None:
            progress_window.close()
    for warning in result.warnings:
        host.warning(warning)
    host.message("looprig export", result.summary())
    return result


def add_selection_to_set(host=None) -> str | None:
    """Put the selected transforms in the ``looprig_tracks`` set (created if needed)."""
    host = _facade(host)
    selected = host.selected_transforms()
    if not selected:
        host.message("looprig", "Select the transforms to track first.")
        return None
    return host.add_to_set(DEFAULT_SET_NAME, selected)


def show_review_dialog(host=None) -> str:
    host = _facade(host)
    fields = [
        host.FormField("path", "Curves file", "open_file", "", CURVES_FILTER),
        host.FormField("node", "Node", "text", ""),
    ]
    note = "Node: where to key one attribute per actuator; empty = a new looprig_curves locator."
    return _show_dialog(
        host, REVIEW_WINDOW, "looprig: Import Curves for Review", fields, ("Import", run_review), note
    )


def run_review(values: dict, host=None):
    """Import a curves file with the dialog's values; returns the result, or None on failure."""
    host = _facade(host)
    path = values["path"].strip()
    if not path:
        host.message("looprig review", "Choose a looprig curves file (.json or .csv).")
        return None
    try:
        result = import_curves(path, values["node"].strip() or None, host=host)
    except MayaScriptError as error:
        host.message("looprig review failed", str(error))
        return None
    host.message("looprig review", result.summary())
    return result
