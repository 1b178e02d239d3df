"""Hardware exports of actuator curves, and readers for round trips.

Every writer checks the curves first (:func:`looprig.core.curves.all_violations`:
position, velocity and acceleration limits, plus the violations carried from a
resampled source; the Dynamixel formats add the motor's tick range) and
**refuses** to write when any limit is broken: it raises
:class:`~looprig.core.curves.LimitViolationError` listing them and leaves no
file behind. With ``allow_violations=True`` it writes the file and records
the violations in it (a JSON field, ``# violation:`` comment lines in CSV, a
comment block and ``*_VIOLATION_COUNT`` in a C header). Every writer returns
the violations it recorded. Files are written to a temporary name and renamed,
so a failed export never leaves a partial file.

Formats (all state their units inside the file):

``write_csv`` / ``read_csv`` (format ``looprig-curves-csv``, version 1)
    ``# key: <JSON value>`` comment lines (format, version, rate_hz, names,
    units, hardware_ids, lower, upper, velocity_limit, acceleration_limit,
    one ``# violation: {...}`` line per violation; ``null`` = no limit), then
    a header row ``time [s],<name> [rad],<name> [m],...`` and one row per
    frame in SI units, floats written with ``repr`` (exact round trip).

``write_json`` / ``read_json`` (format ``looprig-curves``, version 1)
    ``{"format", "version", "time_unit": "s", "rate_hz" (null if the times
    are not uniform), "frame_count", "times": [...], "actuators": [{"name",
    "unit", "velocity_unit", "acceleration_unit", "hardware_id", "lower",
    "upper", "velocity_limit", "acceleration_limit", "values": [...]}],
    "violations": [{"actuator", "quantity", "start_time", "end_time", "peak",
    "limit", "peak_time", "unit"}]}``; ``null`` = no limit.

``write_dynamixel_csv`` / ``write_dynamixel_json`` / ``read_dynamixel_*``
    Integer Goal Position ticks for ROBOTIS Dynamixel X-series servos
    (format ``looprig-dynamixel-ticks``, version 1); the conversion and the
    model assumptions are written in the file (see :class:`DynamixelSettings`).

``write_c_header`` / ``read_c_header``
    A C header for fixed-rate playback on a microcontroller: rate, frame
    count, one ``static const`` array per actuator (``int16_t``/``int32_t``
    ticks, or ``float`` SI values), optionally in AVR flash via
    ``LOOPRIG_USE_PROGMEM`` (see :class:`CHeaderSettings`).
"""

import csv
import io
import json
import math
import os
import re
import textwrap
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .curves import (
    ActuatorCurves,
    CurvesError,
    LimitCheckSettings,
    LimitViolationError,
    Violation,
    all_violations,
    derivative_unit,
    format_violations,
    merge_violations,
    violations_from_excess,
)
from .errors import did_you_mean

CURVES_CSV_FORMAT = "looprig-curves-csv"
CURVES_JSON_FORMAT = "looprig-curves"
TICKS_FORMAT = "looprig-dynamixel-ticks"
FORMAT_VERSION = 1

# ----------------------------------------------------------------------------- Dynamixel model
#: Encoder resolution of Dynamixel X-series servos [ticks/rev] (0.088 deg per tick).
DXL_TICKS_PER_REV = 4096
#: Velocity unit of Goal Velocity(104), Profile Velocity(112), Velocity Limit(44) [rev/min].
DXL_VELOCITY_UNIT_RPM = 0.229
#: The same unit in [rad/s].
DXL_VELOCITY_UNIT_RAD_S = DXL_VELOCITY_UNIT_RPM * 2.0 * math.pi / 60.0
#: Goal Position(116) range per Operating Mode(11): 3 = position, 4 = extended position.
DXL_TICK_RANGES = {"position": (0, 4095), "extended_position": (-1_048_575, 1_048_575)}
DXL_OPERATING_MODES = {"position": 3, "extended_position": 4}
DXL_GOAL_POSITION_ADDRESS = 116
DXL_SOURCE = (
    "ROBOTIS e-manual, Dynamixel X-series control table "
    "(https://emanual.robotis.com/docs/en/dxl/x/xm430-w350/): Goal Position(116), "
    "4096 ticks/rev (0.088 deg/tick), counter-clockwise (front view) increasing; "
    "Position Control Mode(3) 0..4095 within Min/Max Position Limit(52/48), "
    "Extended Position Control Mode(4) -1048575..1048575 (-256..256 rev); "
    "velocity unit 0.229 rev/min for Velocity Limit(44) and Profile Velocity(112)"
)
DXL_CONVERSION = (
    "ticks = zero_offset_ticks + direction * round(value * 4096 / P), "
    "P = 2 pi rad for angles or metres_per_revolution m for displacements"
)

#: No-load speed [rev/min] at 11.1 / 12.0 / 14.8 V (ROBOTIS e-manual model pages).
DXL_NO_LOAD_RPM = {
    "XM430-W350": (43.0, 46.0, 57.0),
    "XM430-W210": (70.0, 77.0, 95.0),
    "XH430-W350": (27.0, 30.0, 37.0),
    "XH430-W210": (46.0, 50.0, 62.0),
}
_DXL_VOLTAGES = (11.1, 12.0, 14.8)


