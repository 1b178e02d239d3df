"""The extension zips, judged by Blender's own code: validator, platform and Python filters, installer.

Every platform's zip is built (their wheels are cached outside the repository, in
``~/.cache/looprig-wheels`` or ``$LOOPRIG_WHEEL_CACHE``: about 630 MB, downloaded in
about a minute the first time; then the build takes about 30 s), validated, checked
for wheels and refused by Blender outside its range; the linux-x64 zip is installed
and enabled in the ``bpy`` module. ``LOOPRIG_EXTENSION_PLATFORMS=linux-x64`` (a
comma-separated list) builds only those.

Blender's functions come from ``blender_ext.py``, the extension CLI that ships in
the bpy package; it runs without Blender.
"""

import email.parser
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import addon_utils
import bpy
import pytest
from conftest import MODULE, ROOT
from packaging.markers import default_environment
from packaging.requirements import Requirement

sys.path.insert(0, str(ROOT / "blender_addon"))
import build_extension

_CHOSEN = os.environ.get("LOOPRIG_EXTENSION_PLATFORMS", "all")
PLATFORMS = (
    sorted(build_extension.PLATFORMS) if _CHOSEN == "all" else sorted({"linux-x64", *_CHOSEN.split(",")})
)
#: Blender releases the zips are for: (Blender version, its Python)
SUPPORTED = [((4, 4, 0), (3, 11)), ((4, 5, 3), (3, 11)), ((5, 0, 1), (3, 11)), ((5, 1, 0), (3, 13)),
             ((5, 2, 3), (3, 13))]  # fmt: skip
