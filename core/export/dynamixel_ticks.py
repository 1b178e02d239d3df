"""Dynamixel Goal Position ticks as CSV or JSON (format ``looprig-dynamixel-ticks``, version 1).

Integer ticks for ROBOTIS Dynamixel X-series servos; the conversion and the
model assumptions are written in the file (see
:class:`~looprig.core.export.dynamixel.DynamixelSettings`).
"""

import csv
import io
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..curves.actuator_curves import UNITS, ActuatorCurves
from ..curves.limit_checks import LimitCheckSettings
from ..curves.violations import Violation
from ..errors import CurvesError, did_you_mean
from .common import (
    FORMAT_VERSION,
    check_derivatives,
    check_format,
    commented_table,
    finite_array,
    limits_meta,
    meta_ids,
    meta_limit_arrays,
    meta_lines,
    meta_list,
    plain_id,
    read_text,
    reading,
    string_list,
)
from .dynamixel import (
    DXL_CONVERSION,
    DXL_GOAL_POSITION_ADDRESS,
    DXL_OPERATING_MODES,
    DXL_REGISTER_RANGE,
    DXL_SOURCE,
    DXL_TICK_RANGES,
    DXL_TICKS_PER_REV,
    DXL_VELOCITY_UNIT_RPM,
    DynamixelMotor,
    DynamixelSettings,
    ticks_to_values,
    velocity_raw,
)
from .files import write_text
from .gate import ticks_gate

TICKS_FORMAT = "looprig-dynamixel-ticks"


@dataclass(frozen=True, eq=False)
class TickCurves:
    """Goal Position ticks read from a Dynamixel export.

    times: (F,) [s]; ticks: (F, A) int64; names, units ("rad"/"m"),
    hardware_ids: (A,); settings: the mode, range and per-motor mapping;
    lower, upper, velocity_limit, acceleration_limit: (A,) SI limits of the
    source curves (inf = none); violations: as recorded in the file.
    """

    times: np.ndarray
    ticks: np.ndarray
    names: tuple[str, ...]
    units: tuple[str, ...]
    hardware_ids: tuple
    settings: DynamixelSettings
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    acceleration_limit: np.ndarray
    violations: tuple[Violation, ...] = ()

    def to_values(self) -> np.ndarray:
        """(F, A) actuator values [rad or m] (within half a tick of the source)."""
        motors = self.settings.motors_for(self.names)
        return ticks_to_values(self.ticks, self.units, motors, self.names)

    def to_curves(self) -> ActuatorCurves:
        """:class:`ActuatorCurves` of :meth:`to_values`; violations become carried ones."""
        return ActuatorCurves(
            times=self.times,
            values=self.to_values(),
            names=self.names,
            units=self.units,
            lower=self.lower,
            upper=self.upper,
            velocity_limit=self.velocity_limit,
            acceleration_limit=self.acceleration_limit,
            hardware_ids=self.hardware_ids,
            carried_violations=self.violations,
        )


def ticks_meta(curves: ActuatorCurves, settings: DynamixelSettings, motors: Sequence[DynamixelMotor]) -> dict:
    limit_raw, peak_raw = velocity_raw(curves, motors)
    rate = curves.rate_hz
    return {
        "format": TICKS_FORMAT,
        "version": FORMAT_VERSION,
        "model": DXL_SOURCE,
        "conversion": DXL_CONVERSION,
        "ticks_per_revolution": DXL_TICKS_PER_REV,
        "goal_position_address": DXL_GOAL_POSITION_ADDRESS,
        "mode": settings.mode,
        "operating_mode": DXL_OPERATING_MODES[settings.mode],
        "tick_range": list(settings.ticks_range),
        "rate_hz": rate,
        "frame_period_ms": None if rate is None else 1000.0 / rate,
        "names": list(curves.names),
        "hardware_ids": [plain_id(h) for h in curves.hardware_ids],
        "units": list(curves.units),
        "zero_offset_ticks": [m.zero_offset_ticks for m in motors],
        "direction": [m.direction for m in motors],
        "metres_per_revolution": [m.metres_per_revolution for m in motors],
        **limits_meta(curves),
        "velocity_unit_rpm": DXL_VELOCITY_UNIT_RPM,
        "velocity_limit_raw": limit_raw,
        "peak_velocity_raw": peak_raw,
    }


def _ticks_writer(
    name: str, layout: Callable[[ActuatorCurves, dict, np.ndarray, list[Violation]], str], doc: str
) -> Callable[..., list[Violation]]:
    """The public writer ``name`` of one tick format: the curves checked and turned into
    ticks (:func:`~.gate.ticks_gate`), laid out by ``layout(curves, metadata, ticks (F, A),
    violations) -> text`` and written; the writer returns the violations it recorded."""

    def write(
        curves: ActuatorCurves,
        path,
        settings: DynamixelSettings | None = None,
        *,
        allow_violations: bool = False,
        check: LimitCheckSettings | None = None,
    ) -> list[Violation]:
        settings, motors, ticks, violations = ticks_gate(path, curves, settings, allow_violations, check)
        write_text(path, layout(curves, ticks_meta(curves, settings, motors), ticks, violations))
        return violations

    write.__name__ = write.__qualname__ = name
    write.__doc__ = doc
    return write


