"""Packaging: a lean runtime, extras that fail only when used, with a one-line install hint.

The optional packages are blocked in a fresh interpreter (``sys.modules[name] = None``
makes any import of them fail, as on a machine without them), so these tests run in
any environment, the full dev one included.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

#: import name -> the extra that provides it
OPTIONAL = {
    "trimesh": "cad",
    "mujoco": "cad",
    "collada": "cad",
    "yaml": "cad",
    "networkx": "cad",
    "PIL": "cad",
    "matplotlib": "plot",
    "distributed": "batch",
    "dask": "batch",
    "dynamixel_sdk": "hardware",
}

BLOCKED = r"""
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None
"""

#: each optional feature, called with the extras blocked: (extra, code raising the error)
FEATURES = {
    "mesh": ("cad", "from looprig.cad_import import load_mesh; load_mesh('robot.stl')"),
    "mjcf": ("cad", "from looprig.cad_import.mjcf import read_mjcf; read_mjcf('r.xml', text='<mujoco/>')"),
    "closures": (
        "cad",
        "from looprig.cad_import.closures import read_closure_yaml; read_closure_yaml('c.yaml', {}, [])",
    ),
    "plot": (
        "plot",
        "from looprig.core.curves.actuator_curves import ActuatorCurves; "
        "from looprig.plotting import plot_curves; "
        "plot_curves(ActuatorCurves([0.0, 1.0], [[0.0], [1.0]], ('a',)), 'p.png')",
    ),
    "play": ("hardware", "from looprig.play import DynamixelBus; DynamixelBus('/dev/null', 57600, [1])"),
}


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()


def test_runtime_is_what_core_needs():
    names = {_requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert names == {"numpy", "scipy", "threadpoolctl"}


def test_extras_hold_the_optional_packages_and_dev_holds_every_extra():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {_requirement_name(r) for r in extras["cad"]} == {
        "trimesh", "mujoco-core", "pycollada", "pyyaml", "networkx", "pillow",
    }  # fmt: skip
    assert {_requirement_name(r) for r in extras["plot"]} == {"matplotlib"}
    # the test extra pulls in every other feature extra; dev adds lint and bpy
    (test_self,) = [r for r in extras["test"] if _requirement_name(r) == "looprig"]
    features = set(extras) - {"test", "dev"}
    assert set(re.search(r"\[(.*)\]", test_self).group(1).split(",")) == features
    assert "looprig[test]" in extras["dev"]
    assert any(_requirement_name(r) == "bpy" for r in extras["dev"])


def test_the_app_imports_without_any_extra():
    code = BLOCKED.format(blocked=sorted(OPTIONAL)) + (
        "import looprig, looprig.core, looprig.cli, looprig.demo, looprig.plotting, looprig.cad_import\n"
        "import looprig.app, looprig.batch, looprig.play\n"
        "print(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & set(OPTIONAL)


def test_each_optional_feature_fails_with_a_looprig_error_naming_its_extra(tmp_path):
    code = BLOCKED.format(blocked=sorted(OPTIONAL)) + (
        "from looprig.core.errors import LooprigError\n"
        "try:\n"
        "    exec(sys.argv[1])\n"
        "except LooprigError as error:\n"
        "    print(json.dumps(str(error)))\n"
    )
    for feature, (extra, call) in FEATURES.items():
        out = subprocess.run([sys.executable, "-c", code, call], capture_output=True, text=True, cwd=tmp_path)
        assert out.returncode == 0, (feature, out.stderr[-2000:])
        message = json.loads(out.stdout)
        assert f"pip install 'looprig[{extra}]'" in message, (feature, message)
        assert "\n" not in message, (feature, message)
