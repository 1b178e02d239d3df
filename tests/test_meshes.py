"""Meshes through trimesh: formats, mass properties of known solids, non-watertight surfaces."""

import numpy as np
import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_mesh, mesh_mass_properties
from looprig.cad_import.meshes import combine_mass_properties, resolve_mesh_path, triangle_mass_properties

trimesh = pytest.importorskip("trimesh")


def export_exact(mesh, path):
    """OBJ with 17 significant digits: the file holds the vertices exactly."""
    path.write_text(trimesh.exchange.obj.export_obj(mesh, digits=17, include_normals=False))


def test_box_mass_properties_match_the_closed_form(tmp_path):
    """Box a x b x c, density rho: m = rho a b c, I_xx = m (b^2 + c^2) / 12, ... about the centre."""
    a, b, c, rho = 0.3, 0.2, 0.1, 2700.0
    box = trimesh.creation.box([a, b, c])
    box.apply_translation([1.0, -2.0, 0.5])
    export_exact(box, tmp_path / "box.obj")
    props = mesh_mass_properties(tmp_path / "box.obj", rho)
    m = rho * a * b * c
    assert props.watertight
    assert props.mass == pytest.approx(m, rel=1e-12)
    np.testing.assert_allclose(props.com, [1.0, -2.0, 0.5], atol=1e-12)
    expected = m / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    np.testing.assert_allclose(props.inertia, expected, rtol=1e-10, atol=1e-14)


def test_cylinder_mass_properties_match_the_closed_form(tmp_path):
    """A cylinder tessellated as a regular n-gon prism (circumradius r, height h), exactly:

    area A = n r^2 sin(2 pi / n) / 2, m = rho A h; polar moment per unit mass of the n-gon
    J = r^2 (1 + 2 cos^2(pi / n)) / 6; I_zz = m J, I_xx = I_yy = m (J / 2 + h^2 / 12).
    As n grows these tend to m r^2 / 2 and m (3 r^2 + h^2) / 12.
    """
    r, h, n, rho = 0.05, 0.4, 64, 1000.0
    cylinder = trimesh.creation.cylinder(radius=r, height=h, sections=n)
    export_exact(cylinder, tmp_path / "cylinder.obj")
    props = mesh_mass_properties(tmp_path / "cylinder.obj", rho)
    area = n * r**2 * np.sin(2 * np.pi / n) / 2
    m = rho * area * h
    J = r**2 * (1 + 2 * np.cos(np.pi / n) ** 2) / 6
    assert props.mass == pytest.approx(m, rel=1e-9)
    np.testing.assert_allclose(props.com, 0.0, atol=1e-12)
    np.testing.assert_allclose(
        props.inertia, m * np.diag([J / 2 + h**2 / 12, J / 2 + h**2 / 12, J]), rtol=1e-8, atol=1e-14
    )
    # and close to the smooth cylinder
    assert props.inertia[2, 2] == pytest.approx(m * r**2 / 2, rel=2e-3)


def test_transform_and_scale_are_applied(tmp_path):
    trimesh.creation.box([1.0, 2.0, 3.0]).export(tmp_path / "box.glb")
    T = np.diag([0.1, 0.1, 0.1, 1.0])
    T[:3, 3] = [0.0, 0.0, 1.0]
    props = mesh_mass_properties(tmp_path / "box.glb", 1000.0, T)
    assert props.mass == pytest.approx(1000.0 * 0.1 * 0.2 * 0.3, rel=1e-6)
    np.testing.assert_allclose(props.com, [0, 0, 1.0], atol=1e-7)


@pytest.mark.parametrize("suffix", [".stl", ".obj", ".ply", ".glb", ".off", ".dae"])
def test_formats_load(tmp_path, suffix):
    box = trimesh.creation.box([0.1, 0.2, 0.3])
    path = tmp_path / f"box{suffix}"
    box.export(path)
    mesh = load_mesh(path)
    np.testing.assert_allclose(mesh.bounds, box.bounds, atol=1e-6)


def test_open_surface_warns_and_uses_the_hull(tmp_path):
    box = trimesh.creation.box([1.0, 1.0, 1.0])
    open_box = trimesh.Trimesh(box.vertices, box.faces[:-2], process=False)  # one face missing
    open_box.export(tmp_path / "open.stl")
    with pytest.warns(FileFormatWarning, match="not watertight"):
        props = mesh_mass_properties(tmp_path / "open.stl", 1.0)
    assert not props.watertight
    assert props.mass == pytest.approx(1.0, rel=1e-6)


def test_inverted_normals_still_give_a_positive_mass(tmp_path):
    box = trimesh.creation.box([1.0, 1.0, 2.0])
    box.invert()
    export_exact(box, tmp_path / "inverted.obj")
    assert mesh_mass_properties(tmp_path / "inverted.obj", 1.0).mass == pytest.approx(2.0, rel=1e-12)


