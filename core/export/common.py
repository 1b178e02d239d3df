"""What the curve formats share: metadata lines, header cells, number tables, format checks.

Used by the format modules of :mod:`looprig.core.export` only.
"""

import csv
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from ..curves.violations import Violation
from ..errors import CurvesError, LooprigError
from .files import read_text as _read_file

#: Version of every looprig curve format this module reads and writes.
FORMAT_VERSION = 1


def finite_or_none(x) -> float | None:
    """``x`` as a float, or None if it is not finite (JSON has no infinity: null = no limit)."""
    x = float(x)
    return x if np.isfinite(x) else None


def limit_from(x, default: float, field: str = "limit") -> float:
    """A limit read from a file: ``default`` (an infinity) for null; CurvesError unless a number."""
    if x is None:
        return default
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise CurvesError(f"{field} must be a number or null, got {x!r:.80}")
    return float(x)


def plain_id(hardware_id):
    """A hardware id JSON can hold (numpy integers become ints)."""
    if isinstance(hardware_id, np.integer):
        return int(hardware_id)
    return hardware_id


def read_text(path, what: str) -> str:
    """The UTF-8 text of a curves file, or :class:`~looprig.core.curves.actuator_curves.CurvesError`."""
    return _read_file(path, what, CurvesError)


