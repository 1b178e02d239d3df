r"""Compiling an MJCF file with MuJoCo (the ``cad`` extra): its bytes, meshes and masses
checked first, and MuJoCo's errors as one-line :class:`~.errors.FileFormatError`\ s."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import MAX_MESH_BYTES, MAX_MODEL_BYTES, FileFormatError, check_file_size


def mujoco_module():
    try:
        import mujoco
    except ImportError as error:
        raise FileFormatError(None, "reading MJCF needs MuJoCo: pip install 'looprig[cad]'") from error
    return mujoco


def mujoco_error(path, error: Exception, stage: str) -> FileFormatError:
    """A FileFormatError from MuJoCo's message, with the line it names."""
    message = str(error).strip()
    line = None
    marker = message.rfind(", line ")
    if marker >= 0:
        digits = message[marker + 7 :].split()[0] if message[marker + 7 :].split() else ""
        if digits.isdecimal():
            line = int(digits)
    problem = " ".join(part.strip() for part in message.splitlines() if part.strip())
    for prefix in ("XML Error: ", "Error: ", "ParseXML: "):
        problem = problem.replace(prefix, "")
    return FileFormatError(path, f"MuJoCo {stage} failed: {problem}", line=line)


def compile_mjcf(path, text: str | None = None, meshes: bool = True):
    """``(spec, model, visual)`` for an MJCF file (or its text). Errors as FileFormatError.

    visual: (ngeom,) bool, the geoms that collide with nothing (display only).
    meshes=False leaves out the mesh geoms whose body's inertia does not come from
    its geoms (an explicit ``<inertial>``): reading and processing meshes is most of
    the time a meshed model takes to compile, and kinematics and masses do not
    need them. MuJoCo's warnings are collected rather than written to
    ``MUJOCO_LOG.TXT``; a NaN in the file is an error.
    """
    mujoco = mujoco_module()
    messages: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(messages.append)
    try:
        try:
            if text is None:
                if not Path(path).is_file():
                    raise FileFormatError(path, "file not found")
                check_file_size(path, MAX_MODEL_BYTES)
                _check_utf8(Path(path).read_bytes(), path)
                spec = mujoco.MjSpec.from_file(str(path))
            else:
                spec = mujoco.MjSpec.from_string(text)
        except FileFormatError:
            raise
        except Exception as error:  # MuJoCo raises ValueError; be safe with others
            raise mujoco_error(path, error, "parsing") from None
        _check_masses(spec, path)
        if not meshes:
            _drop_unneeded_meshes(mujoco, spec)
        _check_mesh_files(spec, path)
        roles = [(geom, geom.contype == 0 and geom.conaffinity == 0) for geom in spec.geoms]
        # compile on this thread: MuJoCo's mesh thread pool once spun for half an hour in a
        # loaded test run, and one model's meshes compile in well under a second anyway
        spec.compiler.usethread = False
        try:
            model = spec.compile()
        except Exception as error:
            raise mujoco_error(path, error, "compiling") from None
    finally:
        mujoco.set_mju_user_warning(previous)
    for message in messages:
        if "NaN" in message:
            raise FileFormatError(path, "the file contains a NaN (not a number)")
    bad = [
        name
        for name in (
            "body_pos",
            "body_quat",
            "body_mass",
            "body_ipos",
            "body_inertia",
            "jnt_axis",
            "jnt_pos",
            "jnt_range",
            "site_pos",
            "site_quat",
            "geom_pos",
            "geom_quat",
            "eq_data",
            "actuator_ctrlrange",
            "actuator_gear",
            "tendon_range",
            "wrap_prm",
        )
        if not np.all(np.isfinite(getattr(model, name)))
    ]
    if bad:
        raise FileFormatError(path, "non-finite values in " + ", ".join(bad))
    visual = np.zeros(model.ngeom, bool)
    for geom, is_visual in roles:
        visual[geom.id] = is_visual
    return spec, model, visual


def _check_utf8(data: bytes, path) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise FileFormatError(path, f"not UTF-8 text: {error.reason}", line=line) from None


def _drop_unneeded_meshes(mujoco, spec) -> None:
    """Delete the mesh geoms no mass depends on, then the meshes no geom uses."""
    from_geoms = spec.compiler.inertiafromgeom
    for body in spec.bodies:
        if from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_TRUE or (
            from_geoms == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO and not body.explicitinertial
        ):
            continue
        for geom in list(body.geoms):
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                spec.delete(geom)
    used = {geom.meshname for geom in spec.geoms if geom.type == mujoco.mjtGeom.mjGEOM_MESH}
    for mesh in list(spec.meshes):
        if mesh.name not in used:
            spec.delete(mesh)


def _check_mesh_files(spec, path) -> None:
    """Refuse mesh files over the size limit before MuJoCo reads them."""
    base = Path(spec.modelfiledir or Path(path).parent) / (spec.meshdir or "")
    for mesh in spec.meshes:
        if mesh.file:
            file = Path(mesh.file)
            check_file_size(
                file if file.is_absolute() else base / file, MAX_MESH_BYTES, f"mesh {mesh.name!r}"
            )


def _check_masses(spec, path) -> None:
    """Negative or non-finite masses, densities and inertias are errors, not placeholders.

    MuJoCo itself rejects some (on moving bodies) and silently zeroes others (on
    bodies welded to their parent); looprig refuses them all, naming the element.
    """
    for body in spec.bodies:
        if body.explicitinertial:
            full = np.ravel(body.fullinertia)
            signed = [body.mass, *np.ravel(body.inertia), *full[:3]]  # masses and moments
            finite = [*signed, *full[3:]]  # products of inertia may be negative
            if (
                not (np.isfinite(body.mass) and body.mass >= 0)
                or any(not np.isnan(v) and not np.isfinite(v) for v in finite)
                or any(v < 0 for v in signed if np.isfinite(v))
            ):
                raise FileFormatError(
                    path,
                    f"mass {body.mass:g} kg and inertia must be finite and not negative",
                    f"body {body.name!r} <inertial>",
                )
    for geom in spec.geoms:
        for label, value in (("mass", geom.mass), ("density", geom.density)):
            if not np.isnan(value) and not (np.isfinite(value) and value >= 0):
                owner = geom.parent.name if geom.parent is not None else "?"
                raise FileFormatError(
                    path,
                    f"geom {label} {value:g} must be finite and not negative",
                    f"geom {geom.name!r} of body {owner!r}" if geom.name else f"a geom of body {owner!r}",
                )


def element_name(model, kind: str, index: int, fallback: str) -> str:
    """The name of element ``index`` of ``kind`` ("joint", "tendon", ...) in a compiled model,
    else ``fallback``."""
    name = getattr(model, kind)(index).name
    return name if name else fallback
