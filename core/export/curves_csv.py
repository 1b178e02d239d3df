"""Curves as CSV in SI units (format ``looprig-curves-csv``, version 1).

``# key: <JSON value>`` comment lines (format, version, rate_hz, names, units,
hardware_ids, lower, upper, velocity_limit, acceleration_limit, one
``# violation: {...}`` line per violation; ``null`` = no limit), then a header
row ``time [s],<name> [rad],<name> [m],...`` and one row per frame in SI
units, floats written with ``repr`` (exact round trip).
"""

import csv
import io
import os

import numpy as np

from ..curves import ActuatorCurves, LimitCheckSettings, Violation
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
    split_header,
)
from .files import write_text
from .gate import gate

CURVES_CSV_FORMAT = "looprig-curves-csv"


def write_csv(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write ``curves`` as CSV in SI units (format ``looprig-curves-csv``); see the module doc."""
    violations = gate(path, curves, allow_violations, check)
    meta = {
        "format": CURVES_CSV_FORMAT,
        "version": FORMAT_VERSION,
        "rate_hz": curves.rate_hz,
        "names": list(curves.names),
        "units": list(curves.units),
        "hardware_ids": [plain_id(h) for h in curves.hardware_ids],
        "lower": [finite_or_none(x) for x in curves.lower],
        "upper": [finite_or_none(x) for x in curves.upper],
        "velocity_limit": [finite_or_none(x) for x in curves.velocity_limit],
        "acceleration_limit": [finite_or_none(x) for x in curves.acceleration_limit],
        "limit_units": "lower/upper in each unit, velocity_limit per s, "
        "acceleration_limit per s^2; null = no limit",
        "violation_count": len(violations),
    }
    out = io.StringIO()
    out.write("\n".join(meta_lines(meta, violations)) + "\n")
    writer = csv.writer(out, lineterminator="\n")
    columns = (f"{n} [{u}]" for n, u in zip(curves.names, curves.units, strict=True))
    writer.writerow(["time [s]", *columns])
    for t, row in zip(curves.times, curves.values, strict=True):
        writer.writerow([repr(float(t)), *(repr(float(x)) for x in row)])
    write_text(path, out.getvalue())
    return violations


def read_csv(path) -> ActuatorCurves:
    """Curves from a CSV written by :func:`write_csv` (or any ``time [s],name [unit]`` CSV).

    Recorded violations become the curves' ``carried_violations``; missing
    limits are taken as none.
    """
    what = "curves CSV"
    meta, violations, header, rows = parse_commented_csv(path, what)
    check_format(meta, CURVES_CSV_FORMAT, f"{what} {os.fspath(path)!r}")
    names, units = split_header(path, header, what)
    table = number_table(path, rows, len(names) + 1, what)
    n = len(names)
    return ActuatorCurves(
        times=table[:, 0],
        values=table[:, 1:],
        names=tuple(names),
        units=tuple(units),
        lower=[limit_from(x, -np.inf) for x in meta_list(meta, "lower", n, None, path, what)],
        upper=[limit_from(x, np.inf) for x in meta_list(meta, "upper", n, None, path, what)],
        velocity_limit=[
            limit_from(x, np.inf) for x in meta_list(meta, "velocity_limit", n, None, path, what)
        ],
        acceleration_limit=[
            limit_from(x, np.inf) for x in meta_list(meta, "acceleration_limit", n, None, path, what)
        ],
        hardware_ids=tuple(meta_list(meta, "hardware_ids", n, None, path, what)),
        carried_violations=tuple(violations),
    )
