"""A URDF link's physical description: its inertial block, its visual meshes and their
materials, and its mass from the meshes where the file gives none."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import FileFormatError
from .meshes import combine_mass_properties, mesh_mass_properties, resolve_mesh_path
from .specs import (
    ImportSettings,
    LinkSpec,
    MeshRef,
)
from .urdf_elements import origin_transform
from .xmlfile import XmlDocument


def read_inertial(doc: XmlDocument, link, spec: LinkSpec) -> bool:
    inertial = link.find("inertial")
    if inertial is None:
        return False
    T = origin_transform(doc, inertial)
    mass_el = inertial.find("mass")
    mass = 0.0 if mass_el is None else doc.number(mass_el, "value")
    if mass < 0:
        raise doc.error(mass_el, f"negative mass {mass} kg", f"link {spec.name!r} <mass>")
    spec.mass = mass
    spec.com = T[:3, 3]
    inertia_el = inertial.find("inertia")
    if inertia_el is not None and mass > 0:
        v = {k: doc.number(inertia_el, k, 0.0) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array(
            [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]]
        )
        R = T[:3, :3]
        spec.inertia = R @ I @ R.T
    return True


def _rgba(doc: XmlDocument, material) -> tuple[float, float, float, float] | None:
    """The ``<color rgba>`` of a ``<material>`` element, each component in [0, 1]."""
    color = None if material is None else material.find("color")
    if color is None:
        return None
    rgba = doc.floats(color, "rgba", 4)
    if np.any((rgba < 0) | (rgba > 1)):
        raise doc.error(color, f"rgba={color.get('rgba')!r}: components must lie in [0, 1]")
    return tuple(float(c) for c in rgba)


def named_materials(doc: XmlDocument, root) -> dict[str, tuple[float, float, float, float] | None]:
    """The robot-level ``<material name>`` colours, which visuals may refer to by name."""
    return {m.get("name"): _rgba(doc, m) for m in root.findall("material") if m.get("name")}


def _material(doc: XmlDocument, element, named) -> tuple[float, float, float, float] | None:
    """The colour of a visual: its own ``<material><color>``, else the named material's."""
    material = element.find("material")
    if material is None:
        return None
    return _rgba(doc, material) or named.get(material.get("name"))


def read_meshes(
    doc: XmlDocument,
    link,
    spec: LinkSpec,
    base: Path,
    package_paths,
    settings,
    notes: list[str],
    named=None,
    roles=("visual", "collision"),
) -> None:
    named = named or {}
    for visual in link.findall("visual"):  # the body's colour: its first coloured visual's
        spec.color = spec.color or _material(doc, visual, named)
    for role in roles:
        for element in link.findall(role):
            geometry = element.find("geometry")
            mesh = None if geometry is None else geometry.find("mesh")
            if mesh is None:
                continue
            uri = doc.text_attr(mesh, "filename", required=True)
            scale = doc.floats(mesh, "scale", 3, [1, 1, 1])
            resolved = resolve_mesh_path(uri, base, package_paths)
            if resolved is None:
                problem = f"mesh file {uri!r} not found (looked beside the URDF and in package paths)"
                if settings.missing_meshes == "error":
                    raise doc.error(mesh, problem, f"link {spec.name!r} <{role}><mesh>")
                notes.append(f"link {spec.name!r}: {problem}")
                path = uri
            else:
                path = str(resolved)
            rgba = _material(doc, element, named)
            T = origin_transform(doc, element) @ np.diag([*scale, 1.0])
            spec.meshes.append(MeshRef(path, T, role, rgba))


def mass_from_meshes(spec: LinkSpec, settings: ImportSettings, urdf_path) -> str | None:
    """Fill mass, CoM and inertia from the link's meshes; a note, or None."""
    collision = [m for m in spec.meshes if m.role == "collision" and Path(m.path).is_file()]
    visual = [m for m in spec.meshes if m.role == "visual" and Path(m.path).is_file()]
    parts = collision or visual
    if not parts:
        return None
    try:
        props = combine_mass_properties(
            mesh_mass_properties(m.path, settings.density, m.T_link_mesh) for m in parts
        )
    except FileFormatError as error:  # name the URDF and the link, then the mesh
        raise FileFormatError(
            urdf_path, f"mesh {error.path}: {error.problem}", f"link {spec.name!r}", spec.line
        ) from None
    spec.mass, spec.com, spec.inertia = props.mass, props.com, props.inertia
    return (
        f"link {spec.name!r} has no <inertial>: mass {props.mass:.4g} kg computed from its "
        f"{'collision' if collision else 'visual'} mesh(es) at {settings.density:g} kg/m^3"
    )
