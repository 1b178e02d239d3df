"""Layer guard: core and cad_import import without host applications; core stays numpy/scipy only.

Run in a fresh interpreter with ``bpy`` and ``maya`` blocked (``sys.modules[name] = None``
makes any import of them fail), so a stray host import anywhere below is caught. The
import graph of the whole distribution, read from the source with ``ast``, has no cycle.
"""

import ast
import graphlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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


def _distribution_modules() -> dict[str, Path]:
    """Every module of the looprig distribution -> its file, from pyproject's package list and dirs."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    dirs, modules = setup.get("package-dir", {}), {}
    for package in setup["packages"]:
        parent, tail = package, []  # a package without its own entry sits in its nearest mapped parent
        while parent not in dirs and "." in parent:
            parent, _, leaf = parent.rpartition(".")
            tail.insert(0, leaf)
        folder = ROOT / dirs.get(parent, parent.replace(".", "/")) / "/".join(tail)
        assert folder.is_dir(), (package, folder)
        for file in sorted(folder.glob("*.py")):
            modules[package if file.stem == "__init__" else f"{package}.{file.stem}"] = file
    return modules


def _imported_names(module: str, file: Path, modules) -> set[str]:
    """Absolute names of everything ``module`` imports, at any depth (function-local included)."""
    package = module if file.stem == "__init__" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return names


def _import_graph():
    """(module -> set of distribution modules it imports, module -> external top-level names)."""
    modules = _distribution_modules()
    internal, external = {}, {}
    for module, file in modules.items():
        internal[module], external[module] = set(), set()
        for name in _imported_names(module, file, modules):
            target = name
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules:
                if target != module:
                    internal[module].add(target)
            else:
                external[module].add(name.partition(".")[0])
    return internal, external


def test_the_distribution_has_no_import_cycle():
    """Each module's imports (all of them, function-local too) form a DAG over the whole distribution."""
    internal, _ = _import_graph()
    assert len(internal) > 50 and "looprig.cli" in internal and "looprig.core.solvers.ik" in internal
    try:
        order = list(graphlib.TopologicalSorter(internal).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"import cycle: {' -> '.join(error.args[1])}") from None
    assert set(order) == set(internal)


def test_the_core_folders_import_one_way():
    """Collapsed to the folders of core (a top-level module is its own node), imports form a DAG."""
    internal, _ = _import_graph()

    def folder(module: str) -> str:
        return ".".join(module.split(".")[:3])

    folders = {}
    for module, targets in internal.items():
        if module.startswith("looprig.core."):
            folders.setdefault(folder(module), set()).update(
                folder(t) for t in targets if t.startswith("looprig.core.") and folder(t) != folder(module)
            )
    assert {"looprig.core.model", "looprig.core.solvers", "looprig.core.retarget"} <= set(folders)
    try:
        list(graphlib.TopologicalSorter(folders).static_order())
    except graphlib.CycleError as error:
        raise AssertionError(f"folders import each other: {' -> '.join(error.args[1])}") from None


def test_core_imports_only_numpy_scipy_threadpoolctl_and_the_standard_library():
    internal, external = _import_graph()
    allowed = {"numpy", "scipy", "threadpoolctl", *sys.stdlib_module_names}
    for module in internal:
        if module.startswith("looprig.core"):
            assert external[module] <= allowed, (module, external[module] - allowed)
            outside = {m for m in internal[module] if not m.startswith("looprig.core")}
            assert not outside, (module, outside)


def test_the_graph_sees_function_local_and_relative_imports():
    """The parser behind the two tests above, on a known case: the CLI's lazy imports."""
    internal, external = _import_graph()
    assert {"looprig.app", "looprig.core", "looprig.core.library"} <= internal["looprig.cli"]
    assert "looprig.core.tracks.chain" in internal["looprig.app"]  # imported inside a function (load_chain)
    assert "matplotlib" in external["looprig.plotting"]
