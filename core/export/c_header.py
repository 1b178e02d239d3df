"""Curves as a C header for fixed-rate playback on a microcontroller.

Rate, frame count, one ``static const`` array per actuator (``int16_t`` /
``int32_t`` Dynamixel ticks, or ``float`` SI values), optionally in AVR flash
via ``LOOPRIG_USE_PROGMEM`` (see :class:`CHeaderSettings`).
"""

import json
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..curves.actuator_curves import ActuatorCurves, derivative_unit
from ..curves.limit_checks import LimitCheckSettings
from ..curves.violations import Violation
from ..errors import CurvesError, did_you_mean
from .common import check_format, plain_id, read_text, reading
from .curves_csv import curves_metadata
from .dynamixel import DXL_CONVERSION, DXL_OPERATING_MODES, DXL_SOURCE, DynamixelSettings, velocity_raw
from .dynamixel_ticks import ticks_meta
from .files import write_text
from .gate import gate, ticks_gate

#: The format named in a header's metadata line (read by ``looprig check``).
C_HEADER_FORMAT = "looprig-c-header"
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

    The curves must be uniformly sampled (see :func:`~looprig.core.curves.resample.resample`).
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
            "sampled; resample them first (looprig.core.curves.resample.resample)"
        )
    idents = c_array_names(curves.names, settings.prefix)
    P = settings.prefix.upper()
    lines_info = []
    if settings.kind == "ticks":
        dxl, motors, data, violations = ticks_gate(path, curves, settings.dynamixel, allow_violations, check)
        meta = ticks_meta(curves, dxl, motors)
        limit_raw, _ = velocity_raw(curves, motors)
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
                f"{plain_id(curves.hardware_ids[a])}, zero {m.zero_offset_ticks} tick, "
                f"direction {m.direction:+d}{travel}, {vel}"
            )
    else:
        violations = gate(path, curves, allow_violations, check)
        meta = curves_metadata(curves, violations)
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
                f"{idents[a]}: {name} [{unit}], hardware id {plain_id(curves.hardware_ids[a])}, {vel_text}"
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
    meta.update(
        format=C_HEADER_FORMAT,
        kind=settings.kind,
        start_time=float(curves.times[0]),
        violations=[v.to_dict() for v in violations],
    )
    # one line for `looprig check`; JSON's "\/" keeps a "*/" in a name from ending the comment
    meta_json = json.dumps(meta, allow_nan=False).replace("*/", "*\\/")
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
        f"/* {C_HEADER_FORMAT}: {meta_json} */",
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
    ids = [plain_id(h) for h in curves.hardware_ids]
    if all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
        out.append(f"static const int32_t {settings.prefix}_hardware_ids[{P}_ACTUATOR_COUNT] = {{")
        out.append("    " + ", ".join(str(h) for h in ids) + ",")
        out.append("};")
    out += ["", f"#endif /* {guard} */", ""]
    write_text(path, "\n".join(out))
    return violations


@dataclass(frozen=True, eq=False)
class CHeaderCurves:
    """Arrays parsed back from a header written by :func:`write_c_header`.

    rate_hz [Hz]; names: (A,); ctype: "int16_t", "int32_t" or "float";
    values: (F, A) ticks or SI values as written (float64); violation_count;
    meta: the header's metadata line (format ``looprig-c-header``: ``kind``,
    ``start_time`` [s], units, limits, recorded ``violations`` and, for ticks, the
    Dynamixel mode and mapping as in a ticks file), empty in headers written
    without one.
    """

    rate_hz: float
    names: tuple[str, ...]
    ctype: str
    values: np.ndarray
    violation_count: int
    meta: Mapping = field(default_factory=dict)

    @property
    def times(self) -> np.ndarray:
        """(F,) [s]: frame k plays at ``start_time + k / rate_hz``."""
        return float(self.meta.get("start_time", 0.0)) + np.arange(len(self.values)) / self.rate_hz


_C_ARRAY = re.compile(
    r"static const (?P<ctype>int16_t|int32_t|float) (?P<ident>\w+)\[\w+\] LOOPRIG_PROGMEM = "
    r"\{(?P<body>[^}]*)\};"
)


def read_c_header(path, prefix: str = "looprig") -> CHeaderCurves:
    """Parse the rate, names and value arrays of a header written by :func:`write_c_header`.

    Raises :class:`~looprig.core.curves.actuator_curves.CurvesError` naming the file and the
    macro, table or array at fault.
    """
    with reading(path, "C header") as where:
        text = read_text(path, "C header")
        P = re.escape(prefix.upper())

        def define(name: str, parse):
            m = re.search(rf"^#define {P}_{name} (\S+)$", text, re.MULTILINE)
            if not m:
                raise CurvesError(f"{where}: no {prefix.upper()}_{name} macro")
            try:
                value = parse(m[1])
            except (ValueError, OverflowError):
                value = None
            if value is None or not math.isfinite(value) or value < 0 or (name == "RATE_HZ" and value == 0):
                raise CurvesError(
                    f"{where}: {prefix.upper()}_{name} is {m[1][:40]!r}, not a valid count or rate"
                )
            return value

        names_m = re.search(rf"{re.escape(prefix)}_names\[\w+\] = \{{\s*(.*?),\s*\}};", text, re.DOTALL)
        if not names_m:
            raise CurvesError(f"{where}: no {prefix}_names table")
        try:
            names = tuple(json.loads(f"[{names_m[1]}]"))
        except (json.JSONDecodeError, RecursionError):
            names = ()
        if not names or not all(isinstance(n, str) and n for n in names):
            raise CurvesError(f"{where}: {prefix}_names is not a list of quoted actuator names")
        frames = define("FRAME_COUNT", int)
        arrays = {m["ident"]: m for m in _C_ARRAY.finditer(text)}
        columns, ctypes = [], set()
        for ident in c_array_names(names, prefix):
            if ident not in arrays:
                raise CurvesError(f"{where}: no array {ident}")
            cells = [x.strip() for x in arrays[ident]["body"].split(",") if x.strip()]
            column = []
            for i, cell in enumerate(cells):
                try:
                    value = float(cell[:-1] if cell.endswith("f") else cell)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise CurvesError(
                        f"{where}: array {ident} value {i + 1} {cell[:40]!r} is not a finite number"
                    )
                column.append(value)
            if len(column) != frames:
                raise CurvesError(f"{where}: array {ident} holds {len(column)} values, not {frames} frames")
            columns.append(column)
            ctypes.add(arrays[ident]["ctype"])
        if len(ctypes) != 1:
            raise CurvesError(f"{where}: the arrays mix the types {', '.join(sorted(ctypes))}")
        meta_m = re.search(rf"^/\* {C_HEADER_FORMAT}: (.*) \*/$", text, re.MULTILINE)
        meta = {}
        if meta_m:
            try:
                meta = json.loads(meta_m[1])
            except (json.JSONDecodeError, RecursionError) as exc:
                raise CurvesError(f"{where}: the {C_HEADER_FORMAT} line is not JSON: {exc}") from None
            if not isinstance(meta, dict):
                raise CurvesError(f"{where}: the {C_HEADER_FORMAT} line must hold a JSON object")
            check_format(meta, C_HEADER_FORMAT, where)
        return CHeaderCurves(
            rate_hz=float(define("RATE_HZ", float)),
            names=names,
            ctype=ctypes.pop(),
            values=np.array(columns, dtype=float).T.reshape(frames, len(names)),
            violation_count=define("VIOLATION_COUNT", int),
            meta=meta,
        )
