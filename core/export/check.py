"""Any file a looprig writer wrote, read back and checked against its limits.

:func:`read_written` reads a curves CSV (with comment lines, or plain with its
side file), a curves JSON, a Dynamixel ticks CSV or JSON, or a C header, by its
suffix and the format it names, into SI curves carrying the violations the file
records. :func:`written_violations` lists what the file breaks: the recorded
violations, every position, velocity and acceleration limit checked again on
the values as written, and the Dynamixel tick range of tick files.

Ticks (one tick is 2 pi / 4096 rad) and single-precision floats are quantised:
the values written are the source curve rounded by up to half a quantum ``q/2``.
Their limits are checked with that rounding allowed for: positions within
``q/2``; velocities and accelerations by three-point differences (``"central"``,
see :mod:`looprig.core.curves`), each sample allowed ``q/2`` times the sum of
its stencil's absolute weights (at a uniform rate ``1/dt``: ``q/(2 dt)`` for
velocity, ``2 q/dt^2`` for acceleration). At 600 Hz one tick thus hides up to
0.46 rad/s and 1100 rad/s^2: a tick file resolves accelerations only that
finely, so the acceleration limits of fast curves are checked on their SI
export (CSV or JSON), whose values are written exactly.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..curves.actuator_curves import ActuatorCurves, derivative_unit
from ..curves.limit_checks import LimitCheckSettings, all_violations
from ..curves.violations import Violation, merge_violations, violations_from_excess
from ..errors import CurvesError
from .c_header import C_HEADER_FORMAT, read_c_header
from .common import meta_ids, meta_limit_arrays, parse_commented_csv, read_text, reading
from .curves_csv import CURVES_CSV_FORMAT, read_csv
from .curves_json import CURVES_JSON_FORMAT, read_json
from .dynamixel import DynamixelSettings, tick_range_violations
from .dynamixel_ticks import (
    TICKS_FORMAT,
    TickCurves,
    read_dynamixel_csv,
    read_dynamixel_json,
    ticks_from_meta,
)

#: The suffixes :func:`read_written` reads.
WRITTEN_SUFFIXES = (".csv", ".json", ".h")


@dataclass(frozen=True, eq=False)
class WrittenCurves:
    """A file written by a looprig writer, read back.

    format: the format it names (``looprig-curves-csv``, ``looprig-curves``,
    ``looprig-dynamixel-ticks`` or ``looprig-c-header``); curves: its values in SI
    units (ticks converted back), limits, and recorded violations as carried ones;
    quantum: (A,) [rad | m] the spacing of the values as written (one tick, the
    largest single-precision spacing of a float header's column; 0 for values
    written exactly); ticks: (F, A) int64 and dynamixel: the mode and mapping, for
    tick files (else None).
    """

    format: str
    curves: ActuatorCurves
    quantum: np.ndarray
    ticks: np.ndarray | None = None
    dynamixel: DynamixelSettings | None = None


def read_written(path) -> WrittenCurves:
    """The curves of any looprig export (see the module docstring); CurvesError naming the file."""
    suffix = Path(path).suffix.lower()
    if suffix == ".h":
        return _from_header(path)
    if suffix == ".json":
        with reading(path, "curves file") as where:
            try:
                doc = json.loads(read_text(path, "curves file"))
            except (json.JSONDecodeError, RecursionError) as exc:
                raise CurvesError(f"{where} is not valid JSON: {exc}") from None
        if isinstance(doc, dict) and doc.get("format") == TICKS_FORMAT:
            return _from_ticks(TICKS_FORMAT, read_dynamixel_json(path))
        curves = read_json(path)
        return WrittenCurves(CURVES_JSON_FORMAT, curves, _exact(curves))
    if suffix == ".csv":
        meta = parse_commented_csv(path, "curves CSV")[0]
        if meta.get("format") == TICKS_FORMAT:
            return _from_ticks(TICKS_FORMAT, read_dynamixel_csv(path))
        curves = read_csv(path)
        return WrittenCurves(CURVES_CSV_FORMAT, curves, _exact(curves))
    raise CurvesError(
        f"{str(path)!r}: not a looprig curves file (suffix {suffix or 'none'}; expected .csv, .json or .h)"
    )


def _exact(curves: ActuatorCurves) -> np.ndarray:
    return np.zeros(curves.n_actuators)


def _from_ticks(fmt: str, ticks: TickCurves) -> WrittenCurves:
    motors = ticks.settings.motors_for(ticks.names)
    per_unit = np.array(
        [m.ticks_per_unit(u, n) for m, u, n in zip(motors, ticks.units, ticks.names, strict=True)]
    )
    return WrittenCurves(fmt, ticks.to_curves(), 1.0 / per_unit, ticks.ticks, ticks.settings)


def _from_header(path) -> WrittenCurves:
    header = read_c_header(path)
    meta = header.meta
    with reading(path, "C header") as where:
        if not meta:
            raise CurvesError(
                f"{where} has no {C_HEADER_FORMAT} line (written before looprig recorded limits in headers); "
                "check the curves it was written from"
            )
        records = meta.get("violations", [])
        if not isinstance(records, list):
            raise CurvesError(f"{where}: 'violations' must be a list")
        violations = [Violation.from_dict(v) for v in records]
        if meta.get("kind") == "ticks":
            ticks = ticks_from_meta(
                meta, header.times, header.values, header.names, violations, path, "C header"
            )
            return _from_ticks(C_HEADER_FORMAT, ticks)
        n = len(header.names)
        curves = ActuatorCurves(
            times=header.times,
            values=header.values,
            names=header.names,
            units=tuple(meta.get("units") or ("rad",) * n),
            **meta_limit_arrays(meta, n, path, "C header"),
            hardware_ids=meta_ids(meta, "hardware_ids", n, path, "C header"),
            carried_violations=tuple(violations),
        )
    spacing = np.spacing(np.abs(header.values).astype(np.float32)).astype(float)  # float32 ulp per value
    return WrittenCurves(C_HEADER_FORMAT, curves, spacing.max(axis=0))


def quantised_allowance(times: np.ndarray, order: int) -> np.ndarray:
    """(F,) the sum of absolute weights of the three-point derivative of ``order`` (1
    or 2) at each sample [1/s or 1/s^2]: a value error of at most e per sample moves
    that derivative by at most e times this.

    Every stencil spans at most four consecutive samples, so each weight of a row is
    picked out by exactly one of the four combs ``x_j = [j = r mod 4]``.
    """
    combs = (np.arange(len(times))[:, None] % 4 == np.arange(4)).astype(float)  # (F, 4)
    curves = ActuatorCurves(times, combs, tuple(f"comb{r}" for r in range(4)))
    return np.abs(curves.derivative(order, "central")).sum(axis=1)


def written_violations(written: WrittenCurves, cyclic: bool = False) -> list[Violation]:
    """Every violation of a file read by :func:`read_written`: those it records, its
    limits checked again on its values (quantised values with their rounding allowed
    for, see the module docstring) and, for tick files, the Dynamixel tick range.

    cyclic: the file played in a loop, its first sample one period after its last:
    the velocities and accelerations at both ends are the wrap-around central
    differences (:meth:`~looprig.core.curves.actuator_curves.ActuatorCurves.derivative`)."""
    curves = written.curves
    if not np.any(written.quantum):
        found = all_violations(curves, LimitCheckSettings(cyclic=cyclic))
    else:
        found = merge_violations(
            _quantised_violations(curves, written.quantum, cyclic), curves.carried_violations
        )
    if written.ticks is not None:
        found = merge_violations(found, tick_range_violations(curves, written.ticks, written.dynamixel))
    return merge_violations(found, order=curves.names)


def _quantised_violations(
    curves: ActuatorCurves, quantum: np.ndarray, cyclic: bool = False
) -> list[Violation]:
    """Limit violations of quantised values: each bound widened by what rounding by
    half a ``quantum`` (A,) can move the sample (three-point derivatives; ``cyclic``:
    wrapping around, whose weights sum to ``rate`` and ``4 rate^2`` at every sample)."""
    t, rtol = curves.times, LimitCheckSettings().rtol
    half = 0.5 * np.asarray(quantum, dtype=float)
    found = []
    for a, name in enumerate(curves.names):
        x, unit = curves.values[:, a], curves.units[a]
        lo, hi = curves.lower[a], curves.upper[a]
        over = x - hi - half[a] - rtol * max(1.0, abs(hi)) if math.isfinite(hi) else np.full_like(x, -np.inf)
        under = lo - x - half[a] - rtol * max(1.0, abs(lo)) if math.isfinite(lo) else np.full_like(x, -np.inf)
        found += violations_from_excess(
            name, "position", t, x, np.maximum(over, under), np.where(over >= under, hi, lo), unit
        )
        for order, quantity, limit in (
            (1, "velocity", curves.velocity_limit[a]),
            (2, "acceleration", curves.acceleration_limit[a]),
        ):
            if not math.isfinite(limit) or len(t) < 3:
                continue
            rate = curves.derivative(order, "central", cyclic)[:, a]
            if cyclic:
                rate_hz = (curves.n_frames - 1) / curves.duration
                allowance = rate_hz if order == 1 else 4.0 * rate_hz**2
            else:
                allowance = quantised_allowance(t, order)
            excess = np.abs(rate) - limit - half[a] * allowance - rtol * max(1.0, limit)
            found += violations_from_excess(
                name,
                quantity,
                t,
                rate,
                excess,
                np.where(rate >= 0, limit, -limit),
                derivative_unit(unit, order),
            )
    return found


def resolution_text(written: WrittenCurves) -> str | None:
    """One line for people: how finely a quantised file's rates are resolved, or None."""
    if not np.any(written.quantum) or written.curves.n_frames < 3:
        return None
    t = written.curves.times
    q = float(np.max(written.quantum))
    what = "one tick" if written.ticks is not None else "single precision"
    velocity = 0.5 * q * float(np.max(quantised_allowance(t, 1)))
    acceleration = 0.5 * q * float(np.max(quantised_allowance(t, 2)))
    unit = written.curves.units[int(np.argmax(written.quantum))]
    return (
        f"values written to {what} ({q:.3g} {unit}): limits checked allowing for that rounding, "
        f"which can hide up to {velocity:.3g} {derivative_unit(unit, 1)} of velocity and "
        f"{acceleration:.3g} {derivative_unit(unit, 2)} of acceleration"
    )