@contextmanager
def reading_document(where: str) -> Iterator[None]:
    """Every problem met while reading a document becomes one CurvesError line starting ``where``.

    A looprig error that does not start with ``where`` gets it as a prefix;
    the errors malformed content can cause in Python and numpy (a missing
    key, a value of the wrong type, a ragged table, a float that overflows an
    integer) become "missing or malformed field" errors; line breaks become spaces.
    """
    try:
        yield
    except LooprigError as exc:
        message = " ".join(str(exc).split("\n"))
        if isinstance(exc, CurvesError) and message.startswith(where):
            raise
        raise CurvesError(f"{where}: {message}") from None
    except KeyError as exc:
        raise CurvesError(f"{where}: missing or malformed field {exc.args[0]!r}") from None
    except (TypeError, ValueError, OverflowError, AttributeError, IndexError, RecursionError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise CurvesError(f"{where}: missing or malformed field ({detail})") from None


@contextmanager
def reading(path, what: str) -> Iterator[str]:
    """:func:`reading_document` for the file ``path``; yields ``"<what> '<path>'"``."""
    where = f"{what} {os.fspath(path)!r}"
    with reading_document(where):
        yield where


def finite_array(values, where: str, field: str, dtype=float) -> np.ndarray:
    """``values`` as a float array, or CurvesError if an entry is not a finite number."""
    if isinstance(values, str | bytes | Mapping):
        raise CurvesError(f"{where}: {field!r} must be a list of numbers")
    array = np.asarray(values, dtype=dtype)
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise CurvesError(
            f"{where}: {field!r} holds {array[index]} at index {list(index)}; numbers must be finite"
        )
    return array


def check_derivatives(curves) -> None:
    """Raise CurvesError if the curves' velocities or accelerations cannot be computed.

    Values and times read from a file can be finite yet so large or so close
    that their derivatives overflow; this finds out while the file is still
    being read, so the error names it.
    """
    if curves.n_frames > 1:
        curves.velocities()
        curves.accelerations()


def meta_lines(meta: Mapping, violations: Sequence[Violation]) -> list[str]:
    """``# key: <JSON>`` lines of ``meta``, then one ``# violation: {...}`` line per violation."""
    lines = [f"# {key}: {json.dumps(value, allow_nan=False)}" for key, value in meta.items()]
    lines += [f"# violation: {json.dumps(v.to_dict(), allow_nan=False)}" for v in violations]
    return lines


def parse_commented_csv(path, what: str) -> tuple[dict, list[Violation], list[str], list[tuple[int, list]]]:
    """(metadata, violations, header cells, [(line number, cells), ...]) of a commented CSV.

    Comment lines ``# key: <JSON>`` hold metadata, ``# violation: {...}``
    recorded violations; other ``#`` lines are free text.
    """
    text = read_text(path, what)
    where = f"{what} {os.fspath(path)!r}"
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
            except (json.JSONDecodeError, RecursionError) as exc:
                raise CurvesError(f"{where} line {number}: {key.strip()!r} is not JSON: {exc}") from None
            if key.strip() == "violation":
                try:
                    violations.append(Violation.from_dict(parsed))
                except CurvesError as exc:
                    raise CurvesError(f"{where} line {number}: {exc}") from None
            else:
                meta[key.strip()] = parsed
        elif line.strip():
            try:
                (cells,) = csv.reader([line])
            except (csv.Error, ValueError) as exc:
                raise CurvesError(f"{where} line {number}: not a CSV row ({exc})") from None
            body.append((number, cells))
    if not body:
        raise CurvesError(f"{where} has no header row")
    return meta, violations, body[0][1], body[1:]


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
    """(rows, n_columns) float array of ``(line number, cells)`` CSV rows, all finite.

    ``dtype`` parses each cell; a short or long row, a cell that is not a
    number and a number that is not finite are errors naming line and column.
    """
    where = f"{what} {os.fspath(path)!r}"
    table = np.empty((len(rows), n_columns))
    for r, (number, cells) in enumerate(rows):
        if len(cells) != n_columns:
            raise CurvesError(
                f"{where} line {number}: bad row length, {len(cells)} values for {n_columns} columns"
            )
        for c, cell in enumerate(cells):
            try:
                value = dtype(cell)
            except (ValueError, OverflowError):
                raise CurvesError(f"{where} line {number} column {c + 1}: bad number {cell!r}") from None
            if not np.isfinite(value):
                raise CurvesError(f"{where} line {number} column {c + 1}: {cell!r} is not a finite number")
            table[r, c] = value
    if table.shape[0] == 0:
        raise CurvesError(f"{where} has no frames")
    return table


def meta_list(meta: Mapping, key: str, n: int, default, path, what: str) -> list:
    """``meta[key]`` as a list of ``n`` values (``n`` defaults if absent)."""
    value = meta.get(key)
    if value is None:
        return [default] * n
    if not isinstance(value, list) or len(value) != n:
        raise CurvesError(f"{what} {os.fspath(path)!r}: {key!r} must list {n} values")
    return value


def meta_limits(meta: Mapping, key: str, n: int, default: float, path, what: str) -> list[float]:
    """``meta[key]`` as ``n`` limits (null or absent: ``default``, an infinity)."""
    values = meta_list(meta, key, n, None, path, what)
    return [limit_from(x, default, f"{key!r} entry {i + 1}") for i, x in enumerate(values)]


#: The four limit fields of curves and of their files' metadata, with the infinity
#: that stands for "no limit" in each (lower, upper [rad | m], velocity_limit [per s],
#: acceleration_limit [per s^2]).
LIMIT_FIELDS = {"lower": -np.inf, "upper": np.inf, "velocity_limit": np.inf, "acceleration_limit": np.inf}


def limits_meta(curves) -> dict[str, list[float | None]]:
    """The curves' four limits as metadata: ``{field: (A,) list}``, null where there is none."""
    return {key: [finite_or_none(x) for x in getattr(curves, key)] for key in LIMIT_FIELDS}


def meta_limit_arrays(meta: Mapping, n: int, path, what: str) -> dict[str, np.ndarray]:
    """The four limits of ``n`` actuators read back from metadata (:func:`limits_meta`):
    ``{field: (n,) array}``, an infinity where the file has null or nothing."""
    return {key: np.array(meta_limits(meta, key, n, none, path, what)) for key, none in LIMIT_FIELDS.items()}


def meta_ids(meta: Mapping, key: str, n: int, path, what: str) -> tuple:
    """``meta[key]`` as ``n`` hardware ids: integers, strings or null."""
    return hardware_ids(meta_list(meta, key, n, None, path, what), key)


def hardware_ids(values: list, field: str) -> tuple:
    """``values`` as hardware ids (integers, strings or None), or CurvesError naming ``field``."""
    for i, x in enumerate(values):
        if isinstance(x, bool) or not (x is None or isinstance(x, int | str)):
            raise CurvesError(f"{field!r} entry {i + 1} must be an integer, a string or null, got {x!r:.80}")
    return tuple(values)


def string_list(value, field: str) -> list[str]:
    """``value`` as a list of strings, or CurvesError naming ``field``."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise CurvesError(
            f"missing or malformed field {field!r}: must be a list of strings, got {value!r:.80}"
        )
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


def commented_table(
    path, what: str, expected: str
) -> tuple[dict, list[Violation], list[str], list[str], np.ndarray]:
    """(metadata, violations, names, units, table) of a commented CSV of format ``expected``
    (:func:`parse_commented_csv`): the actuator columns' names and units from the
    ``time [s],<name> [<unit>],...`` header, and its rows as a (frames, 1 + actuators)
    float table, times first."""
    meta, violations, header, rows = parse_commented_csv(path, what)
    check_format(meta, expected, f"{what} {os.fspath(path)!r}")
    names, units = split_header(path, header, what)
    return meta, violations, names, units, number_table(path, rows, len(names) + 1, what)
