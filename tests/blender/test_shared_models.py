"""Every robot in ../shared/models imports through the add-on: in the development session, and
with nothing but bpy, numpy and what the extension zip bundles on the path.

The bundle test takes the Linux x86-64 zip from ``$LOOPRIG_EXTENSION_ZIP`` or ``dist/``
(``make extension`` builds it) and runs a separate Python (no site, no user site) with
the zip's add-on and wheels unpacked as Blender installs them (its Python 3.11 wheels
into one site folder, the add-on as a package) and this environment's packages hidden
by an import hook, all but ``bpy`` and ``numpy`` (what Blender brings) — so a module the
add-on or a loader imports but the zip lacks (Pillow for Cassie's OBJ textures, say)
fails here as it would in Blender.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import bpy
import numpy as np
import pytest
from conftest import MODELS, ROOT

#: This environment's site-packages (where bpy and numpy are installed).
PACKAGES = str(Path(np.__file__).resolve().parents[1])
#: MJCF files that are parts of another file (included by it), not robots.
FRAGMENTS = {"additional.xml", "joints_properties.xml"}


def robot_files() -> list[Path]:
    if not MODELS.is_dir():
        return []
    found = [p for p in MODELS.rglob("*") if p.suffix in (".urdf", ".xml") and "assets" not in p.parts]
    return sorted(p for p in found if p.name not in FRAGMENTS)


needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"robot models not found at {MODELS}")


@needs_models
@pytest.mark.parametrize("path", robot_files(), ids=lambda p: str(p.relative_to(MODELS)))
def test_every_shared_model_imports_and_checks(empty_scene, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what the loaders leave out is reported, not tested here
        assert bpy.ops.looprig.import_robot(filepath=str(path)) == {"FINISHED"}
        assert len(bpy.context.scene.looprig.robot.all_objects) > 0
        try:
            bpy.ops.looprig.check_robot()
        except RuntimeError as error:  # a robot the scene cannot solve is reported on one line
            assert "\n" not in str(error).strip() and "Traceback" not in str(error)


def _bundle_zip() -> Path | None:
    named = os.environ.get("LOOPRIG_EXTENSION_ZIP")
    if named:
        return Path(named)
    dist = ROOT / "dist"
    found = sorted(dist.glob("looprig-*linux_x64.zip")) + sorted(dist.glob("looprig-*.zip"))
    return found[0] if found else None


ISOLATED = r"""
import glob, importlib.machinery, json, os, sys, tempfile, warnings, zipfile
zip_path, packages, models = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
# Blender's own modules live inside the bpy package folder
ALLOWED = tuple(os.path.join(packages, name) for name in ("bpy", "numpy"))


class OnlyBpyAndNumpy:
    # this environment's packages are hidden, but for bpy and numpy (what Blender brings)
    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name)
        origin = (spec.origin or "") if spec is not None else ""
        if origin.startswith(packages) and not origin.startswith(ALLOWED):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


root = tempfile.mkdtemp()
addon = os.path.join(root, "looprig_bundle")
site = os.path.join(root, "site-packages")
with zipfile.ZipFile(zip_path) as z:
    z.extractall(addon)
for wheel in glob.glob(os.path.join(addon, "wheels", "*.whl")):
    if os.path.basename(wheel).split("-")[2] in ("cp311", "py3", "py2.py3"):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
sys.path[:0] = [root, site]
sys.path.append(packages)
sys.meta_path.insert(0, OnlyBpyAndNumpy)
import bpy
import addon_utils

assert addon_utils.enable("looprig_bundle", default_set=False, handle_error=None) is not None
warnings.simplefilter("ignore")
results = {}
for path in models:
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        results[path] = sorted(bpy.ops.looprig.import_robot(filepath=path))
    except RuntimeError as error:
        results[path] = str(error)
outside = sorted(
    name
    for name, module in list(sys.modules.items())
    if (getattr(module, "__file__", None) or "").startswith(packages)
    and not module.__file__.startswith(ALLOWED)
)
print(json.dumps({"results": results, "outside": outside}))
"""


@needs_models
@pytest.mark.skipif(_bundle_zip() is None, reason="no zip: make extension (or set LOOPRIG_EXTENSION_ZIP)")
def test_the_bundle_alone_imports_every_shared_model(tmp_path):
    models = json.dumps([str(p) for p in robot_files()])
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", ISOLATED, str(_bundle_zip()), PACKAGES, models],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "blender")},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    failed = {p: r for p, r in report["results"].items() if r != ["FINISHED"]}
    assert not failed, failed
    assert report["outside"] == []  # nothing came from this environment but bpy and numpy
