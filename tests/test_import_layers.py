"""Layer guard: core and cad_import import without host applications; core stays numpy/scipy only.

Run in a fresh interpreter with ``bpy`` and ``maya`` blocked (``sys.modules[name] = None``
makes any import of them fail), so a stray host import anywhere below is caught.
"""

import json
import subprocess
import sys

SCRIPT = r"""
import json, sys
for name in ("bpy", "maya", "maya.cmds", "mathutils"):
    sys.modules[name] = None
import looprig.core
import looprig.core.tracks
import looprig.core.bvh
def loaded():  # blocked names sit in sys.modules as None
    return sorted(name for name, module in sys.modules.items() if module is not None)
after_core = loaded()
import looprig.cad_import
print(json.dumps({"after_core": after_core, "after_cad": loaded()}))
"""

FORBIDDEN_IN_CORE = ("trimesh", "mujoco", "yaml", "collada", "bpy", "maya")


def test_core_and_cad_import_load_without_hosts_and_core_stays_pure():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    loaded = {name.split(".")[0] for name in modules["after_core"]}
    assert not loaded & set(FORBIDDEN_IN_CORE), sorted(loaded & set(FORBIDDEN_IN_CORE))
    # cad_import loads its format libraries only when a file needs them
    assert "looprig.cad_import" in modules["after_cad"]
    assert not {name.split(".")[0] for name in modules["after_cad"]} & {"bpy", "maya"}