def _csv_text(curves: ActuatorCurves, meta: dict, ticks: np.ndarray, violations: list[Violation]) -> str:
    """``# key: JSON`` lines of ``meta`` and the violations, then ``time [s],<name> [tick],...`` rows."""
    meta["violation_count"] = len(violations)
    out = io.StringIO()
    out.write("\n".join(meta_lines(meta, violations)) + "\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["time [s]", *(f"{n} [tick]" for n in curves.names)])
    for t, row in zip(curves.times, ticks, strict=True):
        writer.writerow([repr(float(t)), *(str(int(k)) for k in row)])
    return out.getvalue()


def _json_text(curves: ActuatorCurves, doc: dict, ticks: np.ndarray, violations: list[Violation]) -> str:
    """The JSON document: ``doc``, the times, the ticks one list per actuator, the violations."""
    doc["frame_count"] = curves.n_frames
    doc["times"] = [float(t) for t in curves.times]
    doc["ticks"] = [[int(k) for k in ticks[:, a]] for a in range(curves.n_actuators)]
    doc["violations"] = [v.to_dict() for v in violations]
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


write_dynamixel_csv = _ticks_writer(
    "write_dynamixel_csv",
    _csv_text,
    """Write integer Goal Position ticks as CSV: ``# key: JSON`` lines with the model
    assumptions, then ``time [s],<name> [tick],...`` rows.""",
)

write_dynamixel_json = _ticks_writer(
    "write_dynamixel_json",
    _json_text,
    """Write integer Goal Position ticks as JSON (format ``looprig-dynamixel-ticks`` v1).

    The document holds the model assumptions (``model``, ``conversion``,
    ``mode``, ``tick_range``...), ``rate_hz``, ``times`` [s], per-actuator lists
    (``names``, ``hardware_ids``, ``zero_offset_ticks``...), ``ticks`` as one
    list per actuator, and ``violations``.
    """,
)


def ticks_from_meta(meta: Mapping, times, ticks, names, violations, path, what: str) -> TickCurves:
    """TickCurves of the columns and metadata of a ticks file, checked by converting them to curves."""
    n = len(names)
    if meta.get("names") is not None and string_list(meta["names"], "names") != list(names):
        raise CurvesError("column names disagree with 'names'")
    units = string_list(meta_list(meta, "units", n, "rad", path, what), "units")
    for unit in units:
        if unit not in UNITS:
            raise CurvesError(f"unit {unit!r} is not one of {UNITS}")
    zero = meta_list(meta, "zero_offset_ticks", n, 2048, path, what)
    sign = meta_list(meta, "direction", n, 1, path, what)
    mpr = meta_list(meta, "metres_per_revolution", n, None, path, what)
    motors = {name: DynamixelMotor(z, s, m) for name, z, s, m in zip(names, zero, sign, mpr, strict=True)}
    tick_range, mode = meta.get("tick_range"), meta.get("mode", "position")
    if mode not in DXL_TICK_RANGES:  # a file states the mode it was written in, never "auto"
        raise CurvesError(did_you_mean("Dynamixel mode", str(mode), DXL_TICK_RANGES))
    settings = DynamixelSettings(
        mode=mode,
        tick_range=None if tick_range is None else tuple(tick_range),
        motors=motors,
    )
    ticks = finite_array(ticks, f"{what} {os.fspath(path)!r}", "ticks")
    lo, hi = DXL_REGISTER_RANGE
    if ticks.shape != (len(times), n) or not np.all(
        (ticks == np.round(ticks)) & (ticks >= lo) & (ticks <= hi)
    ):
        raise CurvesError(f"ticks must be whole numbers in {lo}..{hi}, one per actuator and frame")
    out = TickCurves(
        times=finite_array(times, f"{what} {os.fspath(path)!r}", "times"),
        ticks=ticks.astype(np.int64),
        names=tuple(names),
        units=tuple(units),
        hardware_ids=meta_ids(meta, "hardware_ids", n, path, what),
        settings=settings,
        **meta_limit_arrays(meta, n, path, what),
        violations=tuple(violations),
    )
    check_derivatives(out.to_curves())  # validates times, units and limits, and that values convert
    return out


def read_dynamixel_csv(path) -> TickCurves:
    """Ticks from a CSV written by :func:`write_dynamixel_csv`."""
    what = "Dynamixel ticks CSV"
    with reading(path, what) as where:
        meta, violations, names, units, table = commented_table(path, what, TICKS_FORMAT)
        if any(u != "tick" for u in units):
            raise CurvesError(f"{where}: actuator columns must be in [tick]")
        ticks = table[:, 1:]
        if not np.all(ticks == np.round(ticks)):
            raise CurvesError(f"{where}: ticks must be integers")
        return ticks_from_meta(meta, table[:, 0], ticks, names, violations, path, what)


def read_dynamixel_json(path) -> TickCurves:
    """Ticks from a file written by :func:`write_dynamixel_json`."""
    what = "Dynamixel ticks JSON"
    with reading(path, what) as where:
        try:
            doc = json.loads(read_text(path, what))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise CurvesError(f"{where} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise CurvesError(f"{where}: expected a JSON object")
        check_format(doc, TICKS_FORMAT, where)
        names = string_list(doc.get("names"), "names")
        ticks = finite_array(doc.get("ticks"), where, "ticks")
        if ticks.ndim != 2:
            raise CurvesError(f"{where}: 'ticks' must hold one list of ticks per actuator")
        records = doc.get("violations", [])
        if not isinstance(records, list):
            raise CurvesError(f"{where}: 'violations' must be a list")
        violations = [Violation.from_dict(v) for v in records]
        return ticks_from_meta(doc, doc["times"], ticks.T, names, violations, path, what)