def rad_s_to_dxl_velocity(velocity):
    """Angular velocity [rad/s] in Dynamixel velocity units (0.229 rev/min), as float."""
    return np.asarray(velocity, dtype=float) / DXL_VELOCITY_UNIT_RAD_S


def dxl_velocity_to_rad_s(units):
    """Dynamixel velocity units (0.229 rev/min) in [rad/s]."""
    return np.asarray(units, dtype=float) * DXL_VELOCITY_UNIT_RAD_S


def dynamixel_velocity_limit(model: str, supply_voltage: float = 12.0, derating: float = 0.8) -> float:
    """A velocity limit [rad/s] for an actuator: ``derating`` x no-load speed of ``model``.

    The no-load speed is interpolated linearly between the e-manual's 11.1,
    12.0 and 14.8 V figures (``DXL_NO_LOAD_RPM``); a servo under load runs
    slower, hence the derating (0 < derating <= 1).
    """
    key = model.upper()
    if key not in DXL_NO_LOAD_RPM:
        raise CurvesError(did_you_mean("Dynamixel model", model, DXL_NO_LOAD_RPM))
    if not _DXL_VOLTAGES[0] <= supply_voltage <= _DXL_VOLTAGES[-1]:
        raise CurvesError(
            f"Dynamixel {key}: supply voltage {supply_voltage} V outside the rated "
            f"{_DXL_VOLTAGES[0]}..{_DXL_VOLTAGES[-1]} V"
        )
    if not 0.0 < derating <= 1.0:
        raise CurvesError(f"derating must lie in (0, 1], got {derating}")
    rpm = float(np.interp(supply_voltage, _DXL_VOLTAGES, DXL_NO_LOAD_RPM[key]))
    return derating * rpm * 2.0 * math.pi / 60.0


@dataclass(frozen=True)
class DynamixelMotor:
    """How one actuator coordinate maps to a servo's Goal Position.

    zero_offset_ticks: tick value at actuator value 0 (default 2048, the
    centre of one turn). direction: +1 if the actuator's positive direction is
    the servo's counter-clockwise (increasing) direction, else -1.
    metres_per_revolution: for a displacement [m] actuator, the travel per
    servo turn (pinion circumference, lead-screw lead) [m/rev]; None for angles.
    """

    zero_offset_ticks: int = 2048
    direction: int = 1
    metres_per_revolution: float | None = None

    def __post_init__(self):
        if int(self.zero_offset_ticks) != self.zero_offset_ticks:
            raise CurvesError(f"zero_offset_ticks must be an integer, got {self.zero_offset_ticks}")
        object.__setattr__(self, "zero_offset_ticks", int(self.zero_offset_ticks))
        if self.direction not in (1, -1):
            raise CurvesError(f"direction must be +1 or -1, got {self.direction}")
        object.__setattr__(self, "direction", int(self.direction))
        mpr = self.metres_per_revolution
        if mpr is not None and not (np.isfinite(mpr) and mpr > 0):
            raise CurvesError(f"metres_per_revolution must be positive, got {mpr}")

    def ticks_per_unit(self, unit: str, actuator: str = "?") -> float:
        """Ticks per rad (``unit="rad"``) or per m (``unit="m"``)."""
        if unit == "rad":
            return DXL_TICKS_PER_REV / (2.0 * math.pi)
        if self.metres_per_revolution is None:
            raise CurvesError(
                f"actuator {actuator!r} moves in metres; give its DynamixelMotor a "
                "metres_per_revolution (travel per servo turn) to map it to ticks"
            )
        return DXL_TICKS_PER_REV / self.metres_per_revolution


@dataclass(frozen=True)
class DynamixelSettings:
    """Dynamixel X-series model assumptions for tick exports.

    mode: "position" (Operating Mode 3, one turn, ticks 0..4095) or
    "extended_position" (mode 4, multi-turn, -1048575..1048575).
    tick_range: (min, max) allowed ticks, e.g. the servo's Min/Max Position
    Limit(52/48); None for the mode's full range. Ticks outside it are a
    ``"tick_range"`` violation.
    motors: per-actuator :class:`DynamixelMotor` by actuator name; the others
    use ``default_motor``.
    """

    mode: str = "position"
    tick_range: tuple[int, int] | None = None
    motors: Mapping[str, DynamixelMotor] = field(default_factory=dict)
    default_motor: DynamixelMotor = field(default_factory=DynamixelMotor)

    def __post_init__(self):
        if self.mode not in DXL_TICK_RANGES:
            raise CurvesError(did_you_mean("Dynamixel mode", self.mode, DXL_TICK_RANGES))
        if self.tick_range is not None:
            lo, hi = (int(v) for v in self.tick_range)
            full = DXL_TICK_RANGES[self.mode]
            if not full[0] <= lo <= hi <= full[1]:
                raise CurvesError(f"tick_range {self.tick_range} must lie within {full} in {self.mode} mode")
            object.__setattr__(self, "tick_range", (lo, hi))

    @classmethod
    def from_mechanism(cls, mechanism, mode: str = "position", **options) -> "DynamixelSettings":
        """Settings whose motors take each actuator's zero offset, direction and travel
        per turn (:class:`~looprig.core.mechanism.Actuator`)."""
        motors = {
            j.name: DynamixelMotor(
                j.actuator.zero_offset_ticks, j.actuator.direction, j.actuator.metres_per_revolution
            )
            for j in mechanism.actuated_joints
        }
        return cls(mode=mode, motors=motors, **options)

    @property
    def ticks_range(self) -> tuple[int, int]:
        """(min, max) allowed Goal Position ticks."""
        return self.tick_range or DXL_TICK_RANGES[self.mode]

    def motors_for(self, names: Sequence[str]) -> tuple[DynamixelMotor, ...]:
        """The motor of each actuator in ``names``; unknown keys in ``motors`` raise."""
        for key in self.motors:
            if key not in names:
                raise CurvesError("Dynamixel motor settings: " + did_you_mean("actuator", key, names))
        return tuple(self.motors.get(n, self.default_motor) for n in names)


