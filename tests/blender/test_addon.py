"""Packaging: registration leaves nothing behind, the manifest validates, the pure parts stay bpy-free."""

import json
import subprocess
import sys

import addon_utils
import bpy
from conftest import MODULE, ROOT

sys.path.insert(0, str(ROOT / "blender_addon"))
from build_extension import blender_ext_path

BLENDER_EXT = blender_ext_path()


def _looprig_types():
    return sorted(name for name in dir(bpy.types) if name.startswith("LOOPRIG_"))


def _pointers():
    return [
        hasattr(bpy.types.Scene, "looprig"),
        hasattr(bpy.types.Object, "looprig_joint"),
        hasattr(bpy.types.Object, "looprig_body"),
        hasattr(bpy.types.PoseBone, "looprig_joint"),
    ]


def _menu_entries():
    names = []
    for menu in (bpy.types.TOPBAR_MT_file_import, bpy.types.TOPBAR_MT_file_export):
        funcs = getattr(menu.draw, "_draw_funcs", [])
        names += [f.__name__ for f in funcs if f.__module__.startswith(MODULE)]
    return sorted(names)


def test_register_unregister_twice_leaves_no_classes_behind():
    registered = _looprig_types()
    assert "LOOPRIG_OT_retarget" in registered and "LOOPRIG_PT_robot" in registered
    assert all(_pointers())
    assert _menu_entries() == ["menu_export", "menu_import"]
    for _ in range(2):
        addon_utils.disable(MODULE, default_set=False)
        assert _looprig_types() == []
        assert not any(_pointers())
        assert _menu_entries() == []
        assert not hasattr(bpy.ops.looprig, "retarget") or not _operator_exists("looprig.retarget")
        assert addon_utils.enable(MODULE, default_set=False, handle_error=None) is not None
        assert _looprig_types() == registered
        assert all(_pointers())
        assert _menu_entries() == ["menu_export", "menu_import"]


def _operator_exists(idname: str) -> bool:
    module, name = idname.split(".")
    try:
        getattr(getattr(bpy.ops, module), name).get_rna_type()
        return True
    except (AttributeError, KeyError):
        return False


def test_manifest_validates():
    out = subprocess.run(
        [sys.executable, str(BLENDER_EXT), "validate", str(ROOT / "blender_addon")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


BLOCKED = r"""
import importlib.util, json, sys
for name in ("bpy", "mathutils", "gpu", "bpy_extras"):
    sys.modules[name] = None
import types
package = types.ModuleType("looprig_addon")  # the add-on's folder, without its __init__ (registration)
package.__path__ = [sys.argv[1]]
sys.modules["looprig_addon"] = package
loaded = {}
for name in ("robot_records", "robot_model", "overlay_geometry"):
    module = importlib.import_module("looprig_addon." + name)
    loaded[name] = sorted(n for n in dir(module) if not n.startswith("_"))
print(json.dumps(loaded))
"""


def test_pure_modules_import_without_blender():
    """The robot records and checks and the overlay geometry are testable without bpy (layer guard)."""
    out = subprocess.run(
        [sys.executable, "-c", BLOCKED, str(ROOT / "blender_addon")],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "build_robot" in loaded["robot_model"] and "RobotRecord" in loaded["robot_records"]
    assert "velocity_overlay" in loaded["overlay_geometry"]
