"""Dynamixel Goal Position ticks as CSV or JSON (format ``looprig-dynamixel-ticks``, version 1).

Integer ticks for ROBOTIS Dynamixel X-series servos; the conversion and the
model assumptions are written in the file (see
:class:`~looprig.core.export.dynamixel.DynamixelSettings`).
"""

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..curves import ActuatorCurves, CurvesError, LimitCheckSettings, Violation
from .common import (
    FORMAT_VERSION,
    check_format,
    finite_or_none,
    limit_from,
    meta_lines,
    meta_list,
    number_table,
    parse_commented_csv,
    plain_id,
    read_text,
    split_header,
)
from .dynamixel import (
    DXL_CONVERSION,
    DXL_GOAL_POSITION_ADDRESS,
    DXL_OPERATING_MODES,
    DXL_SOURCE,
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
        "lower": [finite_or_none(x) for x in curves.lower],
        "upper": [finite_or_none(x) for x in curves.upper],
        "velocity_limit": [finite_or_none(x) for x in curves.velocity_limit],
        "acceleration_limit": [finite_or_none(x) for x in curves.acceleration_limit],
        "velocity_unit_rpm": DXL_VELOCITY_UNIT_RPM,
        "velocity_limit_raw": limit_raw,
        "peak_velocity_raw": peak_raw,
    }


def write_dynamixel_csv(
    curves: ActuatorCurves,
    path,
    settings: DynamixelSettings | None = None,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write integer Goal Position ticks as CSV: ``# key: JSON`` lines with the model
    assumptions, then ``time [s],<name> [tick],...`` rows."""
    settings, motors, ticks, violations = ticks_gate(path, curves, settings, allow_violations, check)
    meta = ticks_meta(curves, settings, motors)
    meta["violation_count"] = len(violations)
    out = io.StringIO()
    out.write("\n".join(meta_lines(meta, violations)) + "\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["time [s]", *(f"{n} [tick]" for n in curves.names)])
    for t, row in zip(curves.times, ticks, strict=True):
        writer.writerow([repr(float(t)), *(str(int(k)) for k in row)])
    write_text(path, out.getvalue())
    return violations


def write_dynamixel_json(
    curves: ActuatorCurves,
    path,
    settings: DynamixelSettings | None = None,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write integer Goal Position ticks as JSON (format ``looprig-dynamixel-ticks`` v1).

    The document holds the model assumptions (``model``, ``conversion``,
    ``mode``, ``tick_range``...), ``rate_hz``, ``times`` [s], per-actuator lists
    (``names``, ``hardware_ids``, ``zero_offset_ticks``...), ``ticks`` as one
    list per actuator, and ``violations``.
    """
    settings, motors, ticks, violations = ticks_gate(path, curves, settings, allow_violations, check)
    doc = ticks_meta(curves, settings, motors)
    doc["frame_count"] = curves.n_frames
    doc["times"] = [float(t) for t in curves.times]
    doc["ticks"] = [[int(k) for k in ticks[:, a]] for a in range(curves.n_actuators)]
    doc["violations"] = [v.to_dict() for v in violations]
    write_text(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return violations


def _ticks_from_meta(meta: Mapping, times, ticks, names, path, what: str) -> TickCurves:
    n = len(names)
    if meta.get("names") is not None and list(meta["names"]) != list(names):
        raise CurvesError(f"{what} {os.fspath(path)!r}: column names disagree with 'names'")
    zero = meta_list(meta, "zero_offset_ticks", n, 2048, path, what)
    sign = meta_list(meta, "direction", n, 1, path, what)
    mpr = meta_list(meta, "metres_per_revolution", n, None, path, what)
    motors = {
        name: DynamixelMotor(int(z), int(s), None if m is None else float(m))
        for name, z, s, m in zip(names, zero, sign, mpr, strict=True)
    }
    tick_range = meta.get("tick_range")
    settings = DynamixelSettings(
        mode=meta.get("mode", "position"),
        tick_range=None if tick_range is None else tuple(tick_range),
        motors=motors,
    )
    return TickCurves(
        times=np.asarray(times, dtype=float),
        ticks=np.asarray(ticks, dtype=np.int64).reshape(len(times), n),
        names=tuple(names),
        units=tuple(meta_list(meta, "units", n, "rad", path, what)),
        hardware_ids=tuple(meta_list(meta, "hardware_ids", n, None, path, what)),
        settings=settings,
        lower=np.array([limit_from(x, -np.inf) for x in meta_list(meta, "lower", n, None, path, what)]),
        upper=np.array([limit_from(x, np.inf) for x in meta_list(meta, "upper", n, None, path, what)]),
        velocity_limit=np.array(
            [limit_from(x, np.inf) for x in meta_list(meta, "velocity_limit", n, None, path, what)]
        ),
        acceleration_limit=np.array(
            [limit_from(x, np.inf) for x in meta_list(meta, "acceleration_limit", n, None, path, what)]
        ),
    )


def read_dynamixel_csv(path) -> TickCurves:
    """Ticks from a CSV written by :func:`write_dynamixel_csv`."""
    what = "Dynamixel ticks CSV"
    meta, violations, header, rows = parse_commented_csv(path, what)
    check_format(meta, TICKS_FORMAT, f"{what} {os.fspath(path)!r}")
    names, units = split_header(path, header, what)
    if any(u != "tick" for u in units):
        raise CurvesError(f"{what} {os.fspath(path)!r}: actuator columns must be in [tick]")
    table = number_table(path, rows, len(names) + 1, what)
    ticks = table[:, 1:]
    if not np.all(ticks == np.round(ticks)):
        raise CurvesError(f"{what} {os.fspath(path)!r}: ticks must be integers")
    out = _ticks_from_meta(meta, table[:, 0], ticks, names, path, what)
    return _with_violations(out, violations)


def read_dynamixel_json(path) -> TickCurves:
    """Ticks from a file written by :func:`write_dynamixel_json`."""
    what = "Dynamixel ticks JSON"
    try:
        doc = json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise CurvesError(f"{what} {os.fspath(path)!r} is not valid JSON: {exc}") from None
    check_format(doc, TICKS_FORMAT, f"{what} {os.fspath(path)!r}")
    try:
        names = list(doc["names"])
        ticks = np.array(doc["ticks"], dtype=np.int64).T
        out = _ticks_from_meta(doc, doc["times"], ticks, names, path, what)
        violations = [Violation.from_dict(v) for v in doc.get("violations", [])]
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CurvesError):
            raise
        raise CurvesError(f"{what} {os.fspath(path)!r}: missing or malformed field: {exc!r}") from None
    return _with_violations(out, violations)


def _with_violations(ticks: TickCurves, violations: Sequence[Violation]) -> TickCurves:
    return TickCurves(**{**ticks.__dict__, "violations": tuple(violations)})
