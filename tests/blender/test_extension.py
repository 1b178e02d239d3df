"""The extension zip: manifest and bundled wheels agree, and Blender installs and enables it.

The default test builds the zip with only the looprig wheel (``--no-download``:
no network beyond building the wheel). With ``LOOPRIG_BUILD_EXTENSION=1`` a
second test builds the full zip with the downloaded Linux x86-64 wheels of
scipy, trimesh, threadpoolctl, PyYAML and mujoco-core.
"""

import os
import re
import subprocess
import sys
import tomllib

import addon_utils
import bpy
import pytest
from conftest import MODULE, ROOT

sys.path.insert(0, str(ROOT / "blender_addon"))
import build_extension


def _build(tmp_path, *args):
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "blender_addon" / "build_extension.py"),
            "--output-dir",
            str(tmp_path),
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    zips = sorted(tmp_path.glob("looprig-*.zip"))
    assert len(zips) == 1, zips
    return zips[0]


def _check_consistent(path):
    report = build_extension.zip_report(path)
    manifest = tomllib.loads(report["manifest"])
    source = tomllib.loads((ROOT / "blender_addon" / "blender_manifest.toml").read_text())
    assert manifest["id"] == source["id"] == "looprig"
    assert manifest["version"] == source["version"]
    assert manifest["permissions"] == {"files": source["permissions"]["files"]}
    listed = sorted(w.removeprefix("./") for w in manifest["wheels"])
    assert listed == report["wheels"], "manifest wheels and the zip's wheels/ differ"
    for wheel in listed:
        name = wheel.split("/")[-1]
        assert re.match(r"^[A-Za-z0-9_.]+-[^-]+-[^-]+-[^-]+-[^-]+\.whl$", name), name
        assert build_extension.wheel_name(name) != "numpy", "numpy comes with Blender"
        assert "cp311" in name or "py3-none" in name, name
    assert "__init__.py" in report["python"]
    assert "build_extension.py" not in report["python"] and "screenshots.py" not in report["python"]
    return manifest, listed


def test_zip_with_local_wheel_is_consistent_and_installs(tmp_path):
    path = _build(tmp_path, "--no-download")
    _, wheels = _check_consistent(path)
    assert [w.split("/")[-1].split("-")[0] for w in wheels] == ["looprig"]
    # Blender itself installs and enables the zip as an extension
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    repo = bpy.context.preferences.extensions.repos.new(
        name="looprigtest", module="looprigtest", custom_directory=str(repo_dir), source="USER"
    )
    addon_utils.disable(MODULE, default_set=False)
    try:
        result = bpy.ops.extensions.package_install_files(
            filepath=str(path), repo="looprigtest", enable_on_install=True
        )
        assert result == {"FINISHED"}
        assert (repo_dir / "looprig" / "blender_manifest.toml").is_file()
        assert hasattr(bpy.types, "LOOPRIG_OT_retarget")
        assert bpy.ops.looprig.check_robot.poll() in (True, False)
        addon_utils.disable("bl_ext.looprigtest.looprig", default_set=True)
        assert not hasattr(bpy.types, "LOOPRIG_OT_retarget")
    finally:
        bpy.context.preferences.extensions.repos.remove(repo)
        addon_utils.enable(MODULE, default_set=False, handle_error=None)
    assert hasattr(bpy.types, "LOOPRIG_OT_retarget")


@pytest.mark.skipif(os.environ.get("LOOPRIG_BUILD_EXTENSION") != "1", reason="set LOOPRIG_BUILD_EXTENSION=1")
def test_full_zip_bundles_the_binary_wheels(tmp_path):
    path = _build(tmp_path)
    manifest, wheels = _check_consistent(path)
    names = {build_extension.wheel_name(w.split("/")[-1]) for w in wheels}
    assert {"looprig", "scipy", "trimesh", "threadpoolctl", "pyyaml", "mujoco_core"} <= names
    assert manifest["platforms"] == ["linux-x64"]
    for wheel in wheels:
        assert "linux-x64" in build_extension.wheel_platforms(wheel.split("/")[-1]), wheel
