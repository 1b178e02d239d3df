"""Curve files the commands write and read: the export formats, the Dynamixel mode of the tick
formats, writing curves into a folder, exporting a curves file and plotting one."""

from collections.abc import Sequence
from pathlib import Path

from .core import LooprigError

#: Export formats: name -> (writer function name in looprig.core.export, file suffix).
EXPORT_FORMATS = {
    "csv": ("write_csv", ".csv"),
    "plain-csv": ("write_plain_csv", ".plain.csv"),  # and its side file curves.plain.meta.json
    "json": ("write_json", ".json"),
    "dynamixel-csv": ("write_dynamixel_csv", ".dynamixel.csv"),
    "dynamixel-json": ("write_dynamixel_json", ".dynamixel.json"),
    "header": ("write_c_header", ".h"),
}


def load_curves(path):
    """Actuator curves from a curves JSON (``.json``) or CSV file."""
    from .core import export

    reader = export.read_json if Path(path).suffix.lower() == ".json" else export.read_csv
    return reader(path)


#: The formats that write Dynamixel ticks (the C header writes ticks by default).
TICK_FORMATS = ("dynamixel-csv", "dynamixel-json", "header")


def dynamixel_settings(curves, mechanism=None, mode: str = "auto"):
    """The servo model of a tick export of ``curves``: ``mode`` (one of
    :data:`~looprig.core.export.DXL_MODE_CHOICES`) and, with ``mechanism``, its
    actuators' zero offsets, directions and travel per turn."""
    from .core import export

    if mechanism is None:
        return export.DynamixelSettings(mode=mode)
    return export.DynamixelSettings.from_mechanism(mechanism, mode=mode, names=curves.names)


def write_curves(
    curves,
    outdir: Path,
    formats: Sequence[str],
    allow_violations: bool,
    mechanism=None,
    dynamixel_mode: str = "auto",
    cyclic: bool = False,
):
    """Write curves in each format into ``outdir``; refuses (LimitViolationError) unless allowed.

    Tick formats use :func:`dynamixel_settings`; ``cyclic``: the clip is played in a loop,
    so its limits are checked (and any violation recorded) across the seam, as
    ``looprig check --cyclic`` reads them. Returns the paths written.
    """
    from .core import export
    from .core.curves.limit_checks import LimitCheckSettings

    outdir.mkdir(parents=True, exist_ok=True)
    servos = dynamixel_settings(curves, mechanism, dynamixel_mode)
    settings = {
        "dynamixel-csv": servos,
        "dynamixel-json": servos,
        "header": export.CHeaderSettings(dynamixel=servos),
    }
    written = []
    for name in formats:
        writer, suffix = EXPORT_FORMATS[name]
        path = outdir / f"curves{suffix}"
        options = {"settings": settings[name]} if name in settings else {}
        check = LimitCheckSettings(cyclic=cyclic)
        getattr(export, writer)(curves, path, allow_violations=allow_violations, check=check, **options)
        written.append(path)
    return written


def export_curves(
    curves_path,
    format: str,
    output,
    allow_violations: bool = False,
    dynamixel_mode: str = "auto",
    audio: dict | None = None,
):
    """Convert a curves file to an export format; ``audio`` (``{"path", "offset_s"}``: the
    clip's sound) is recorded by the json format only.

    Returns (the violations recorded in it, why the ticks are in extended position
    mode or None; see :func:`~looprig.core.export.resolve_mode`).
    """
    from .core import export

    if audio is not None and format != "json":
        raise LooprigError(f"--audio: the sound is recorded by the json format, not {format}")
    curves = load_curves(curves_path)
    writer, _ = EXPORT_FORMATS[format]
    options, reason = ({"audio": audio} if audio is not None else {}), None
    if format in TICK_FORMATS:
        servos = dynamixel_settings(curves, mode=dynamixel_mode)
        reason = export.plan_ticks(curves, servos).mode_reason
        options = {"settings": export.CHeaderSettings(dynamixel=servos) if format == "header" else servos}
    return getattr(export, writer)(curves, output, allow_violations=allow_violations, **options), reason


def with_tick_plan(summary: dict, plan) -> dict:
    """``summary`` (a retarget report) with the Dynamixel mode the tick files are written in
    (key ``dynamixel``) and their tick-range violations added to each actuator's, so the
    report and the terminal list every violation a file records."""

    actuators = [
        {
            **a,
            "violations": a["violations"] + [v.to_dict() for v in plan.violations if v.actuator == a["name"]],
        }
        for a in summary["actuators"]
    ]
    return {**summary, "actuators": actuators, "dynamixel": mode_record(plan.settings, plan.mode_reason)}


def mode_record(settings, why: str | None) -> dict:
    """JSON-ready: the Dynamixel mode of ``settings`` (decided), its Operating Mode number,
    allowed ticks, and why it was chosen (or None)."""
    from .core.export import DXL_OPERATING_MODES

    return {
        "mode": settings.mode,
        "operating_mode": DXL_OPERATING_MODES[settings.mode],
        "tick_range": list(settings.ticks_range),
        "why": why,
    }


def plot_curves_file(curves_path, output) -> Path:
    """A PNG of a curves file's positions and velocities with their limit bands."""
    from .core.curves.limit_checks import all_violations
    from .plotting import plot_curves

    curves = load_curves(curves_path)
    return plot_curves(curves, output, all_violations(curves))
