"""looprig.cad_import: mechanism files -> :class:`~looprig.core.model.mechanism.Mechanism`.

Public API:

* :func:`load_mechanism` (path, **options) -> Mechanism — URDF (with loop
  closures), MJCF, or the native looprig file.
* :func:`load_model` — the same, returning an :class:`ImportedModel` that also
  keeps every mesh reference, the joint offsets and notes.
* :func:`save_mechanism` (mechanism or ImportedModel, path) — write the native file.
* :class:`FileFormatError` — every file problem; :class:`FileFormatWarning`.

File formats are described in ``docs/files.md``.
"""

from .errors import FileFormatError, FileFormatWarning
from .load import detect_format, load_mechanism, load_model
from .meshes import MassProperties, load_mesh, mesh_mass_properties
from .native import NATIVE_SCHEMA, save_mechanism
from .native_read import load_native
from .specs import ImportedModel, ImportSettings, MeshRef

__all__ = [
    "NATIVE_SCHEMA",
    "FileFormatError",
    "FileFormatWarning",
    "ImportSettings",
    "ImportedModel",
    "MassProperties",
    "MeshRef",
    "detect_format",
    "load_mechanism",
    "load_mesh",
    "load_model",
    "load_native",
    "mesh_mass_properties",
    "save_mechanism",
]
