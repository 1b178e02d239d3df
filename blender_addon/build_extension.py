"""Build the Blender extension of the looprig add-on: one zip per platform, wheels for every Blender Python.

Blender 4.4 to 5.0 run Python 3.11 with numpy 1.26; Blender 5.1 and 5.2 LTS run
Python 3.13 with numpy 2.x. Blender ships numpy but not scipy, trimesh or looprig.
Following Blender's conventions for multi-platform extensions, this script

1. copies the add-on (this folder, without the build and screenshot scripts)
   into a staging folder;
2. builds the looprig wheel (``pip wheel --no-deps`` of the repository) and
   downloads the binary wheels of what the add-on needs inside Blender — the
   runtime and ``cad`` dependencies of ``pyproject.toml`` (scipy,
   threadpoolctl, trimesh, networkx, mujoco-core, pycollada, PyYAML, Pillow)
   and theirs, never numpy — for each platform and each of Blender's Python
   ABIs (cp311, cp313): ``pip download --only-binary=:all: --platform ...
   --python-version ... --implementation cp --abi ...``, resolved against that
   Blender's numpy, so nothing is ever compiled. Downloads are kept in a cache
   outside the repository (``~/.cache/looprig-wheels``, or
   ``$LOOPRIG_WHEEL_CACHE``), one folder per platform, ABI and requirement set;
3. lists every wheel under ``wheels = [...]`` and the platforms under
   ``platforms`` in the staged ``blender_manifest.toml``;
4. runs Blender's own ``blender_ext.py build --split-platforms`` (shipped in the
   ``bpy`` package), which writes one ``looprig-<version>-<platform>.zip`` per
   platform holding only that platform's wheels, and validates each zip with
   ``blender_ext.py validate``.

windows-arm64 and linux-arm64 are built only when every bundled dependency
has a wheel for them and both ABIs; the script says which it left out and why.
matplotlib is not bundled: the add-on draws its curves in Blender's Graph
Editor, and matplotlib with its dependencies would add about 33 MB (a third) to each zip.

Usage (from the repository root)::

    .venv/bin/python blender_addon/build_extension.py                   # dist/looprig-0.1.0-linux_x64.zip
    .venv/bin/python blender_addon/build_extension.py --all-platforms   # every platform
    .venv/bin/python blender_addon/build_extension.py --platform macos-arm64 --platform windows-x64

Install a zip in Blender with Edit > Preferences > Get Extensions > (menu)
Install from Disk, or ``blender --command extension install-file -r user_default -e <zip>``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ADDON = Path(__file__).resolve().parent
ROOT = ADDON.parent
#: Blender's Python ABIs across 4.4-5.2 -> (pip --python-version, the numpy that Blender
#: ships with it: wheels are resolved against it and it is never bundled; bpy 4.4-5.0
#: require numpy>=1.26,<2, bpy 5.1.1-5.2 numpy>=2.2,<3).
PYTHONS = {
    "cp311": ("3.11", "numpy==1.26.4"),
    "cp313": ("3.13", "numpy>=2.2,<3"),
}
#: Pins for the bundle: scipy 1.17.1 accepts numpy 1.26.4 up to 2.6, i.e. every Blender's numpy.
PINS = {"scipy": "scipy==1.17.1"}
#: Blender platform -> pip platform tags, newest first. pip widens a macOS tag to older
#: macOS versions and universal2, manylinux2014 to older manylinux; manylinux_2_x tags are
#: listed (Blender 4.4+ needs glibc 2.28). scipy's Apple-silicon wheels need macOS 12.
PLATFORMS = {
    "linux-x64": tuple(f"manylinux_2_{m}_x86_64" for m in range(28, 17, -1)) + ("manylinux2014_x86_64",),
    "linux-arm64": tuple(f"manylinux_2_{m}_aarch64" for m in range(28, 17, -1)) + ("manylinux2014_aarch64",),
    "macos-arm64": ("macosx_12_0_arm64",),
    "macos-x64": ("macosx_11_0_x86_64",),
    "windows-x64": ("win_amd64",),
    "windows-arm64": ("win_arm64",),
}
#: Built only where every dependency has wheels for them (see module docstring).
OPTIONAL_PLATFORMS = ("linux-arm64", "windows-arm64")
NOT_BUNDLED = ("numpy",)
#: Left out of one platform's zip: MuJoCo publishes no Intel-macOS wheels, so MJCF import
#: is unavailable there (it fails with one line naming MuJoCo; URDF and native files work).
LEFT_OUT = {"macos-x64": ("mujoco_core",)}
EXCLUDED_FILES = ("build_extension.py", "screenshots.py", "screenshots_gaze.py")
CACHE = Path(os.environ.get("LOOPRIG_WHEEL_CACHE", Path.home() / ".cache" / "looprig-wheels"))


class MissingWheels(RuntimeError):
    """A dependency has no binary wheel for a platform and Python (pip's last lines say which)."""


def blender_ext_path() -> Path:
    """``blender_ext.py``, Blender's extension CLI, as shipped in the ``bpy`` package."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None:
        raise SystemExit(
            "the bpy package is not installed: pip install bpy==5.0.1 (see pyproject's dev extra)"
        )
    found = sorted(Path(spec.origin).parent.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        raise SystemExit(f"blender_ext.py not found under {Path(spec.origin).parent}")
    return found[-1]


def normalised(name: str) -> str:
    """A distribution name as wheel file names spell it (``mujoco-core`` -> ``mujoco_core``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_name(filename: str) -> str:
    """Normalised distribution name of a wheel file name."""
    return normalised(filename.split("-")[0])


def requirements(platform: str = "linux-x64") -> tuple[str, ...]:
    """What the add-on needs inside Blender on ``platform``: pyproject's runtime and ``cad``
    extra, pinned, without numpy and what LEFT_OUT names for that platform."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = []
    for requirement in (*project["dependencies"], *project["optional-dependencies"]["cad"]):
        name = normalised(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0])
        if name not in NOT_BUNDLED + LEFT_OUT.get(platform, ()):
            found.append(PINS.get(name, requirement))
    return tuple(found)


def stage_addon(staging: Path) -> Path:
    """Copy the add-on's files into ``staging/looprig``; returns that folder."""
    target = staging / "looprig"
    target.mkdir(parents=True)
    for path in sorted(ADDON.iterdir()):
        if path.name in EXCLUDED_FILES or path.name.startswith((".", "__pycache__")) or path.is_dir():
            continue
        if path.suffix in (".py", ".toml"):
            shutil.copy2(path, target / path.name)
    return target


def build_looprig_wheel(wheels: Path) -> Path:
    """Build the looprig wheel of this repository into ``wheels``."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels)]
    subprocess.run([*command, str(ROOT)], check=True)
    found = sorted(wheels.glob("looprig-*.whl"))
    if not found:
        raise SystemExit("pip wheel produced no looprig wheel")
    return found[-1]


def download_wheels(platform: str, abi: str, pins=(), cache: Path = CACHE) -> list[Path]:
    """Binary wheels of :func:`requirements` and their dependencies for one platform and ABI.

    pins: extra ``name==version`` requirements. Kept in ``cache/<platform>-<abi>-<hash
    of the request>``; a folder that is there is used as it is (delete the cache to
    fetch newer releases). numpy is left out. Raises MissingWheels when some
    dependency has no wheel for them.
    """
    python_version, numpy = PYTHONS[abi]
    request = [*requirements(platform), *pins, numpy]
    args = ["--only-binary=:all:", f"--python-version={python_version}", "--implementation=cp"]
    args += [f"--abi={abi}", "--abi=abi3", "--abi=none"] + [f"--platform={t}" for t in PLATFORMS[platform]]
    key = hashlib.sha256(json.dumps([request, args]).encode()).hexdigest()[:12]
    folder = cache / f"{platform}-{abi}-{key}"
    if not folder.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache))
        # --no-cache-dir: this cache is the one copy (pip's own would hold the same 600 MB again)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-cache-dir", "--dest", str(partial)]
        result = subprocess.run([*pip, *args, *request], capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(partial)
            lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
            raise MissingWheels(f"{platform} {abi}: {'; '.join(lines[-2:]) or result.stderr[-500:]}")
        try:
            partial.rename(folder)
        except OSError:  # another build cached the same set meanwhile
            shutil.rmtree(partial)
    return sorted(w for w in folder.glob("*.whl") if wheel_name(w.name) not in NOT_BUNDLED)


def wheel_platforms(filename: str) -> set[str]:
    """Blender platforms a wheel file runs on (all of them for pure wheels)."""
    tags = filename[: -len(".whl")].split("-")[-1].split(".")
    if tags == ["any"]:
        return set(PLATFORMS)
    found = set()
    for tag in tags:
        system = "linux" if "linux" in tag else "windows" if tag.startswith("win") else "macos"
        if tag.endswith(("x86_64", "amd64")):
            found.add(f"{system}-x64")
        elif tag.endswith(("arm64", "aarch64")):
            found.add(f"{system}-arm64")
        elif tag.endswith("universal2"):
            found |= {"macos-x64", "macos-arm64"}
    return found


def wheel_abis(filename: str) -> set[str]:
    """Blender Python ABIs (keys of PYTHONS) a wheel file runs on."""
    python_tag, abi_tag = filename[: -len(".whl")].split("-")[-3:-1]
    if abi_tag == "none" and python_tag.startswith("py3"):
        return set(PYTHONS)
    if abi_tag == "abi3":  # stable ABI: this CPython version and later ones
        return {abi for abi in PYTHONS if int(abi[3:]) >= int(python_tag[3:])}
    return {abi_tag} & set(PYTHONS)


def write_manifest(addon: Path, wheel_files: list[str], platforms: list[str]) -> None:
    """Add ``platforms`` and ``wheels`` to the staged manifest."""
    manifest = addon / "blender_manifest.toml"
    text = manifest.read_text()
    lines = ",\n".join(f'  "./wheels/{name}"' for name in sorted(wheel_files))
    addition = f"\nplatforms = {json.dumps(sorted(platforms))}\nwheels = [\n{lines},\n]\n"
    # top-level keys must come before the first table
    head, sep, tail = text.partition("\n[")
    manifest.write_text(head.rstrip("\n") + "\n" + addition + sep + tail)


def collect_wheels(platforms: list[str], cache: Path = CACHE) -> tuple[dict[str, list[Path]], dict[str, str]]:
    """Wheels per buildable platform, and why each other requested platform was left out."""
    wheels, skipped = {}, {}
    for platform in platforms:
        try:
            wheels[platform] = _platform_wheels(platform, cache)
        except MissingWheels as missing:
            if platform not in OPTIONAL_PLATFORMS:
                raise SystemExit(f"no wheels for {missing}") from None
            skipped[platform] = str(missing)
    return wheels, skipped


def _platform_wheels(platform: str, cache: Path) -> list[Path]:
    """Every ABI's wheels for one platform, pure wheels at one version for all ABIs.

    Blender installs the newest of two versions of a distribution, so a pure wheel
    that only the newer Python can run (networkx 3.7 needs Python 3.12) would
    break the older one: the oldest ABI's pure wheels are pinned for the newer ones.
    """
    found, pins = [], []
    for abi in PYTHONS:
        wheels = download_wheels(platform, abi, tuple(pins), cache)
        found += wheels
        pins += [
            f"{w.name.split('-')[0]}=={w.name.split('-')[1]}" for w in wheels if w.name.endswith("-any.whl")
        ]
    return found


def build(output: Path, platforms: list[str], cache: Path = CACHE) -> list[Path]:
    """Build one validated zip per platform into ``output``; returns their paths."""
    output.mkdir(parents=True, exist_ok=True)
    ext = blender_ext_path()
    wheels_by_platform, skipped = collect_wheels(platforms, cache)
    for reason in skipped.values():
        print(f"not built: {reason}", file=sys.stderr)
    built = sorted(wheels_by_platform)
    with tempfile.TemporaryDirectory(prefix="looprig-extension-") as tmp:
        addon = stage_addon(Path(tmp))
        wheels = addon / "wheels"
        wheels.mkdir()
        build_looprig_wheel(wheels)
        for found in wheels_by_platform.values():
            for wheel in found:
                if not (wheels / wheel.name).exists():
                    shutil.copy2(wheel, wheels / wheel.name)
        write_manifest(addon, sorted(w.name for w in wheels.glob("*.whl")), built)
        for platform in built:
            (output / f"looprig-{_version(addon)}-{platform.replace('-', '_')}.zip").unlink(missing_ok=True)
        command = [sys.executable, str(ext), "build", "--source-dir", str(addon), "--output-dir", str(output)]
        subprocess.run([*command, "--split-platforms"], check=True, stdout=subprocess.DEVNULL)
        zips = [output / f"looprig-{_version(addon)}-{p.replace('-', '_')}.zip" for p in built]
    for path in zips:
        subprocess.run(
            [sys.executable, str(ext), "validate", str(path)], check=True, stdout=subprocess.DEVNULL
        )
    return zips


def _version(addon: Path) -> str:
    return tomllib.loads((addon / "blender_manifest.toml").read_text())["version"]


def zip_report(path: Path) -> dict:
    """What a built zip holds: manifest text, wheel files, Python files (for tests)."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        manifest = archive.read("blender_manifest.toml").decode()
    return {
        "manifest": manifest,
        "wheels": sorted(n for n in names if n.startswith("wheels/") and n.endswith(".whl")),
        "python": sorted(n for n in names if n.endswith(".py")),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=str(ROOT / "dist"), help="where the zips go (default: dist/)")
    parser.add_argument("--all-platforms", action="store_true", help="every platform (default: linux-x64)")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS), help="a platform to build")
    args = parser.parse_args(argv)
    platforms = sorted(PLATFORMS) if args.all_platforms else (args.platform or ["linux-x64"])
    for path in build(Path(args.output_dir), platforms):
        print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
