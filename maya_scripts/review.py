"""Review import: baked actuator curves back into Maya as animation curves (standard library only).

Reads the curves files written by ``looprig.core.export`` (``write_csv``,
format ``looprig-curves-csv``; ``write_json``, format ``looprig-curves``; both
version 1, SI units) and keys one attribute per actuator on a locator (new,
named ``looprig_curves``) or on any existing node, so animators can play motor
motion against their animation:

* attribute ``<prefix><actuator>`` (default prefix ``looprig_``), nice name
  ``<actuator> [<unit>]``; angles (``rad``) become ``doubleAngle`` attributes
  and lengths (``m``) ``doubleLinear`` ones, keyed in the scene's UI units
  (degrees and centimetres by default), so the Graph Editor shows them as
  Maya shows any rotation or translation; other units are keyed as plain
  numbers.
* keys at every sample, at Maya frame ``t · fps`` (a curve's time ``t`` [s]
  counts from Maya's time zero, as the tracks files do), with linear tangents:
  between samples Maya draws the same straight line the samples imply.
* each actuator with recorded limit violations also gets a stepped boolean
  ``<prefix><actuator>_over_limit``: 1 from the start to the end of each
  violation, 0 elsewhere, so the offending stretches show in the Graph Editor
  and the channel box.

Keys of attributes with the prefix are replaced on a re-import; attributes
without it are never touched. The selection is restored afterwards.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from dataclasses import dataclass, field

from .errors import CurvesFileError, MayaScriptError, NodeError
from .export_tracks import CM_PER_UNIT

CSV_FORMAT = "looprig-curves-csv"
JSON_FORMAT = "looprig-curves"
FORMAT_VERSION = 1
DEFAULT_LOCATOR = "looprig_curves"
DEFAULT_PREFIX = "looprig_"
_RAD_PER_UI_ANGLE = {"deg": math.pi / 180.0, "degree": math.pi / 180.0, "rad": 1.0, "radian": 1.0}
_HEADER_CELL = re.compile(r"^(?P<name>.*\S)\s*\[(?P<unit>[^\]]+)\]$")


@dataclass
class CurveSet:
    """Actuator curves read from a looprig curves file.

    times: (F,) [s]; names, units: (A,) (``rad``, ``m``...); values: A lists
    of F floats in those units; violations: the recorded limit violations
    (dicts with ``actuator``, ``quantity``, ``start_time``, ``end_time`` [s], ...).
    """

    times: list
    names: list
    units: list
    values: list
    violations: list = field(default_factory=list)
    path: str = ""

    @property
    def n_frames(self) -> int:
        return len(self.times)


def _fail(path, problem: str):
    raise CurvesFileError(f"curves file {os.fspath(path)!r}: {problem}")


def read_curves(path) -> CurveSet:
    """Read a looprig curves CSV or JSON file (chosen by content; ``.csv``/``.json`` names are usual)."""
    try:
        with open(path, encoding="utf-8", newline="") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as error:
        raise CurvesFileError(f"cannot read curves file {os.fspath(path)!r}: {error}") from None
    curves = _read_json(path, text) if text.lstrip().startswith("{") else _read_csv(path, text)
    _check(path, curves)
    return curves


def _read_json(path, text: str) -> CurveSet:
    try:
        doc = json.loads(text)
    except ValueError as error:
        _fail(path, f"not valid JSON: {error}")
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        _fail(path, f'expected "format": "{JSON_FORMAT}", got {found!r}')
    if doc.get("version") != FORMAT_VERSION:
        _fail(path, f"version {doc.get('version')!r} is not supported (this reads version {FORMAT_VERSION})")
    try:
        actuators = doc["actuators"]
        return CurveSet(
            times=[float(t) for t in doc["times"]],
            names=[str(a["name"]) for a in actuators],
            units=[str(a.get("unit", "")) for a in actuators],
            values=[[float(v) for v in a["values"]] for a in actuators],
            violations=list(doc.get("violations") or []),
            path=os.fspath(path),
        )
    except (KeyError, TypeError, ValueError) as error:
        _fail(path, f"missing or malformed field: {error!r}")


def _read_csv(path, text: str) -> CurveSet:
    meta, violations, body = {}, [], []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            key, sep, value = line[1:].strip().partition(":")
            if not sep:
                continue
            try:
                parsed = json.loads(value)
            except ValueError:
                _fail(path, f"line {number}: {key.strip()!r} is not JSON")
            if key.strip() == "violation":
                violations.append(parsed)
            else:
                meta[key.strip()] = parsed
        elif line.strip():
            body.append(line)
    if meta.get("format", CSV_FORMAT) != CSV_FORMAT:
        _fail(path, f"format is {meta.get('format')!r}, expected {CSV_FORMAT!r}")
    if meta.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        _fail(path, f"version {meta.get('version')!r} is not supported (this reads version {FORMAT_VERSION})")
    rows = list(csv.reader(body))
    if not rows:
        _fail(path, "no header row")
    names, units = [], []
    for i, cell in enumerate(rows[0]):
        match = _HEADER_CELL.match(cell.strip())
        if not match:
            _fail(path, f"header column {i + 1} {cell!r} should read '<name> [<unit>]'")
        names.append(match["name"])
        units.append(match["unit"])
    if not names or names[0] != "time" or units[0] != "s":
        _fail(path, "first column must be 'time [s]'")
    times, columns = [], [[] for _ in names[1:]]
    for number, row in enumerate(rows[1:], 2):
        if len(row) != len(names):
            _fail(path, f"data row {number - 1} has {len(row)} cells, the header {len(names)}")
        try:
            numbers = [float(cell) for cell in row]
        except ValueError as error:
            _fail(path, f"data row {number - 1}: {error}")
        times.append(numbers[0])
        for column, value in zip(columns, numbers[1:]):  # noqa: B905 (Python 3.7 in Maya 2022)
            column.append(value)
    return CurveSet(times, names[1:], units[1:], columns, violations, os.fspath(path))


def _check(path, curves: CurveSet) -> None:
    if not curves.names:
        _fail(path, "no actuators")
    if not curves.times:
        _fail(path, "no frames")
    if len(set(curves.names)) != len(curves.names):
        _fail(path, "actuator names repeat")
    for name, column in zip(curves.names, curves.values):  # noqa: B905 (Python 3.7 in Maya 2022)
        if len(column) != len(curves.times):
            _fail(path, f"actuator {name!r} has {len(column)} values for {len(curves.times)} times")
        if not all(math.isfinite(v) for v in column):
            _fail(path, f"actuator {name!r} has non-finite values")
    if not all(math.isfinite(t) for t in curves.times) or any(
        b <= a
        for a, b in zip(curves.times, curves.times[1:])  # noqa: B905 (Python 3.7 in Maya 2022)
    ):
        _fail(path, "times must be finite and strictly increasing")


# ----------------------------------------------------------------------------- keying
def attribute_name(actuator: str, prefix: str = DEFAULT_PREFIX) -> str:
    """A valid Maya attribute name for an actuator: ``prefix`` + name with non-word characters as ``_``."""
    name = re.sub(r"\W", "_", prefix + actuator, flags=re.ASCII)
    return name if re.match(r"[A-Za-z]", name) else "a_" + name


def ui_scale(unit: str, angle_unit: str, linear_unit: str) -> tuple[str, float]:
    """(attribute kind, factor) turning values in ``unit`` into Maya UI units."""
    if unit == "rad":
        return "angle", 1.0 / _RAD_PER_UI_ANGLE[angle_unit]
    if unit == "m":
        return "linear", CM_PER_UNIT["m"] / CM_PER_UNIT[linear_unit]
    return "double", 1.0


def over_limit_keys(times, violations, actuator: str):
    """(times [s], 0/1 values) of a stepped over-limit flag for ``actuator``.

    1 from each violation's ``start_time`` until its ``end_time``, 0 at the
    first sample after it (and at the first sample when the curve starts within limits).
    """
    intervals = sorted(
        (float(v["start_time"]), float(v["end_time"])) for v in violations if v.get("actuator") == actuator
    )
    if not intervals:
        return [], []
    keys: dict[float, float] = {}
    for start, end in intervals:
        keys[start] = 1.0
        after = [t for t in times if t > end + 1e-12]
        if after and after[0] not in keys:
            keys[after[0]] = 0.0
    if times[0] not in keys:
        keys[times[0]] = 0.0
    ordered = sorted(keys)
    return ordered, [keys[t] for t in ordered]


@dataclass
class ReviewResult:
    """The node keyed, ``{actuator: attribute}``, flag attributes with violations, key count per curve."""

    node: str
    attributes: dict
    over_limit_attributes: dict
    keys_per_curve: int

    def summary(self) -> str:
        flags = (
            f"; limit violations flagged on {', '.join(self.over_limit_attributes.values())}"
            if self.over_limit_attributes
            else "; no limit violations recorded"
        )
        return (
            f"keyed {len(self.attributes)} actuator curve(s) x {self.keys_per_curve} keys on "
            f"{self.node}{flags}"
        )


def _default_host():
    from . import maya_facade

    return maya_facade


def import_curves(
    path,
    node: str | None = None,
    *,
    prefix: str = DEFAULT_PREFIX,
    locator_name: str = DEFAULT_LOCATOR,
    progress=None,
    host=None,
) -> ReviewResult:
    """Key the actuator curves of a looprig curves file onto ``node`` (default: a new locator).

    prefix: non-empty attribute-name prefix (keys of existing attributes with
    it are replaced). progress: ``progress(done, total)`` per actuator.
    Raises :class:`CurvesFileError` for unreadable files and
    :class:`NodeError` for a missing node; the selection is restored.
    """
    if not prefix or not re.fullmatch(r"[A-Za-z]\w*", prefix, flags=re.ASCII):
        raise MayaScriptError(f"attribute prefix must be a non-empty Maya name, got {prefix!r}")
    curves = read_curves(path)
    host = host or _default_host()
    saved_selection = host.selection()
    try:
        if node is None:
            node = host.create_locator(locator_name)
        elif not host.node_exists(node):
            raise NodeError(f"no node {node!r} in the scene to key the curves on", missing=[node])
        fps = host.frames_per_second()
        frames = [t * fps for t in curves.times]
        angle, linear = host.angle_unit(), host.linear_unit()
        attributes, flags = {}, {}
        total = len(curves.names)
        columns = zip(curves.names, curves.units, curves.values)  # noqa: B905 (Python 3.7 in Maya 2022)
        for done, (name, unit, column) in enumerate(columns, 1):
            kind, factor = ui_scale(unit, angle, linear)
            attr = attribute_name(name, prefix)
            _prepare(host, node, attr, kind, f"{name} [{unit}]")
            host.set_keys(node, attr, frames, [v * factor for v in column])
            attributes[name] = attr
            flag_times, flag_values = over_limit_keys(curves.times, curves.violations, name)
            if flag_times:
                flag = attr + "_over_limit"
                _prepare(host, node, flag, "bool", f"{name} over limit")
                host.set_keys(node, flag, [t * fps for t in flag_times], flag_values, stepped=True)
                flags[name] = flag
            if progress is not None:
                progress(done, total)
        return ReviewResult(node, attributes, flags, curves.n_frames)
    finally:
        if host.selection() != saved_selection:
            host.set_selection(saved_selection)


def _prepare(host, node: str, attr: str, kind: str, nice_name: str) -> None:
    if host.has_attribute(node, attr):
        host.clear_keys(node, attr)
    else:
        host.add_attribute(node, attr, kind, nice_name)
