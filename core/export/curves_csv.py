"""Curves as CSV in SI units (format ``looprig-curves-csv``, version 1).

``# key: <JSON value>`` comment lines (format, version, rate_hz, names, units,
hardware_ids, lower, upper, velocity_limit, acceleration_limit, one
``# violation: {...}`` line per violation; ``null`` = no limit), then a header
row ``time [s],<name> [rad],<name> [m],...`` and one row per frame in SI
units, floats written with ``repr`` (exact round trip).

The plain variant (:func:`write_plain_csv`) writes the same header row and
rows with no comment lines, for ``numpy.loadtxt`` and spreadsheets, and the
metadata to a JSON side file.
"""

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from ..curves.actuator_curves import ActuatorCurves
from ..curves.limit_checks import LimitCheckSettings
from ..curves.violations import Violation
from ..errors import CurvesError
from .common import (
    FORMAT_VERSION,
    check_derivatives,
    check_format,
    commented_table,
    limits_meta,
    meta_ids,
    meta_limit_arrays,
    meta_lines,
    plain_id,
    read_text,
    reading,
    string_list,
)
from .files import write_text
from .gate import gate

CURVES_CSV_FORMAT = "looprig-curves-csv"


def curves_metadata(curves: ActuatorCurves, violations: Sequence[Violation]) -> dict:
    """The metadata of a curves CSV: format, rate, names, units, ids, limits, violation count."""
    return {
        "format": CURVES_CSV_FORMAT,
        "version": FORMAT_VERSION,
        "rate_hz": curves.rate_hz,
        "names": list(curves.names),
        "units": list(curves.units),
        "hardware_ids": [plain_id(h) for h in curves.hardware_ids],
        **limits_meta(curves),
        "limit_units": "lower/upper in each unit, velocity_limit per s, "
        "acceleration_limit per s^2; null = no limit",
        "violation_count": len(violations),
    }


def _table_text(curves: ActuatorCurves) -> str:
    """The header row ``time [s],<name> [<unit>],...`` and one row per frame."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = (f"{n} [{u}]" for n, u in zip(curves.names, curves.units, strict=True))
    writer.writerow(["time [s]", *columns])
    for t, row in zip(curves.times, curves.values, strict=True):
        writer.writerow([repr(float(t)), *(repr(float(x)) for x in row)])
    return out.getvalue()


def write_csv(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write ``curves`` as CSV in SI units (format ``looprig-curves-csv``); see the module doc."""
    violations = gate(path, curves, allow_violations, check)
    head = "\n".join(meta_lines(curves_metadata(curves, violations), violations)) + "\n"
    write_text(path, head + _table_text(curves))
    return violations


def plain_csv_metadata_path(path) -> Path:
    """The side file of a plain CSV: ``curves.csv`` -> ``curves.meta.json``."""
    return Path(path).with_suffix(".meta.json")


def write_plain_csv(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
) -> list[Violation]:
    """Write ``curves`` as a plain CSV, and their limits and violations beside it.

    The CSV has one header row, ``time [s],<name> [<unit>],...`` (SI units,
    the names are the actuator names), then one row per frame, and no comment
    lines, so ``numpy.loadtxt(path, delimiter=",", skiprows=1)`` or a
    spreadsheet reads it. Everything else the commented CSV holds (format,
    rate, hardware ids, limits, ``violations``) goes to the JSON side file
    :func:`plain_csv_metadata_path` (``curves.meta.json`` beside
    ``curves.csv``), which names the CSV in ``"data_file"``; :func:`read_csv`
    reads the pair back. The side file is written first, so a CSV never
    stands without its record.
    """
    violations = gate(path, curves, allow_violations, check)
    side = curves_metadata(curves, violations)
    side["data_file"] = Path(path).name
    side["violations"] = [v.to_dict() for v in violations]
    write_text(plain_csv_metadata_path(path), json.dumps(side, indent=1, allow_nan=False) + "\n")
    write_text(path, _table_text(curves))
    return violations


def _side_metadata(path, names: Sequence[str]) -> tuple[dict, list[Violation]]:
    """(metadata, violations) from the side file of a plain CSV, or ({}, []) if there is none."""
    side_path = plain_csv_metadata_path(path)
    if side_path == Path(path) or not side_path.is_file():
        return {}, []
    with reading(side_path, "curves CSV metadata") as where:
        try:
            side = json.loads(read_text(side_path, "curves CSV metadata"))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise CurvesError(f"{where} is not valid JSON: {exc}") from None
        if not isinstance(side, dict) or side.get("data_file") != Path(path).name:
            return {}, []  # a JSON file of the same name, not this CSV's record
        check_format(side, CURVES_CSV_FORMAT, where)
        if string_list(side.get("names"), "names") != list(names):
            raise CurvesError(f"{where}: 'names' disagree with the columns of {Path(path).name!r}")
        records = side.get("violations", [])
        if not isinstance(records, list):
            raise CurvesError(f"{where}: 'violations' must be a list")
        return side, [Violation.from_dict(v) for v in records]


def read_csv(path) -> ActuatorCurves:
    """Curves from a CSV written by :func:`write_csv` or :func:`write_plain_csv`
    (or any ``time [s],name [unit]`` CSV).

    A CSV without comment lines takes its metadata from its side file
    (:func:`plain_csv_metadata_path`) if that names it as its ``data_file``.
    Recorded violations become the curves' ``carried_violations``; missing
    limits are taken as none.
    """
    what = "curves CSV"
    with reading(path, what):
        meta, violations, names, units, table = commented_table(path, what, CURVES_CSV_FORMAT)
        if not meta and not violations:
            meta, violations = _side_metadata(path, names)
        n = len(names)
        curves = ActuatorCurves(
            times=table[:, 0],
            values=table[:, 1:],
            names=tuple(names),
            units=tuple(units),
            **meta_limit_arrays(meta, n, path, what),
            hardware_ids=meta_ids(meta, "hardware_ids", n, path, what),
            carried_violations=tuple(violations),
        )
        check_derivatives(curves)
    return curves