#: marker environment of each Blender platform (for the wheels' Requires-Dist)
MARKERS = {
    "linux": {"sys_platform": "linux", "platform_system": "Linux"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows"},
}


def _load_blender_ext():
    spec = importlib.util.spec_from_file_location("blender_ext", build_extension.blender_ext_path())
    module = importlib.util.module_from_spec(spec)
    sys.modules["blender_ext"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


blender_ext = _load_blender_ext()


@pytest.fixture(scope="session")
def zips(tmp_path_factory):
    """Blender platform -> built zip (the platforms that could be built); deleted afterwards (~500 MB)."""
    output = tmp_path_factory.mktemp("dist")
    paths = build_extension.build(output, PLATFORMS)
    found = {path.stem.rsplit("-", 1)[1].replace("_", "-"): path for path in paths}
    assert set(found) >= set(PLATFORMS) - set(build_extension.OPTIONAL_PLATFORMS)
    yield found
    shutil.rmtree(output)


def _manifest(path):
    manifest = blender_ext.pkg_manifest_from_archive_and_validate(str(path), strict=True)
    assert not isinstance(manifest, str), f"{path.name}: {manifest}"
    return manifest


def _bundled(path):
    """Wheel file name -> its METADATA, for every wheel in the zip."""
    found = {}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.startswith("wheels/") and name.endswith(".whl"):
                with zipfile.ZipFile(io.BytesIO(archive.read(name))) as wheel:
                    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
                    found[name.removeprefix("wheels/")] = email.parser.BytesParser().parsebytes(
                        wheel.read(metadata), headersonly=True
                    )
    return found


def _for_platform(wheel, platform):
    return blender_ext.blender_platform_compatible_with_wheel_platform_from_filepath(platform, wheel)


def _runs_on(wheel, platform, python):
    """Blender's own test: would Blender ``python`` on ``platform`` install this wheel?"""
    if not _for_platform(wheel, platform):
        return False
    versions = blender_ext.python_versions_from_wheel(wheel)
    assert not isinstance(versions, str), versions
    return python in versions or python[:1] in versions


def test_each_zip_validates_and_declares_its_platform_and_blender_range(zips):
    source = tomllib.loads((ROOT / "blender_addon" / "blender_manifest.toml").read_text())
    for platform, path in zips.items():
        manifest = _manifest(path)
        assert manifest.id == source["id"] == "looprig" and manifest.version == source["version"]
        assert manifest.platforms == [platform], path.name
        assert (manifest.blender_version_min, manifest.blender_version_max) == ("4.4.0", "5.3.0")
        listed = sorted(w.removeprefix("./wheels/") for w in manifest.wheels)
        assert listed == sorted(_bundled(path)), "manifest wheels and the zip's wheels/ differ"
        assert all(_for_platform(w, platform) for w in listed), "a wheel for another platform"
        assert "numpy" not in {build_extension.wheel_name(w) for w in listed}, "numpy comes with Blender"
        names = zipfile.ZipFile(path).namelist()
        assert "__init__.py" in names and "build_extension.py" not in names and "screenshots.py" not in names


def test_wheels_cover_each_platform_for_every_blender_python(zips):
    """Per platform and Python: one wheel per distribution, each requirement met, numpy from Blender."""
    for platform, path in zips.items():
        bundled = _bundled(path)
        needed = {
            build_extension.normalised(Requirement(r).name) for r in build_extension.requirements(platform)
        }
        for python in ((3, 11), (3, 13)):
            usable = {w: meta for w, meta in bundled.items() if _runs_on(w, platform, python)}
            names = [build_extension.wheel_name(w) for w in usable]
            assert len(names) == len(set(names)), (
                f"{platform} {python}: a distribution twice: {sorted(usable)}"
            )
            assert needed | {"looprig"} <= set(names), f"{platform} {python}: missing {needed - set(names)}"
            environment = default_environment() | MARKERS[platform.split("-")[0]]
            version = ".".join(map(str, python))
            environment |= {"python_version": version, "python_full_version": f"{version}.0"}
            environment["platform_machine"] = "x86_64" if platform.endswith("x64") else "arm64"
            for wheel, meta in usable.items():
                if build_extension.wheel_name(wheel) == "looprig":
                    continue  # its own requirements are what this zip bundles
                for line in meta.get_all("Requires-Dist") or ():
                    requirement = Requirement(line)
                    if requirement.marker and not requirement.marker.evaluate(environment | {"extra": ""}):
                        continue
                    name = build_extension.normalised(requirement.name)
                    assert name == "numpy" or name in names, f"{platform} {python}: {wheel} needs {line}"


def test_blender_refuses_the_zip_outside_its_versions_pythons_and_platform(zips, tmp_path):
    """What Blender's installer checks before installing (``repository_filter_skip``), with its messages."""
    for platform, path in zips.items():
        manifest = _manifest(path)._asdict()
        manifest["python_versions"] = [
            ".".join(map(str, v)) for v in blender_ext.python_versions_from_wheels(manifest["wheels"])
        ]

        def refusal(blender, python, system, manifest=manifest):
            reasons = []
            refused = blender_ext.repository_filter_skip(
                manifest,
                filter_blender_version=blender,
                filter_platform=system,
                filter_python_version=(*python, 0),
                skip_message_fn=reasons.append,
                error_fn=pytest.fail,
            )
            assert refused == bool(reasons)
            return reasons

        for blender, python in SUPPORTED:
            assert refusal(blender, python, platform) == [], (platform, blender)
        assert "minimum supported version (4.4.0)" in refusal((4, 3, 0), (3, 11), platform)[0]
        assert "maximum version (5.3.0)" in refusal((5, 3, 0), (3, 13), platform)[0]
        assert "Python version" in refusal((5, 1, 0), (3, 12), platform)[0]
        other = "windows-arm64" if platform != "windows-arm64" else "linux-x64"
        assert f"This platform ({other}) isn't one of ({platform})" in refusal((5, 0, 1), (3, 11), other)[0]
    # and the installer itself, on this machine (linux-x64), for the linux-x64 zip
    install = [
        sys.executable,
        str(build_extension.blender_ext_path()),
        "install-files",
        str(zips["linux-x64"]),
    ]
    install += ["--local-dir", str(tmp_path), "--python-version", "3.13.0", "--blender-version"]
    refused = subprocess.run([*install, "5.3.0"], capture_output=True, text=True, check=True)
    assert "ERROR: looprig: This Blender version (5.3.0) must be less than" in refused.stdout
    assert not (tmp_path / "looprig").exists()
    accepted = subprocess.run([*install, "5.2.3"], capture_output=True, text=True, check=True)
    assert "ERROR" not in accepted.stdout and (tmp_path / "looprig" / "blender_manifest.toml").is_file()


def test_the_linux_zip_installs_and_enables_in_blender_with_its_python_3_11_wheels(zips, tmp_path):
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    repo = bpy.context.preferences.extensions.repos.new(
        name="looprigtest", module="looprigtest", custom_directory=str(repo_dir), source="USER"
    )
    addon_utils.disable(MODULE, default_set=False)
    before = set(sys.path)
    try:
        result = bpy.ops.extensions.package_install_files(
            filepath=str(zips["linux-x64"]), repo="looprigtest", enable_on_install=True
        )
        assert result == {"FINISHED"}
        assert (repo_dir / "looprig" / "blender_manifest.toml").is_file()
        assert hasattr(bpy.types, "LOOPRIG_OT_retarget")
        assert bpy.ops.looprig.check_robot.poll() in (True, False)
        # Blender unpacked the wheels for this Python (3.11) into a folder it put on sys.path
        (site,) = [Path(p) for p in set(sys.path) - before if p.endswith("site-packages")]
        bundled = _bundled(zips["linux-x64"])
        wanted = {build_extension.wheel_name(w) for w in bundled if _runs_on(w, "linux-x64", (3, 11))}
        unpacked = {build_extension.normalised(d.name.split("-")[0]) for d in site.glob("*.dist-info")}
        assert wanted <= unpacked, wanted - unpacked
        assert not [d for d in site.glob("*.dist-info") if "cp313" in d.name]
        _import_alone(site, tmp_path)
        addon_utils.disable("bl_ext.looprigtest.looprig", default_set=True)
        assert not hasattr(bpy.types, "LOOPRIG_OT_retarget")
    finally:
        bpy.context.preferences.extensions.repos.remove(repo)
        addon_utils.enable(MODULE, default_set=False, handle_error=None)
    assert hasattr(bpy.types, "LOOPRIG_OT_retarget")


def _import_alone(site, tmp_path):
    """The unpacked wheels import together on numpy 1.26.4 alone, without this venv's packages."""
    import numpy

    only_numpy = tmp_path / "numpy-only"
    only_numpy.mkdir()
    numpy_dir = Path(numpy.__file__).parent
    for name in ("numpy", "numpy.libs"):
        if (numpy_dir.parent / name).exists():
            (only_numpy / name).symlink_to(numpy_dir.parent / name)
    code = (
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import numpy, scipy.linalg, scipy.sparse.csgraph, threadpoolctl, trimesh, yaml, collada, networkx\n"
        "import PIL.Image, mujoco, looprig.core, looprig.cad_import\n"
        "assert numpy.__version__ == '1.26.4', numpy.__version__\n"
        "assert all(m.__file__.startswith(sys.argv[1]) for m in (scipy, trimesh, mujoco, looprig))\n"
        "mesh = trimesh.creation.box((1.0, 2.0, 3.0))\n"
        "assert abs(mesh.volume - 6.0) < 1e-9\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(site), str(only_numpy)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
