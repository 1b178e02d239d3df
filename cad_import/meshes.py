"""Mesh files through trimesh: loading, path resolution, mass properties.

Formats: STL, OBJ, PLY, GLB/glTF and OFF natively; DAE (COLLADA) through
pycollada; STEP/STP only when trimesh's optional STEP loader (the ``cascadio``
package) is installed. A multi-part file is merged into one mesh.

Mass properties of a solid of uniform density come from the divergence
theorem over the triangles (trimesh's ``mass_properties``): they are exact for
a closed (watertight), consistently oriented surface. For an open surface the
result is meaningless; :func:`mesh_mass_properties` then warns and uses the
convex hull instead.
"""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np

from .errors import MAX_MESH_BYTES, FileFormatError, FileFormatWarning, check_file_size

#: File extensions trimesh reads here (lower case, with the dot).
MESH_EXTENSIONS = (".stl", ".obj", ".ply", ".glb", ".gltf", ".off", ".dae", ".step", ".stp")


@dataclass(frozen=True)
class MassProperties:
    """Uniform-density solid: mass [kg], com (3,) [m] and inertia (3, 3) [kg m^2]
    about the CoM, all in the frame the mesh was expressed in; watertight tells
    whether the surface was closed (else the convex hull was used)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray
    watertight: bool


def resolve_mesh_path(uri: str, base_dir: Path, package_paths=()) -> Path | None:
    """File path of a mesh reference, or None when no candidate exists.

    ``package://NAME/rest`` is looked up as ``P/NAME/rest`` and ``P/rest`` for
    every ``P`` in ``package_paths``, then beside the model file (``base_dir``)
    and its parents (``package:///rest``, with an empty package name, means
    ``base_dir/rest``). ``file://`` URIs and absolute paths are used as they are;
    relative paths are relative to ``base_dir``.
    """
    if uri.startswith("package://"):
        rest = uri[len("package://") :]
        package, _, relative = rest.partition("/")
        candidates = []
        roots = [Path(p) for p in package_paths]
        for root in roots:
            if package:
                candidates.append(root / package / relative)
            candidates.append(root / relative)
        candidates.append(base_dir / relative)
        if package:
            for parent in [base_dir, *base_dir.parents][:4]:
                if parent.name == package:
                    candidates.append(parent / relative)
                candidates.append(parent / package / relative)
    elif uri.startswith("file://"):
        candidates = [Path(unquote(urlparse(uri).path))]
    else:
        path = Path(uri)
        candidates = [path if path.is_absolute() else base_dir / path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None


def _trimesh():
    try:
        import trimesh
    except ImportError as error:
        raise FileFormatError(None, "reading meshes needs trimesh: pip install 'looprig[cad]'") from error
    return trimesh


def load_mesh(path):
    """Load a mesh file as one ``trimesh.Trimesh`` (scenes are merged).

    Raises FileFormatError when the file is missing, the format unsupported, or
    the file holds no triangles.
    """
    trimesh = _trimesh()
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(path, "mesh file not found")
    check_file_size(path, MAX_MESH_BYTES, "mesh file")
    suffix = path.suffix.lower()
    if suffix in (".step", ".stp"):
        try:
            import cascadio  # noqa: F401
        except ImportError:
            raise FileFormatError(
                path, "reading STEP files needs trimesh's STEP loader: pip install cascadio"
            ) from None
    if suffix not in MESH_EXTENSIONS:
        raise FileFormatError(
            path, f"unsupported mesh format {suffix!r}; supported: {', '.join(MESH_EXTENSIONS)}"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = trimesh.load(str(path), force="mesh", process=False)
    except Exception as error:  # trimesh raises many types for bad files
        raise FileFormatError(path, f"cannot read mesh: {type(error).__name__}: {error}") from None
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise FileFormatError(path, "mesh has no triangles")
    if not np.all(np.isfinite(loaded.vertices)):
        raise FileFormatError(path, "mesh has non-finite vertex coordinates")
    return loaded


def mesh_mass_properties(mesh, density: float, T_frame_mesh=None, name: str | None = None) -> MassProperties:
    """Mass properties of the solid bounded by a mesh, uniform ``density`` [kg/m^3].

    mesh: a mesh file path, or a triangle mesh as ``(vertices (V, 3) [m],
    triangles (T, 3) vertex indices)`` (how the Blender add-on calls it).
    T_frame_mesh: (4, 4) affine map (rotation, translation and scale) from mesh
    coordinates to the frame the result is expressed in (default identity).
    name: what messages call the mesh (default: the path, or "mesh").
    Inward winding is flipped; a surface that is not watertight gives a
    :class:`FileFormatWarning` and the convex hull's properties are returned
    instead; a surface enclosing no volume raises FileFormatError.
    """
    label = name or ("mesh" if isinstance(mesh, tuple) else mesh)
    if not np.isfinite(density) or density <= 0:
        raise FileFormatError(label, f"density must be positive, got {density}")
    if not isinstance(mesh, tuple):
        return _file_mass_properties(mesh, label, density, T_frame_mesh)
    vertices, triangles = mesh
    faces = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(faces) == 0:
        raise FileFormatError(label, "mesh has no triangles")
    loaded = _trimesh().Trimesh(vertices=np.asarray(vertices, float), faces=faces, process=False)
    return _checked(loaded, label, density, T_frame_mesh)


def triangle_mass_properties(vertices, triangles, density: float, name: str = "mesh") -> MassProperties:
    """Alias kept until the Blender add-on calls :func:`mesh_mass_properties` with arrays."""
    return mesh_mass_properties((vertices, triangles), density, name=name)


#: Mass properties of mesh files kept in memory (least recently used dropped first).
CACHE_SIZE = 512
_CACHE: OrderedDict = OrderedDict()


def _file_mass_properties(path, label, density: float, T_frame_mesh) -> MassProperties:
    """Computed once per file content, density and frame: cached under the file's path,
    size and modification time; a cached result repeats its watertightness warning."""
    try:
        stat = os.stat(path)
        T = b"" if T_frame_mesh is None else np.asarray(T_frame_mesh, float).tobytes()
        key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns, float(density), T)
    except (OSError, ValueError):
        key = None  # load_mesh reports the problem
    if key in _CACHE:
        _CACHE.move_to_end(key)
        props, warning = _CACHE[key]
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FileFormatWarning)
            props = _checked(load_mesh(path), label, density, T_frame_mesh)
        warning = next((str(w.message) for w in caught if issubclass(w.category, FileFormatWarning)), "")
        if key is not None:
            props.com.flags.writeable = props.inertia.flags.writeable = False  # shared by every caller
            _CACHE[key] = (props, warning)
            if len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    if warning:
        warnings.warn(warning, FileFormatWarning, stacklevel=3)
    return props


def _checked(loaded, label, density: float, T_frame_mesh) -> MassProperties:
    try:
        return _mass_properties(loaded, label, density, T_frame_mesh)
    except FileFormatError:
        raise
    except Exception as error:  # degenerate geometry: qhull and trimesh raise many types
        raise FileFormatError(
            label, f"cannot compute mass properties: {type(error).__name__}: {error}"
        ) from None


def _mass_properties(mesh, path, density: float, T_frame_mesh) -> MassProperties:
    if T_frame_mesh is not None:
        mesh.apply_transform(np.asarray(T_frame_mesh, float))
    mesh.merge_vertices()
    watertight = bool(mesh.is_watertight)
    solid = mesh
    if not watertight:
        warnings.warn(
            f"{path}: mesh is not watertight; its mass properties are taken from its convex hull",
            FileFormatWarning,
            stacklevel=2,
        )
        solid = mesh.convex_hull
    elif not mesh.is_winding_consistent:
        mesh.fix_normals()
    props = solid.mass_properties
    volume = float(props["volume"])
    if volume < 0:  # inward-facing triangles
        solid = solid.copy()
        solid.invert()
        props = solid.mass_properties
        volume = float(props["volume"])
    if not volume > 0 or not np.isfinite(volume):
        raise FileFormatError(path, f"mesh encloses no volume (volume {volume:.3g} m^3)")
    inertia = np.asarray(props["inertia"], float) * density  # trimesh: unit density, about CoM
    inertia = 0.5 * (inertia + inertia.T)
    return MassProperties(density * volume, np.asarray(props["center_mass"], float), inertia, watertight)


def combine_mass_properties(parts) -> MassProperties:
    """Mass properties of rigidly joined parts (same frame), by the parallel-axis theorem."""
    parts = list(parts)
    mass = sum(p.mass for p in parts)
    com = sum(p.mass * p.com for p in parts) / mass
    inertia = np.zeros((3, 3))
    for p in parts:
        d = p.com - com
        inertia += p.inertia + p.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return MassProperties(mass, com, inertia, all(p.watertight for p in parts))
