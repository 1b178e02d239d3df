"""Build the installable Blender extension zip of the looprig add-on, with bundled wheels.

Blender's Python (3.11 for Blender 4.4 to 5.0) ships numpy but not scipy or
trimesh, and not looprig itself. This script

1. copies the add-on (this folder, without the build and screenshot scripts)
   into a staging folder;
2. builds the looprig wheel (``pip wheel --no-deps`` of the repository) and
   downloads binary wheels of what the library needs in Blender — scipy,
   trimesh (with networkx for mesh repair), threadpoolctl, PyYAML (URDF closure files) and mujoco-core (MJCF)
   and their dependencies, without numpy — for Python 3.11 on each platform
   (``pip download --only-binary=:all: --python-version=3.11 --platform=...``,
   resolved against Blender's numpy 1.26.4);
3. lists them under ``wheels = [...]`` (and ``platforms``) in the staged
   ``blender_manifest.toml``;
4. runs Blender's own ``blender_ext.py build`` (from the ``bpy`` package;
   ``--split-platforms`` when several platforms are built) and validates the zip.

Usage (from the repository root)::

    .venv/bin/python blender_addon/build_extension.py                  # dist/looprig-0.1.0.zip, Linux x86-64
    .venv/bin/python blender_addon/build_extension.py --all-platforms  # + Windows and macOS zips
    .venv/bin/python blender_addon/build_extension.py --no-download    # only the looprig wheel (offline)

Install the zip in Blender with Edit > Preferences > Get Extensions > (menu)
Install from Disk, or ``blender --command extension install-file -r user_default <zip>``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ADDON = Path(__file__).resolve().parent
ROOT = ADDON.parent
#: Blender's numpy (bpy 5.0.x pins numpy<2, >=1.26); wheels are resolved against it, not bundled.
BLENDER_NUMPY = "numpy==1.26.4"
#: What the library needs inside Blender, beyond numpy.
REQUIREMENTS = (
    "scipy==1.17.1",
    "trimesh>=4.0",
    "networkx>=3.0",
    "threadpoolctl>=3.1",
    "pyyaml>=6.0",
    "mujoco-core>=4.0,<5",
)
#: Blender platform name -> pip platform tags (pip does not widen an explicit --platform
#: to older manylinux or macOS versions, so they are listed; Blender 4.4+ needs glibc 2.28).
PLATFORMS = {
    "linux-x64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    "windows-x64": ("win_amd64",),
    "macos-arm64": ("macosx_14_0_arm64", "macosx_12_0_arm64", "macosx_11_0_arm64"),
}
NOT_BUNDLED = ("numpy",)
EXCLUDED_FILES = ("build_extension.py", "screenshots.py")


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


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def build_looprig_wheel(wheels: Path) -> Path:
    """Build the looprig wheel of this repository into ``wheels``."""
    _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(ROOT))
    found = sorted(wheels.glob("looprig-*.whl"))
    if not found:
        raise SystemExit("pip wheel produced no looprig wheel")
    return found[-1]


def download_wheels(wheels: Path, platform_tags, find_links: Path | None = None) -> None:
    """Binary wheels of REQUIREMENTS and their dependencies for one platform (numpy removed)."""
    args = ["download", "--quiet", "--only-binary=:all:", "--python-version=3.11", "--dest", str(wheels)]
    args += [f"--platform={tag}" for tag in platform_tags]
    if find_links is not None:
        args += ["--no-index", "--find-links", str(find_links)]
    _pip(*args, BLENDER_NUMPY, *REQUIREMENTS)
    for wheel in wheels.glob("*.whl"):
        if wheel_name(wheel.name) in NOT_BUNDLED:
            wheel.unlink()


def wheel_name(filename: str) -> str:
    """Normalised distribution name of a wheel file name."""
    return re.sub(r"[-_.]+", "_", filename.split("-")[0]).lower()


def wheel_platforms(filename: str) -> set[str]:
    """Blender platforms a wheel file runs on (all of them for pure wheels)."""
    tags = filename[: -len(".whl")].split("-")[-1].split(".")
    if tags == ["any"]:
        return set(PLATFORMS)
    found = set()
    for tag in tags:
        if "linux" in tag and tag.endswith("x86_64"):
            found.add("linux-x64")
        elif tag.startswith("win") and tag.endswith("amd64"):
            found.add("windows-x64")
        elif tag.startswith("macosx") and (tag.endswith("arm64") or tag.endswith("universal2")):
            found.add("macos-arm64")
    return found


def write_manifest(addon: Path, wheel_files: list[str], platforms: list[str] | None) -> None:
    """Add ``wheels`` (and ``platforms``, None for any) to the staged manifest."""
    manifest = addon / "blender_manifest.toml"
    text = manifest.read_text()
    lines = ",\n".join(f'  "./wheels/{name}"' for name in sorted(wheel_files))
    addition = "" if platforms is None else f"\nplatforms = {json.dumps(sorted(platforms))}\n"
    addition += f"wheels = [\n{lines},\n]\n"
    # top-level keys must come before the first table
    head, sep, tail = text.partition("\n[")
    manifest.write_text(head.rstrip("\n") + "\n" + addition + sep + tail)


def build(
    output: Path, platforms: list[str], download: bool = True, find_links: Path | None = None
) -> list[Path]:
    """Build the extension zip(s) into ``output``; returns their paths."""
    output.mkdir(parents=True, exist_ok=True)
    ext = blender_ext_path()
    with tempfile.TemporaryDirectory(prefix="looprig-extension-") as tmp:
        addon = stage_addon(Path(tmp))
        wheels = addon / "wheels"
        wheels.mkdir()
        build_looprig_wheel(wheels)
        if download:
            for platform in platforms:
                download_wheels(wheels, PLATFORMS[platform], find_links)
        names = sorted(w.name for w in wheels.glob("*.whl"))
        binary = [n for n in names if not n.endswith("-any.whl")]
        covered = [p for p in platforms if all(p in wheel_platforms(n) for n in binary)]
        write_manifest(addon, names, (covered or platforms) if binary else None)
        before = set(output.glob("looprig-*.zip"))
        command = [sys.executable, str(ext), "build", "--source-dir", str(addon), "--output-dir", str(output)]
        if len(platforms) > 1:
            command.append("--split-platforms")
        subprocess.run(command, check=True)
        zips = sorted(set(output.glob("looprig-*.zip")) - before) or sorted(output.glob("looprig-*.zip"))
    for path in zips:
        subprocess.run([sys.executable, str(ext), "validate", str(path)], check=True)
    return zips


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
    parser.add_argument(
        "--output-dir", default=str(ROOT / "dist"), help="where the zip goes (default: dist/)"
    )
    parser.add_argument("--all-platforms", action="store_true", help="also Windows x64 and macOS arm64")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS), help="a platform to build")
    parser.add_argument("--no-download", action="store_true", help="bundle only the looprig wheel (offline)")
    parser.add_argument("--find-links", help="take dependency wheels from this folder instead of PyPI")
    args = parser.parse_args(argv)
    platforms = sorted(PLATFORMS) if args.all_platforms else (args.platform or ["linux-x64"])
    zips = build(
        Path(args.output_dir),
        platforms,
        not args.no_download,
        Path(args.find_links) if args.find_links else None,
    )
    for path in zips:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
