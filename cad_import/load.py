"""One entry point for every mechanism file: URDF, MJCF, native looprig JSON.

The format is chosen by extension (``.urdf``; ``.json``; ``.xml``/``.mjcf``
by their root element ``<robot>`` or ``<mujoco>``), else by content.
"""

from __future__ import annotations

from pathlib import Path
from xml.parsers import expat

from ..core.model.mechanism import Mechanism
from .errors import MAX_MODEL_BYTES, FileFormatError, check_file_size
from .mjcf import read_mjcf
from .native_read import load_native
from .specs import ImportedModel, ImportSettings, TreeModel
from .tree import build_mechanism
from .urdf import UrdfOptions, read_urdf

FORMATS = ("urdf", "mjcf", "native")


class _Found(Exception):
    pass


def _root_tag(path: Path) -> str | None:
    """Name of the first XML element of a file, or None when it is not XML."""
    parser = expat.ParserCreate()

    def start(tag, _attrs):
        raise _Found(tag)

    parser.StartElementHandler = start
    parser.EntityDeclHandler = lambda *_: None
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(65536):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Found as found:
        return str(found.args[0])
    except expat.ExpatError:
        return None
    except OSError as error:
        raise FileFormatError(path, f"cannot read file: {error.strerror or error}") from None
    return None


def detect_format(path) -> str:
    """``"urdf"``, ``"mjcf"`` or ``"native"`` for a mechanism file."""
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(path, "file not found" if not path.exists() else "not a file")
    check_file_size(path, MAX_MODEL_BYTES)
    suffix = path.suffix.lower()
    if suffix == ".urdf":
        return "urdf"
    if suffix == ".json":
        return "native"
    tag = _root_tag(path)
    if tag == "robot":
        return "urdf"
    if tag == "mujoco":
        return "mjcf"
    if tag is None:
        with path.open("rb") as stream:
            head = stream.read(4096).lstrip()
        if head.startswith(b"{"):
            return "native"
        raise FileFormatError(
            path, "not a mechanism file: expected URDF (<robot>), MJCF (<mujoco>) or native looprig JSON"
        )
    raise FileFormatError(path, f"root element <{tag}> is neither <robot> (URDF) nor <mujoco> (MJCF)")


def _mark_actuated(tree: TreeModel, names) -> None:
    joints = {j.name: j for j in tree.joints}
    for name in names:
        if name not in joints:
            raise FileFormatError(
                tree.path, f"actuated joint {name!r} does not exist; joints are: " + ", ".join(sorted(joints))
            )
        joints[name].actuated = True


def load_model(
    path,
    *,
    format: str | None = None,
    actuated=(),
    density: float | None = None,
    placeholder_mass: float | None = None,
    missing_meshes: str | None = None,
    meshes: bool | None = None,
    **urdf_options,
) -> ImportedModel:
    """Import a mechanism file; the :class:`ImportedModel` keeps meshes and notes.

    format: force ``"urdf"``, ``"mjcf"`` or ``"native"`` (default: detect).
    actuated: joint names to actuate in addition to those the file declares (URDF, MJCF).
    density [kg/m^3], placeholder_mass [kg], missing_meshes ("error"/"warn"),
    meshes (False: only what masses need, for kinematics-only commands):
    see :class:`ImportSettings`.
    urdf_options: how a URDF is read (package_paths, closures, closure_kind, sidecar,
    floating_base), see :class:`~.urdf.UrdfOptions`.
    The initial configuration is the assembled one (all closures met), see
    :mod:`looprig.cad_import.tree`.
    """
    path = Path(path)
    kind = format or detect_format(path)
    if kind not in FORMATS:
        raise FileFormatError(path, f"unknown format {kind!r}; formats are: {', '.join(FORMATS)}")
    overrides = {
        key: value
        for key, value in (
            ("density", density),
            ("placeholder_mass", placeholder_mass),
            ("missing_meshes", missing_meshes),
            ("meshes", meshes),
        )
        if value is not None
    }
    if overrides.get("missing_meshes", "error") not in ("error", "warn"):
        raise FileFormatError(path, f"missing_meshes must be 'error' or 'warn', got {missing_meshes!r}")
    settings = ImportSettings(**overrides)
    urdf = UrdfOptions(actuated=actuated, **urdf_options)
    if kind == "native":
        imported = load_native(path)
        if actuated:
            raise FileFormatError(
                path, "'actuated' applies to URDF and MJCF; a native file states its actuators"
            )
        return imported
    if kind == "urdf":
        tree = read_urdf(path, urdf, settings=settings)
    else:
        tree = read_mjcf(path, settings=settings)
        _mark_actuated(tree, actuated)
    return build_mechanism(tree, settings)


def load_mechanism(path, **options) -> Mechanism:
    """The validated :class:`Mechanism` in a URDF, MJCF or native file.

    Options as for :func:`load_model`. Raises :class:`FileFormatError` naming
    the file, element and problem.
    """
    return load_model(path, **options).mechanism
