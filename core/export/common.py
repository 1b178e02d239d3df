"""What the curve formats share: metadata lines, header cells, number tables, format checks.

Used by the format modules of :mod:`looprig.core.export` only.
"""

import csv
import json
import os
import re
from collections.abc import Mapping, Sequence

import numpy as np

from ..curves import CurvesError, Violation
from .files import read_text as _read_file

#: Version of every looprig curve format this module reads and writes.
FORMAT_VERSION = 1


def finite_or_none(x) -> float | None:
    """``x`` as a float, or None if it is not finite (JSON has no infinity: null = no limit)."""
    x = float(x)
    return x if np.isfinite(x) else None


def limit_from(x, default: float) -> float:
    """A limit read from a file: ``default`` (an infinity) for null."""
    return default if x is None else float(x)


def plain_id(hardware_id):
    """A hardware id JSON can hold (numpy integers become ints)."""
    if isinstance(hardware_id, np.integer):
        return int(hardware_id)
    return hardware_id


def read_text(path, what: str) -> str:
    """The UTF-8 text of a curves file, or :class:`~looprig.core.curves.CurvesError`."""
    return _read_file(path, what, CurvesError)


def meta_lines(meta: Mapping, violations: Sequence[Violation]) -> list[str]:
    """``# key: <JSON>`` lines of ``meta``, then one ``# violation: {...}`` line per violation."""
    lines = [f"# {key}: {json.dumps(value, allow_nan=False)}" for key, value in meta.items()]
    lines += [f"# violation: {json.dumps(v.to_dict(), allow_nan=False)}" for v in violations]
    return lines


def parse_commented_csv(path, what: str) -> tuple[dict, list[Violation], list[str], list[list]]:
    """(metadata, violations, header, rows) of a CSV with ``# key: JSON`` lines."""
    text = read_text(path, what)
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


def split_header(path, header: Sequence[str], what: str) -> tuple[list[str], list[str]]:
    """(names, units) of the actuator columns of a ``time [s],<name> [<unit>],...`` header."""
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


def number_table(path, rows, n_columns: int, what: str, dtype=float) -> np.ndarray:
    """(rows, n_columns) float array of CSV rows (``dtype`` parses each cell)."""
    try:
        table = np.array([[dtype(cell) for cell in row] for row in rows if row], dtype=float).reshape(
            -1, n_columns
        )
    except ValueError as exc:
        raise CurvesError(f"{what} {os.fspath(path)!r}: bad number or row length: {exc}") from None
    if table.shape[0] == 0:
        raise CurvesError(f"{what} {os.fspath(path)!r} has no frames")
    return table


def meta_list(meta: Mapping, key: str, n: int, default, path, what: str) -> list:
    """``meta[key]`` as a list of ``n`` values (``n`` defaults if absent)."""
    value = meta.get(key)
    if value is None:
        return [default] * n
    if not isinstance(value, list) or len(value) != n:
        raise CurvesError(f"{what} {os.fspath(path)!r}: {key!r} must list {n} values")
    return value


def check_format(meta: Mapping, expected: str, where: str) -> None:
    """Raise unless ``meta`` names format ``expected`` (or none) and a readable version."""
    fmt, version = meta.get("format"), meta.get("version")
    if fmt is not None and fmt != expected:
        raise CurvesError(f"{where}: format is {fmt!r}, expected {expected!r}")
    if version is not None and version != FORMAT_VERSION:
        raise CurvesError(
            f"{where}: version {version} is not supported (this looprig reads version {FORMAT_VERSION})"
        )
