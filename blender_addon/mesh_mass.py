"""Mass properties of mesh objects, computed once per mesh content and moved into the world.

A mesh's volume, centroid and central second moment are computed (by trimesh, through
:func:`.robot_model.mesh_mass_properties`) in the mesh's own coordinates at density 1
and cached under a digest of its content (vertex positions, corner vertices, polygon
count), so moving, rotating or scaling the object costs nothing and an edited mesh is
seen. For x -> A x + t the volume scales by ``|det A|``, the centroid maps with the
transform and the central second moment C (``∫ (x - c)(x - c)ᵀ dV``) becomes
``|det A| A C Aᵀ``; the inertia per unit density is ``tr(C) 1 - C``.

Objects with modifiers or shape keys are read through their evaluated mesh.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass

import numpy as np

from .robot_model import mesh_mass_properties

#: Cached mesh mass properties kept at most (digests of meshes no longer in use drop out first).
CACHE_SIZE = 1024


@dataclass(frozen=True)
class MeshMass:
    """Mass properties of a closed mesh at density 1, in its own coordinates.

    volume [u^3]; centroid (3,) [u]; second_moment (3, 3) [u^5]: ``∫ (x - c)(x - c)ᵀ dV``.
    """

    volume: float
    centroid: np.ndarray
    second_moment: np.ndarray

    def in_world(self, T: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Volume [m^3], centroid (3,) [m] and inertia per unit density (3, 3) [m^5] about the
        centroid, in world axes, of the mesh placed by T (4, 4) (mesh -> world metres)."""
        A, t = np.asarray(T, float)[:3, :3], np.asarray(T, float)[:3, 3]
        det = abs(float(np.linalg.det(A)))
        C = det * A @ self.second_moment @ A.T
        return det * self.volume, A @ self.centroid + t, np.trace(C) * np.eye(3) - C


_cache: dict[str, MeshMass] = {}


def mesh_digest(mesh) -> str:
    """Digest of a mesh datablock's geometry: vertex positions, corner vertices, polygon count."""
    positions = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.attributes["position"].data.foreach_get("vector", positions)
    corners = np.empty(len(mesh.loops), np.int32)
    if len(corners):
        mesh.attributes[".corner_vert"].data.foreach_get("value", corners)
    digest = hashlib.sha1(positions.tobytes())
    digest.update(corners.tobytes())
    digest.update(len(mesh.polygons).to_bytes(8, "little"))
    return digest.hexdigest()


def uses_evaluated_mesh(ob) -> bool:
    """True when the object's shape differs from its mesh datablock (modifiers, shape keys)."""
    return len(ob.modifiers) > 0 or ob.data.shape_keys is not None


@contextlib.contextmanager
def object_mesh(ob, depsgraph):
    """The mesh that shapes ``ob``: its datablock, or its evaluated mesh (freed afterwards)."""
    if not uses_evaluated_mesh(ob):
        yield ob.data
        return
    evaluated = ob.evaluated_get(depsgraph)
    try:
        yield evaluated.to_mesh()
    finally:
        evaluated.to_mesh_clear()


def _measure(mesh) -> MeshMass:
    vertices = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.attributes["position"].data.foreach_get("vector", vertices)
    mesh.calc_loop_triangles()
    triangles = np.empty(3 * len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("vertices", triangles)
    volume, centroid, inertia = mesh_mass_properties(
        vertices.reshape(-1, 3).astype(float), triangles.reshape(-1, 3), 1.0
    )
    second_moment = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    return MeshMass(float(volume), np.asarray(centroid, float), second_moment)


def object_mass(ob, depsgraph, T_world_object: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Volume [m^3], centroid (3,) [m] and inertia per unit density (3, 3) [m^5] of a mesh
    object whose world matrix in metres is ``T_world_object`` (a volume of 0: no closed
    solid, the centroid is then the vertices' mean)."""
    with object_mesh(ob, depsgraph) as mesh:
        key = mesh_digest(mesh)
        props = _cache.get(key)
        if props is None:
            props = _measure(mesh)
            if len(_cache) >= CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[key] = props
    return props.in_world(T_world_object)
