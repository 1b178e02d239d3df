"""Blender tests: the real add-on in the ``bpy`` module from PyPI, headless.

The add-on is enabled once per session, as Blender's add-on manager does it
(``addon_utils.enable`` with the repository root on ``sys.path``, module
``blender_addon``); every test starts from an empty scene
(``read_homefile(use_empty=True)``, which keeps add-ons registered). Blender's
user resources go to a temporary folder, not ~/.config.
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

_RESOURCES = tempfile.mkdtemp(prefix="looprig-blender-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _RESOURCES)

bpy = pytest.importorskip("bpy")
import addon_utils  # noqa: E402  (needs bpy first)

ROOT = Path(__file__).resolve().parents[2]
MODULE = "blender_addon"
MODELS = ROOT.parent / "shared" / "models"
if str(ROOT) not in sys.path:  # the add-on's parent folder, as for any legacy add-on
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session", autouse=True)
def addon():
    module = addon_utils.enable(MODULE, default_set=False, handle_error=None)
    assert module is not None, "the looprig add-on did not enable"
    yield module
    addon_utils.disable(MODULE, default_set=False)


@pytest.fixture(autouse=True)
def empty_scene(addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    yield bpy.context


@pytest.fixture
def demo(empty_scene):
    """The four-bar demo scene (robot, animated target, one target row), retargeted with
    ``limit_mode`` report: its clip asks 4.93 rad/s of a 4 rad/s crank, and the tests of
    the exact answer and of the bake's violation marks read that answer (the tests of
    the status of a limited clip set hold)."""
    from blender_addon import demo_scene as demo

    collection = demo.setup_demo(bpy.context)
    bpy.context.scene.looprig.limit_mode = "report"
    return collection
