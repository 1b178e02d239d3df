"""Exceptions of the Maya scripts.

They do not derive from ``looprig.core``'s ``LooprigError``: importing the
core would import numpy, and these scripts run in Maya's own Python with the
standard library only. Messages name the node, file, frame or value at fault.
"""


class MayaScriptError(Exception):
    """Root of the errors raised by ``looprig.maya_scripts``."""


class NodeError(MayaScriptError, LookupError):
    """Nodes to export are missing, ambiguous or not transforms (all of them are listed)."""

    def __init__(self, message: str, missing=(), ambiguous=None):
        super().__init__(message)
        self.missing = tuple(missing)
        self.ambiguous = dict(ambiguous or {})


class RangeError(MayaScriptError, ValueError):
    """A frame range or sample rate cannot be sampled."""


class SampleError(MayaScriptError, ValueError):
    """A sampled transform cannot be written (not finite, zero scale)."""


class ExportCancelled(MayaScriptError):
    """The user cancelled an export; no file was written."""


class CurvesFileError(MayaScriptError, ValueError):
    """A looprig curves file (CSV or JSON) cannot be read for review."""