def values_to_ticks(
    values: np.ndarray,
    units: Sequence[str],
    motors: Sequence[DynamixelMotor],
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """(F, A) int64 Goal Position ticks of (F, A) values [rad or m], rounded to nearest.

    ``ticks = zero_offset_ticks + direction * rint(value * ticks_per_unit)``,
    so :func:`ticks_to_values` inverts it within half a tick.
    """
    values = np.asarray(values, dtype=float)
    names = names or [f"#{a}" for a in range(values.shape[1])]
    scale = np.array([m.ticks_per_unit(u, n) for m, u, n in zip(motors, units, names, strict=True)])
    zero = np.array([m.zero_offset_ticks for m in motors], dtype=np.int64)
    sign = np.array([m.direction for m in motors], dtype=np.int64)
    return zero + sign * np.rint(values * scale).astype(np.int64)


def ticks_to_values(
    ticks: np.ndarray,
    units: Sequence[str],
    motors: Sequence[DynamixelMotor],
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """(F, A) values [rad or m] of (F, A) Goal Position ticks; inverts :func:`values_to_ticks`."""
    ticks = np.asarray(ticks)
    names = names or [f"#{a}" for a in range(ticks.shape[1])]
    scale = np.array([m.ticks_per_unit(u, n) for m, u, n in zip(motors, units, names, strict=True)])
    zero = np.array([m.zero_offset_ticks for m in motors], dtype=float)
    sign = np.array([m.direction for m in motors], dtype=float)
    return sign * (ticks - zero) / scale


def to_ticks(curves: ActuatorCurves, settings: DynamixelSettings | None = None) -> np.ndarray:
    """(F, A) int64 Goal Position ticks of ``curves`` (see :func:`values_to_ticks`)."""
    settings = settings or DynamixelSettings()
    motors = settings.motors_for(curves.names)
    return values_to_ticks(curves.values, curves.units, motors, curves.names)


def tick_range_violations(
    curves: ActuatorCurves, ticks: np.ndarray, settings: DynamixelSettings
) -> list[Violation]:
    """``"tick_range"`` violations (unit "tick") of (F, A) ``ticks`` against the allowed range."""
    lo, hi = settings.ticks_range
    out: list[Violation] = []
    for a, name in enumerate(curves.names):
        k = ticks[:, a].astype(float)
        over, under = k - hi, lo - k
        excess = np.maximum(over, under)
        limits = np.where(over >= under, float(hi), float(lo))
        out += violations_from_excess(name, "tick_range", curves.times, k, excess, limits, "tick")
    return out


def _velocity_raw(curves: ActuatorCurves, motors: Sequence[DynamixelMotor]) -> tuple[list, list]:
    """Per actuator: velocity limit (floor) and peak |velocity| (ceil) in 0.229 rpm units."""
    peaks = np.max(np.abs(curves.velocities()), axis=0) if curves.n_frames > 1 else None
    limit_raw, peak_raw = [], []
    for a, name in enumerate(curves.names):
        # servo shaft rad per actuator unit (1 for angles, 2 pi / metres_per_revolution for m)
        rad_per_unit = motors[a].ticks_per_unit(curves.units[a], name) * (2.0 * math.pi / DXL_TICKS_PER_REV)
        limit = curves.velocity_limit[a]
        limit_raw.append(
            math.floor(rad_s_to_dxl_velocity(limit * rad_per_unit)) if np.isfinite(limit) else None
        )
        peak_raw.append(
            None if peaks is None else math.ceil(rad_s_to_dxl_velocity(peaks[a] * rad_per_unit) - 1e-9)
        )
    return limit_raw, peak_raw


# ----------------------------------------------------------------------------- helpers
def _finite_or_none(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _limit_from(x, default: float) -> float:
    return default if x is None else float(x)


def _plain_id(hardware_id):
    if isinstance(hardware_id, np.integer):
        return int(hardware_id)
    return hardware_id


def _gate(
    path,
    curves: ActuatorCurves,
    allow_violations: bool,
    check: LimitCheckSettings | None,
    extra: Sequence[Violation] = (),
) -> list[Violation]:
    """All violations to record, or :class:`LimitViolationError` (nothing written)."""
    violations = merge_violations(all_violations(curves, check), extra, order=curves.names)
    if violations and not allow_violations:
        raise LimitViolationError(
            f"refusing to write {os.fspath(path)!r}: the curves break {len(violations)} "
            f"actuator limit(s) (pass allow_violations=True to write them anyway, with the "
            f"violations recorded in the file):\n{format_violations(violations)}",
            violations,
        )
    return violations


def _write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read_text(path, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CurvesError(f"cannot read {what} {os.fspath(path)!r}: {exc}") from None


def _meta_lines(meta: Mapping, violations: Sequence[Violation]) -> list[str]:
    lines = [f"# {key}: {json.dumps(value, allow_nan=False)}" for key, value in meta.items()]
    lines += [f"# violation: {json.dumps(v.to_dict(), allow_nan=False)}" for v in violations]
    return lines


def _parse_commented_csv(path, what: str) -> tuple[dict, list[Violation], list[str], list[list]]:
    """(metadata, violations, header, rows) of a CSV with ``# key: JSON`` lines."""
    text = _read_text(path, what)
    meta: dict = {}
    violations: list[Violation] = []
    body = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            key, sep, value = line[1:].strip().partition(":")
            if not sep:
                continue  # free-text comment
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as exc:
                raise CurvesError(
                    f"{what} {os.fspath(path)!r} line {number}: {key.strip()!r} is not JSON: {exc}"
                ) from None
            if key.strip() == "violation":
                violations.append(Violation.from_dict(parsed))
            else:
                meta[key.strip()] = parsed
        elif line.strip():
            body.append(line)
    rows = list(csv.reader(body))
    if not rows:
        raise CurvesError(f"{what} {os.fspath(path)!r} has no header row")
    return meta, violations, rows[0], rows[1:]


_HEADER_CELL = re.compile(r"^(?P<name>.*\S)\s*\[(?P<unit>[^\]]+)\]$")


def _split_header(path, header: Sequence[str], what: str) -> tuple[list[str], list[str]]:
    names, units = [], []
    for i, cell in enumerate(header):
        m = _HEADER_CELL.match(cell.strip())
        if not m:
            raise CurvesError(
                f"{what} {os.fspath(path)!r}: header column {i + 1} {cell!r} should read '<name> [<unit>]'"
            )
        names.append(m["name"])
        units.append(m["unit"])
    if not names or names[0] != "time" or units[0] != "s":
        raise CurvesError(f"{what} {os.fspath(path)!r}: first column must be 'time [s]'")
    return names[1:], units[1:]


def _table(path, rows, n_columns: int, what: str, dtype=float) -> np.ndarray:
    try:
        table = np.array([[dtype(cell) for cell in row] for row in rows if row], dtype=float).reshape(
            -1, n_columns
        )
    except ValueError as exc:
        raise CurvesError(f"{what} {os.fspath(path)!r}: bad number or row length: {exc}") from None
    if table.shape[0] == 0:
        raise CurvesError(f"{what} {os.fspath(path)!r} has no frames")
    return table


def _meta_list(meta: Mapping, key: str, n: int, default, path, what: str) -> list:
    value = meta.get(key)
    if value is None:
        return [default] * n
    if not isinstance(value, list) or len(value) != n:
        raise CurvesError(f"{what} {os.fspath(path)!r}: {key!r} must list {n} values")
    return value


def _check_format(meta: Mapping, expected: str, where: str) -> None:
    """Raise unless ``meta`` names format ``expected`` (or none) and a readable version."""
    fmt, version = meta.get("format"), meta.get("version")
    if fmt is not None and fmt != expected:
        raise CurvesError(f"{where}: format is {fmt!r}, expected {expected!r}")
    if version is not None and version != FORMAT_VERSION:
        raise CurvesError(
            f"{where}: version {version} is not supported (this looprig reads version {FORMAT_VERSION})"
        )


# ----------------------------------------------------------------------------- CSV (SI)
def write_csv(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write ``curves`` as CSV in SI units (format ``looprig-curves-csv``); see the module doc."""
    violations = _gate(path, curves, allow_violations, check)
    meta = {
        "format": CURVES_CSV_FORMAT,
        "version": FORMAT_VERSION,
        "rate_hz": curves.rate_hz,
        "names": list(curves.names),
        "units": list(curves.units),
        "hardware_ids": [_plain_id(h) for h in curves.hardware_ids],
        "lower": [_finite_or_none(x) for x in curves.lower],
        "upper": [_finite_or_none(x) for x in curves.upper],
        "velocity_limit": [_finite_or_none(x) for x in curves.velocity_limit],
        "acceleration_limit": [_finite_or_none(x) for x in curves.acceleration_limit],
        "limit_units": "lower/upper in each unit, velocity_limit per s, "
        "acceleration_limit per s^2; null = no limit",
        "violation_count": len(violations),
    }
    out = io.StringIO()
    out.write("\n".join(_meta_lines(meta, violations)) + "\n")
    writer = csv.writer(out, lineterminator="\n")
    columns = (f"{n} [{u}]" for n, u in zip(curves.names, curves.units, strict=True))
    writer.writerow(["time [s]", *columns])
    for t, row in zip(curves.times, curves.values, strict=True):
        writer.writerow([repr(float(t)), *(repr(float(x)) for x in row)])
    _write_atomic(path, out.getvalue())
    return violations


def read_csv(path) -> ActuatorCurves:
    """Curves from a CSV written by :func:`write_csv` (or any ``time [s],name [unit]`` CSV).

    Recorded violations become the curves' ``carried_violations``; missing
    limits are taken as none.
    """
    what = "curves CSV"
    meta, violations, header, rows = _parse_commented_csv(path, what)
    _check_format(meta, CURVES_CSV_FORMAT, f"{what} {os.fspath(path)!r}")
    names, units = _split_header(path, header, what)
    table = _table(path, rows, len(names) + 1, what)
    n = len(names)
    return ActuatorCurves(
        times=table[:, 0],
        values=table[:, 1:],
        names=tuple(names),
        units=tuple(units),
        lower=[_limit_from(x, -np.inf) for x in _meta_list(meta, "lower", n, None, path, what)],
        upper=[_limit_from(x, np.inf) for x in _meta_list(meta, "upper", n, None, path, what)],
        velocity_limit=[
            _limit_from(x, np.inf) for x in _meta_list(meta, "velocity_limit", n, None, path, what)
        ],
        acceleration_limit=[
            _limit_from(x, np.inf) for x in _meta_list(meta, "acceleration_limit", n, None, path, what)
        ],
        hardware_ids=tuple(_meta_list(meta, "hardware_ids", n, None, path, what)),
        carried_violations=tuple(violations),
    )


# ----------------------------------------------------------------------------- JSON (SI)
def curves_to_dict(curves: ActuatorCurves, violations: Sequence[Violation] = ()) -> dict:
    """The ``looprig-curves`` version 1 document of ``curves`` (JSON-ready)."""
    actuators = []
    for a, name in enumerate(curves.names):
        unit = curves.units[a]
        actuators.append(
            {
                "name": name,
                "unit": unit,
                "velocity_unit": derivative_unit(unit, 1),
                "acceleration_unit": derivative_unit(unit, 2),
                "hardware_id": _plain_id(curves.hardware_ids[a]),
                "lower": _finite_or_none(curves.lower[a]),
                "upper": _finite_or_none(curves.upper[a]),
                "velocity_limit": _finite_or_none(curves.velocity_limit[a]),
                "acceleration_limit": _finite_or_none(curves.acceleration_limit[a]),
                "values": [float(x) for x in curves.values[:, a]],
            }
        )
    return {
        "format": CURVES_JSON_FORMAT,
        "version": FORMAT_VERSION,
        "time_unit": "s",
        "rate_hz": curves.rate_hz,
        "frame_count": curves.n_frames,
        "times": [float(t) for t in curves.times],
        "actuators": actuators,
        "violations": [v.to_dict() for v in violations],
    }


def curves_from_dict(doc: Mapping, what: str = "curves document") -> ActuatorCurves:
    """Curves from a ``looprig-curves`` document; its violations become carried ones."""
    if not isinstance(doc, Mapping):
        raise CurvesError(f"{what}: expected a JSON object")
    _check_format(doc, CURVES_JSON_FORMAT, what)
    try:
        acts = doc["actuators"]
        return ActuatorCurves(
            times=doc["times"],
            values=np.array([a["values"] for a in acts], dtype=float).T.reshape(len(doc["times"]), len(acts)),
            names=tuple(a["name"] for a in acts),
            units=tuple(a["unit"] for a in acts),
            lower=[_limit_from(a.get("lower"), -np.inf) for a in acts],
            upper=[_limit_from(a.get("upper"), np.inf) for a in acts],
            velocity_limit=[_limit_from(a.get("velocity_limit"), np.inf) for a in acts],
            acceleration_limit=[_limit_from(a.get("acceleration_limit"), np.inf) for a in acts],
            hardware_ids=tuple(a.get("hardware_id") for a in acts),
            carried_violations=tuple(Violation.from_dict(v) for v in doc.get("violations", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CurvesError):
            raise
        raise CurvesError(f"{what}: missing or malformed field: {exc!r}") from None


def write_json(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write ``curves`` as JSON (format ``looprig-curves`` version 1); see the module doc."""
    violations = _gate(path, curves, allow_violations, check)
    text = json.dumps(curves_to_dict(curves, violations), indent=1, allow_nan=False)
    _write_atomic(path, text + "\n")
    return violations


def read_json(path) -> ActuatorCurves:
    """Curves from a file written by :func:`write_json`."""
    what = f"curves JSON {os.fspath(path)!r}"
    try:
        doc = json.loads(_read_text(path, "curves JSON"))
    except json.JSONDecodeError as exc:
        raise CurvesError(f"{what} is not valid JSON: {exc}") from None
    return curves_from_dict(doc, what)


# ----------------------------------------------------------------------------- Dynamixel ticks
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


def _ticks_meta(
    curves: ActuatorCurves, settings: DynamixelSettings, motors: Sequence[DynamixelMotor]
) -> dict:
    limit_raw, peak_raw = _velocity_raw(curves, motors)
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
        "hardware_ids": [_plain_id(h) for h in curves.hardware_ids],
        "units": list(curves.units),
        "zero_offset_ticks": [m.zero_offset_ticks for m in motors],
        "direction": [m.direction for m in motors],
        "metres_per_revolution": [m.metres_per_revolution for m in motors],
        "lower": [_finite_or_none(x) for x in curves.lower],
        "upper": [_finite_or_none(x) for x in curves.upper],
        "velocity_limit": [_finite_or_none(x) for x in curves.velocity_limit],
        "acceleration_limit": [_finite_or_none(x) for x in curves.acceleration_limit],
        "velocity_unit_rpm": DXL_VELOCITY_UNIT_RPM,
        "velocity_limit_raw": limit_raw,
        "peak_velocity_raw": peak_raw,
    }


def _ticks_gate(path, curves, settings, allow_violations, check):
    settings = settings or DynamixelSettings()
    motors = settings.motors_for(curves.names)
    ticks = values_to_ticks(curves.values, curves.units, motors, curves.names)
    extra = tick_range_violations(curves, ticks, settings)
    violations = _gate(path, curves, allow_violations, check, extra)
    return settings, motors, ticks, violations


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
    settings, motors, ticks, violations = _ticks_gate(path, curves, settings, allow_violations, check)
    meta = _ticks_meta(curves, settings, motors)
    meta["violation_count"] = len(violations)
    out = io.StringIO()
    out.write("\n".join(_meta_lines(meta, violations)) + "\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["time [s]", *(f"{n} [tick]" for n in curves.names)])
    for t, row in zip(curves.times, ticks, strict=True):
        writer.writerow([repr(float(t)), *(str(int(k)) for k in row)])
    _write_atomic(path, out.getvalue())
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
    settings, motors, ticks, violations = _ticks_gate(path, curves, settings, allow_violations, check)
    doc = _ticks_meta(curves, settings, motors)
    doc["frame_count"] = curves.n_frames
    doc["times"] = [float(t) for t in curves.times]
    doc["ticks"] = [[int(k) for k in ticks[:, a]] for a in range(curves.n_actuators)]
    doc["violations"] = [v.to_dict() for v in violations]
    _write_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return violations


def _ticks_from_meta(meta: Mapping, times, ticks, names, path, what: str) -> TickCurves:
    n = len(names)
    if meta.get("names") is not None and list(meta["names"]) != list(names):
        raise CurvesError(f"{what} {os.fspath(path)!r}: column names disagree with 'names'")
    zero = _meta_list(meta, "zero_offset_ticks", n, 2048, path, what)
    sign = _meta_list(meta, "direction", n, 1, path, what)
    mpr = _meta_list(meta, "metres_per_revolution", n, None, path, what)
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
        units=tuple(_meta_list(meta, "units", n, "rad", path, what)),
        hardware_ids=tuple(_meta_list(meta, "hardware_ids", n, None, path, what)),
        settings=settings,
        lower=np.array([_limit_from(x, -np.inf) for x in _meta_list(meta, "lower", n, None, path, what)]),
        upper=np.array([_limit_from(x, np.inf) for x in _meta_list(meta, "upper", n, None, path, what)]),
        velocity_limit=np.array(
            [_limit_from(x, np.inf) for x in _meta_list(meta, "velocity_limit", n, None, path, what)]
        ),
        acceleration_limit=np.array(
            [_limit_from(x, np.inf) for x in _meta_list(meta, "acceleration_limit", n, None, path, what)]
        ),
    )


def read_dynamixel_csv(path) -> TickCurves:
    """Ticks from a CSV written by :func:`write_dynamixel_csv`."""
    what = "Dynamixel ticks CSV"
    meta, violations, header, rows = _parse_commented_csv(path, what)
    _check_format(meta, TICKS_FORMAT, f"{what} {os.fspath(path)!r}")
    names, units = _split_header(path, header, what)
    if any(u != "tick" for u in units):
        raise CurvesError(f"{what} {os.fspath(path)!r}: actuator columns must be in [tick]")
    table = _table(path, rows, len(names) + 1, what)
    ticks = table[:, 1:]
    if not np.all(ticks == np.round(ticks)):
        raise CurvesError(f"{what} {os.fspath(path)!r}: ticks must be integers")
    out = _ticks_from_meta(meta, table[:, 0], ticks, names, path, what)
    return _with_violations(out, violations)


def read_dynamixel_json(path) -> TickCurves:
    """Ticks from a file written by :func:`write_dynamixel_json`."""
    what = "Dynamixel ticks JSON"
    try:
        doc = json.loads(_read_text(path, what))
    except json.JSONDecodeError as exc:
        raise CurvesError(f"{what} {os.fspath(path)!r} is not valid JSON: {exc}") from None
    _check_format(doc, TICKS_FORMAT, f"{what} {os.fspath(path)!r}")
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


# ----------------------------------------------------------------------------- C header
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class CHeaderSettings:
    """How :func:`write_c_header` lays out the header.

    kind: "ticks" (Dynamixel Goal Position ticks as ``int16_t``, or ``int32_t``
    when a value does not fit, mapped by ``dynamixel``) or "float" (``float``
    arrays in SI units, rad or m; single precision).
    prefix: C identifier prefix of every macro (upper case) and array.
    source: free text naming where the curves come from (scene, clip, file).
    values_per_line: array values per source line.
    """

    kind: str = "ticks"
    prefix: str = "looprig"
    dynamixel: DynamixelSettings = field(default_factory=DynamixelSettings)
    source: str = ""
    values_per_line: int = 12

    def __post_init__(self):
        if self.kind not in ("ticks", "float"):
            raise CurvesError(did_you_mean("C header kind", self.kind, ("ticks", "float")))
        if not _IDENTIFIER.match(self.prefix):
            raise CurvesError(f"C header prefix {self.prefix!r} is not a C identifier")
        if self.values_per_line < 1:
            raise CurvesError("values_per_line must be at least 1")


def c_array_names(names: Sequence[str], prefix: str) -> list[str]:
    """C identifiers ``<prefix>_<name>`` (non-identifier characters become ``_``)."""
    out = [f"{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', n)}" for n in names]
    seen: dict[str, str] = {}
    for name, ident in zip(names, out, strict=True):
        if ident in seen:
            raise CurvesError(
                f"actuators {seen[ident]!r} and {name!r} both become the C identifier {ident!r}; rename one"
            )
        seen[ident] = name
    return out


def _c_float(x: float) -> str:
    text = f"{float(np.float32(x)):.9g}"
    if not any(c in text for c in ".en"):
        text += ".0"
    return text + "f"


def _c_comment(text: str) -> str:
    return text.replace("*/", "* /")


def write_c_header(
    curves: ActuatorCurves,
    path,
    settings: CHeaderSettings | None = None,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write a C header with fixed-rate ``static const`` arrays for playback.

    The curves must be uniformly sampled (see :func:`~looprig.core.curves.resample`).
    Macros ``<P>_RATE_HZ``, ``<P>_FRAME_PERIOD_US``, ``<P>_FRAME_COUNT``,
    ``<P>_ACTUATOR_COUNT``, ``<P>_VIOLATION_COUNT`` (``<P>`` = upper-case
    prefix); arrays ``<prefix>_<actuator>[<P>_FRAME_COUNT]``, a table
    ``<prefix>_tracks`` of them, ``<prefix>_names`` and (if all hardware ids
    are integers) ``<prefix>_hardware_ids``. Define ``LOOPRIG_USE_PROGMEM``
    before including it to place the value arrays in AVR flash
    (``LOOPRIG_PROGMEM``); read them with ``pgm_read_word``/``pgm_read_dword``/
    ``pgm_read_float`` then.
    """
    settings = settings or CHeaderSettings()
    rate = curves.rate_hz
    if rate is None:
        raise CurvesError(
            "a C header plays frames at a fixed rate, but these curves are not uniformly "
            "sampled; resample them first (looprig.core.curves.resample)"
        )
    idents = c_array_names(curves.names, settings.prefix)
    P = settings.prefix.upper()
    lines_info = []
    if settings.kind == "ticks":
        dxl, motors, data, violations = _ticks_gate(path, curves, settings.dynamixel, allow_violations, check)
        limit_raw, _ = _velocity_raw(curves, motors)
        fits16 = data.min() >= -(2**15) and data.max() < 2**15
        ctype = "int16_t" if fits16 else "int32_t"
        cells = [[str(int(k)) for k in data[:, a]] for a in range(curves.n_actuators)]
        lo, hi = dxl.ticks_range
        values_doc = [
            "Values: Dynamixel X-series Goal Position(116) ticks, " + DXL_CONVERSION + ".",
            f"Mode: {dxl.mode} (Operating Mode {DXL_OPERATING_MODES[dxl.mode]}), allowed ticks {lo}..{hi}.",
            "Model: " + DXL_SOURCE + ".",
        ]
        for a, name in enumerate(curves.names):
            m = motors[a]
            travel = f", {m.metres_per_revolution} m/rev" if m.metres_per_revolution is not None else ""
            vel_unit = derivative_unit(curves.units[a], 1)
            vel = (
                f"velocity limit {curves.velocity_limit[a]:.6g} {vel_unit} = {limit_raw[a]} x 0.229 rev/min"
                if limit_raw[a] is not None
                else "no velocity limit"
            )
            lines_info.append(
                f"{idents[a]}: {name} [{curves.units[a]}], hardware id "
                f"{_plain_id(curves.hardware_ids[a])}, zero {m.zero_offset_ticks} tick, "
                f"direction {m.direction:+d}{travel}, {vel}"
            )
    else:
        violations = _gate(path, curves, allow_violations, check)
        ctype = "float"
        cells = [[_c_float(x) for x in curves.values[:, a]] for a in range(curves.n_actuators)]
        values_doc = ["Values: actuator coordinates in SI units (rad or m), single precision."]
        for a, name in enumerate(curves.names):
            unit = curves.units[a]
            vel = curves.velocity_limit[a]
            vel_text = (
                f"velocity limit {vel:.6g} {derivative_unit(unit, 1)}"
                if np.isfinite(vel)
                else "no velocity limit"
            )
            lines_info.append(
                f"{idents[a]}: {name} [{unit}], hardware id {_plain_id(curves.hardware_ids[a])}, {vel_text}"
            )

    rate_literal = str(int(rate)) if float(rate).is_integer() else repr(float(rate))
    comment = [
        "looprig actuator curves for fixed-rate playback (generated file; do not edit).",
        *([f"Source: {settings.source}"] if settings.source else []),
        f"Rate: {rate_literal} Hz (one frame every {1e3 / rate:.6g} ms), "
        f"{curves.n_frames} frames, {curves.duration:.6g} s, {curves.n_actuators} actuator(s); "
        f"frame k plays at t = {float(curves.times[0]):.6g} s + k / rate.",
        *values_doc,
        "Arrays (C name: actuator [source unit], ...):",
        *("  " + line for line in lines_info),
    ]
    if violations:
        comment.append(f"LIMIT VIOLATIONS ({len(violations)}), written on request (allow_violations):")
        comment += ["  " + v.describe() for v in violations]
    else:
        comment.append("Limit violations: none.")
    comment += [
        "Define LOOPRIG_USE_PROGMEM before including this file to keep the value arrays in",
        "AVR flash; read them with pgm_read_word / pgm_read_dword / pgm_read_float.",
    ]
    guard = f"{P}_CURVES_H"
    out = ["/*"]
    for line in comment:
        indent = " " * (len(line) - len(line.lstrip()))
        wrapped = textwrap.wrap(
            line,
            width=96,
            initial_indent=" * ",
            subsequent_indent=" * " + indent + "    ",
            break_on_hyphens=False,
        )
        out += [_c_comment(w) for w in wrapped]
    out += [
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        "#ifndef LOOPRIG_PROGMEM",
        "#if defined(LOOPRIG_USE_PROGMEM)",
        "#include <avr/pgmspace.h>",
        "#define LOOPRIG_PROGMEM PROGMEM",
        "#else",
        "#define LOOPRIG_PROGMEM",
        "#endif",
        "#endif",
        "",
        f"#define {P}_RATE_HZ {rate_literal}",
        f"#define {P}_FRAME_PERIOD_US {round(1e6 / rate)}",
        f"#define {P}_FRAME_COUNT {curves.n_frames}",
        f"#define {P}_ACTUATOR_COUNT {curves.n_actuators}",
        f"#define {P}_VIOLATION_COUNT {len(violations)}",
        "",
    ]
    step = settings.values_per_line
    for a, ident in enumerate(idents):
        out.append(f"/* {_c_comment(curves.names[a])} */")
        out.append(f"static const {ctype} {ident}[{P}_FRAME_COUNT] LOOPRIG_PROGMEM = {{")
        row = cells[a]
        for i in range(0, len(row), step):
            out.append("    " + ", ".join(row[i : i + step]) + ",")
        out.append("};")
        out.append("")
    out.append(f"static const {ctype} *const {settings.prefix}_tracks[{P}_ACTUATOR_COUNT] = {{")
    out.append("    " + ", ".join(idents) + ",")
    out.append("};")
    names_c = ", ".join(json.dumps(n) for n in curves.names)
    out.append(f"static const char *const {settings.prefix}_names[{P}_ACTUATOR_COUNT] = {{")
    out.append(f"    {names_c},")
    out.append("};")
    ids = [_plain_id(h) for h in curves.hardware_ids]
    if all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
        out.append(f"static const int32_t {settings.prefix}_hardware_ids[{P}_ACTUATOR_COUNT] = {{")
        out.append("    " + ", ".join(str(h) for h in ids) + ",")
        out.append("};")
    out += ["", f"#endif /* {guard} */", ""]
    _write_atomic(path, "\n".join(out))
    return violations


@dataclass(frozen=True, eq=False)
class CHeaderCurves:
    """Arrays parsed back from a header written by :func:`write_c_header`.

    rate_hz [Hz]; names: (A,); ctype: "int16_t", "int32_t" or "float";
    values: (F, A) ticks or SI values as written (float64); violation_count.
    """

    rate_hz: float
    names: tuple[str, ...]
    ctype: str
    values: np.ndarray
    violation_count: int


_C_ARRAY = re.compile(
    r"static const (?P<ctype>int16_t|int32_t|float) (?P<ident>\w+)\[\w+\] LOOPRIG_PROGMEM = "
    r"\{(?P<body>[^}]*)\};"
)


def read_c_header(path, prefix: str = "looprig") -> CHeaderCurves:
    """Parse the rate, names and value arrays of a header written by :func:`write_c_header`."""
    text = _read_text(path, "C header")
    P = prefix.upper()

    def define(name: str) -> str:
        m = re.search(rf"^#define {P}_{name} (\S+)$", text, re.MULTILINE)
        if not m:
            raise CurvesError(f"C header {os.fspath(path)!r}: no {P}_{name} macro")
        return m[1]

    names_m = re.search(rf"{prefix}_names\[\w+\] = \{{\s*(.*?),\s*\}};", text, re.DOTALL)
    if not names_m:
        raise CurvesError(f"C header {os.fspath(path)!r}: no {prefix}_names table")
    names = tuple(json.loads(f"[{names_m[1]}]"))
    arrays = {m["ident"]: m for m in _C_ARRAY.finditer(text)}
    columns, ctypes = [], set()
    for ident in c_array_names(names, prefix):
        if ident not in arrays:
            raise CurvesError(f"C header {os.fspath(path)!r}: no array {ident}")
        body = arrays[ident]["body"].replace("f", "")
        columns.append([float(x) for x in body.replace("\n", " ").split(",") if x.strip()])
        ctypes.add(arrays[ident]["ctype"])
    return CHeaderCurves(
        rate_hz=float(define("RATE_HZ")),
        names=names,
        ctype=ctypes.pop(),
        values=np.array(columns, dtype=float).T.reshape(int(define("FRAME_COUNT")), len(names)),
        violation_count=int(define("VIOLATION_COUNT")),
    )
