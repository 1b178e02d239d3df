"""The app layer: what the command line, the demo, batch jobs and host operators call.

Functions here load inputs, run a retarget and write its outputs; they return
results and never print (the CLI prints). Everything below them is ``core``
(numerics) and ``cad_import`` (files to mechanisms).
"""

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .core import LooprigError, analyse_mobility
from .core.library import NAMES, build

#: Export formats: name -> (writer function name in looprig.core.export, file suffix).
EXPORT_FORMATS = {
    "csv": ("write_csv", ".csv"),
    "json": ("write_json", ".json"),
    "dynamixel-csv": ("write_dynamixel_csv", ".dynamixel.csv"),
    "dynamixel-json": ("write_dynamixel_json", ".dynamixel.json"),
    "header": ("write_c_header", ".h"),
}


def load_mechanism(source: str):
    """A reference mechanism by name, else a mechanism file (URDF, MJCF, native)."""
    if source in NAMES:
        return build(source)
    if not Path(source).exists():
        raise LooprigError(f"{source!r} is neither a file nor a reference mechanism ({', '.join(NAMES)})")
    from .cad_import import load_mechanism as load_file

    return load_file(source)


def load_samples(path):
    """Track samples from a tracks file (JSON/NPZ) or a BVH file, in metres, z up."""
    if Path(path).suffix.lower() == ".bvh":
        from .core.bvh import read_bvh

        return read_bvh(path).samples()
    from .core.tracks import read_tracks

    return read_tracks(path).samples()


def load_curves(path):
    """Actuator curves from a curves JSON (``.json``) or CSV file."""
    from .core import export

    reader = export.read_json if Path(path).suffix.lower() == ".json" else export.read_csv
    return reader(path)


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an unlimited bound is written as null."""
    return float(value) if math.isfinite(value) else None


def mechanism_summary(mechanism) -> dict:
    """JSON-ready summary: counts, loops, mobility, actuators with limits, frames."""
    report = analyse_mobility(mechanism)
    summary = {"name": mechanism.name, **report.as_dict()}
    summary["actuator_list"] = [
        {
            "joint": j.name,
            "kind": j.kind.value,
            "motion": j.actuator.motion.value,
            "unit": j.actuator.unit,
            "lower": _finite_or_none(j.actuator.lower),
            "upper": _finite_or_none(j.actuator.upper),
            "velocity_limit": _finite_or_none(j.actuator.velocity_limit),
            "acceleration_limit": _finite_or_none(j.actuator.acceleration_limit),
            "hardware_id": j.actuator.hardware_id,
        }
        for j in mechanism.actuated_joints
    ]
    summary["frames"] = [f.name for f in mechanism.frames]
    return summary


def convert_mechanism(source, output) -> Path:
    """Write a URDF/MJCF/native mechanism file as a native looprig file; returns its path."""
    from .cad_import import load_model, save_mechanism

    return save_mechanism(load_model(source), output)


def write_curves(curves, outdir: Path, formats: Sequence[str], allow_violations: bool, mechanism=None):
    """Write curves in each format into ``outdir``; refuses (LimitViolationError) unless allowed.

    With ``mechanism``, tick formats use its actuators' servo zero offsets,
    directions and travel per turn. Returns the paths written.
    """
    from .core import export

    outdir.mkdir(parents=True, exist_ok=True)
    servos = export.DynamixelSettings.from_mechanism(mechanism) if mechanism is not None else None
    settings = {
        "dynamixel-csv": servos,
        "dynamixel-json": servos,
        "header": export.CHeaderSettings(dynamixel=servos) if servos is not None else None,
    }
    written = []
    for name in formats:
        writer, suffix = EXPORT_FORMATS[name]
        path = outdir / f"curves{suffix}"
        options = {} if settings.get(name) is None else {"settings": settings[name]}
        getattr(export, writer)(curves, path, allow_violations=allow_violations, **options)
        written.append(path)
    return written


def export_curves(curves_path, format: str, output, allow_violations: bool = False):
    """Convert a curves file to an export format; returns the violations recorded in it."""
    from .core import export

    writer, _ = EXPORT_FORMATS[format]
    return getattr(export, writer)(load_curves(curves_path), output, allow_violations=allow_violations)


def plot_curves_file(curves_path, output) -> Path:
    """A PNG of a curves file's positions and velocities with their limit bands."""
    from .core.curves import all_violations
    from .plotting import plot_curves

    curves = load_curves(curves_path)
    return plot_curves(curves, output, all_violations(curves))


@dataclass
class RetargetOutcome:
    """What :func:`retarget_to_folder` did.

    result: the :class:`~looprig.core.retarget.RetargetResult`; summary: its
    JSON-ready report (as written to report.json); written: the files written;
    violations: the number of limit violations in the curves.
    """

    result: object
    summary: dict
    written: list[Path] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return sum(len(a["violations"]) for a in self.summary["actuators"])


def retarget_to_folder(
    mechanism,
    samples,
    mapping,
    outdir: Path,
    formats: Sequence[str] = ("csv",),
    strict: bool = False,
    plot: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RetargetOutcome:
    """Retarget a clip and write the curves, report.json (and curves.png with ``plot``).

    With ``strict`` curves that break a limit are refused (LimitViolationError);
    otherwise the violations are recorded in every file.
    """
    from .core.retarget import retarget

    result = retarget(mechanism, samples, mapping, progress=progress)
    summary = result.summary()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = write_curves(result.curves, outdir, formats, allow_violations=not strict, mechanism=mechanism)
    report = outdir / "report.json"
    report.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    written.append(report)
    if plot:
        from .core.curves import all_violations
        from .plotting import plot_curves

        written.append(plot_curves(result.curves, outdir / "curves.png", all_violations(result.curves)))
    return RetargetOutcome(result, summary, written)