def test_combined_parts_use_the_parallel_axis_theorem(tmp_path):
    """Two unit cubes side by side = a 2 x 1 x 1 box."""
    for k, x in enumerate((-0.5, 0.5)):
        cube = trimesh.creation.box([1, 1, 1])
        cube.apply_translation([x, 0, 0])
        export_exact(cube, tmp_path / f"c{k}.obj")
    parts = [mesh_mass_properties(tmp_path / f"c{k}.obj", 1.0) for k in range(2)]
    total = combine_mass_properties(parts)
    assert total.mass == pytest.approx(2.0)
    np.testing.assert_allclose(total.com, 0.0, atol=1e-12)
    np.testing.assert_allclose(total.inertia, 2.0 / 12 * np.diag([2, 5, 5]), atol=1e-12)


def test_mesh_errors(tmp_path):
    with pytest.raises(FileFormatError, match="mesh file not found"):
        load_mesh(tmp_path / "missing.stl")
    (tmp_path / "model.3mf").write_text("x")
    with pytest.raises(FileFormatError, match=r"unsupported mesh format '\.3mf'"):
        load_mesh(tmp_path / "model.3mf")
    (tmp_path / "broken.stl").write_bytes(b"solid x\nfacet normal 0 0 nope\n")
    with pytest.raises(FileFormatError, match=r"broken\.stl"):
        load_mesh(tmp_path / "broken.stl")
    trimesh.creation.box([1, 1, 1]).export(tmp_path / "ok.stl")
    with pytest.raises(FileFormatError, match="density must be positive"):
        mesh_mass_properties(tmp_path / "ok.stl", -1.0)


def test_step_needs_its_loader(tmp_path):
    (tmp_path / "part.step").write_text("ISO-10303-21;")
    try:
        import cascadio  # noqa: F401
    except ImportError:
        with pytest.raises(FileFormatError, match="pip install cascadio"):
            load_mesh(tmp_path / "part.step")
    else:  # pragma: no cover - only where the optional loader is installed
        with pytest.raises(FileFormatError):
            load_mesh(tmp_path / "part.step")


def test_package_uri_resolution(tmp_path):
    (tmp_path / "ws" / "my_robot" / "meshes").mkdir(parents=True)
    target = tmp_path / "ws" / "my_robot" / "meshes" / "a.stl"
    target.write_text("solid")
    urdf_dir = tmp_path / "ws" / "my_robot" / "urdf"
    urdf_dir.mkdir()
    assert resolve_mesh_path("package://my_robot/meshes/a.stl", urdf_dir) == target.resolve()
    assert (
        resolve_mesh_path("package://my_robot/meshes/a.stl", tmp_path, [tmp_path / "ws"]) == target.resolve()
    )
    assert resolve_mesh_path("../meshes/a.stl", urdf_dir) == target.resolve()
    assert resolve_mesh_path(f"file://{target}", tmp_path) == target.resolve()
    assert resolve_mesh_path("package:///a.stl", target.parent) == target.resolve()
    assert resolve_mesh_path("package://other/a.stl", tmp_path) is None


def test_triangle_arrays_with_mixed_winding_give_the_box_closed_form():
    """A 2 x 3 x 4 m box whose faces are wound inconsistently: m = rho V,
    I_xx = m (b^2 + c^2) / 12 about the centre."""
    import trimesh

    box = trimesh.creation.box(extents=(2.0, 3.0, 4.0))
    faces = box.faces.copy()
    faces[::3] = faces[::3, ::-1]  # flip every third triangle
    props = triangle_mass_properties(box.vertices + [1.0, 2.0, 3.0], faces, density=10.0)
    mass = 10.0 * 24.0
    assert props.mass == pytest.approx(mass)
    assert np.allclose(props.com, [1.0, 2.0, 3.0])
    assert np.allclose(np.diag(props.inertia), mass / 12 * np.array([3**2 + 4**2, 2**2 + 4**2, 2**2 + 3**2]))


def test_mass_properties_of_a_file_are_computed_once_until_it_changes(tmp_path):
    """A second call with the same file, density and frame returns the cached result (the
    same object, read-only); a changed file is read again; arrays give the same answer."""
    box = trimesh.creation.box([0.1, 0.2, 0.3])
    export_exact(box, tmp_path / "box.obj")
    first = mesh_mass_properties(tmp_path / "box.obj", 1000.0)
    assert mesh_mass_properties(tmp_path / "box.obj", 1000.0) is first
    assert not first.inertia.flags.writeable
    assert mesh_mass_properties(tmp_path / "box.obj", 500.0).mass == pytest.approx(first.mass / 2)
    from_arrays = mesh_mass_properties((box.vertices, box.faces), 1000.0)
    assert from_arrays.mass == pytest.approx(first.mass, rel=1e-12)
    export_exact(trimesh.creation.box([0.2, 0.2, 0.3]), tmp_path / "box.obj")
    assert mesh_mass_properties(tmp_path / "box.obj", 1000.0).mass == pytest.approx(2 * first.mass)
