"""Layer guards for ``looprig.maya_scripts``: it must run in Maya's own Python, standard library only.

* Every module imports in a fresh interpreter where numpy is blocked, with the
  Maya emulation (``tests/maya_emulation``) standing in for Maya's modules,
  and none of them pulls in ``looprig.core``.
* Only ``maya_facade`` imports ``maya``.
* The code parses as Python 3.7 (Maya 2022's Python), the oldest Maya Python 3.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import looprig.maya_scripts

PACKAGE = Path(looprig.maya_scripts.__file__).parent
EMULATION = Path(__file__).parent / "maya_emulation"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")

SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
for name in ("numpy", "scipy"):
    sys.modules[name] = None  # any import of them fails
import importlib
import looprig.maya_scripts
for module in sys.argv[2:]:
    importlib.import_module("looprig.maya_scripts." + module)
print(json.dumps(sorted(n for n, m in sys.modules.items() if m is not None)))
"""


def test_modules_import_without_numpy_and_without_core():
    assert {"maya_facade", "export_tracks", "batch", "ui", "review", "errors"} <= set(MODULES)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(EMULATION), *MODULES], capture_output=True, text=True, check=True
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [n for n in loaded if n.split(".")[0] in ("numpy", "scipy")]
    assert not [n for n in loaded if n.startswith("looprig.core")]
    assert "maya.cmds" in loaded and "looprig.maya_scripts.ui" in loaded


def imported_modules(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_facade_talks_to_maya_and_code_parses_as_python_37():
    for path in PACKAGE.glob("*.py"):
        source = path.read_text()
        tree = ast.parse(source, feature_version=(3, 7))
        uses_maya = {n for n in imported_modules(tree) if n.split(".")[0] == "maya"}
        if path.stem == "maya_facade":
            assert uses_maya == {"maya", "maya.api.OpenMaya", "maya.standalone", "maya.utils"}
        else:
            assert not uses_maya, f"{path.name} imports {sorted(uses_maya)}; go through maya_facade"
