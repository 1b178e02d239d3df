"""Hardware exports of actuator curves, and readers for round trips.

Every writer checks the curves first (:func:`looprig.core.curves.limit_checks.all_violations`:
position, velocity and acceleration limits, plus the violations carried from a
resampled source; the Dynamixel formats add the motor's tick range) and
**refuses** to write when any limit is broken: it raises
:class:`~looprig.core.curves.violations.LimitViolationError` listing them and leaves no
file behind (:mod:`.gate`). With ``allow_violations=True`` it writes the file
and records the violations in it (a JSON field, ``# violation:`` comment
lines in CSV, a comment block and ``*_VIOLATION_COUNT`` in a C header). Every
writer returns the violations it recorded. Every file is written under one
output policy (:mod:`.files`: regular files only, never onto an input,
atomic replace, one-line :class:`OutputError` on failure).

Formats (all state their units inside the file), one module each:

:mod:`.curves_csv` ``write_csv`` / ``read_csv``, ``write_plain_csv``
    format ``looprig-curves-csv``: SI values with ``# key: JSON`` metadata lines,
    or (plain) one header row for ``numpy.loadtxt`` and the metadata in a side file.
:mod:`.curves_json` ``write_json`` / ``read_json``
    format ``looprig-curves``: SI values, limits and violations in one document.
:mod:`.dynamixel_ticks` ``write_dynamixel_csv`` / ``write_dynamixel_json`` / ``read_dynamixel_*``
    integer Goal Position ticks for ROBOTIS Dynamixel X-series servos (format
    ``looprig-dynamixel-ticks``); the servo model is :mod:`.dynamixel`.
:mod:`.c_header` ``write_c_header`` / ``read_c_header``
    ``static const`` arrays for fixed-rate playback on a microcontroller, with
    one metadata line (format ``looprig-c-header``) for checks.

:mod:`.check` ``read_written`` / ``written_violations`` read any of these files
back and check it against its limits (``looprig check``), quantised values with
their rounding allowed for.

All formats are version ``FORMAT_VERSION`` (1).
"""

from .c_header import (
    C_HEADER_FORMAT,
    CHeaderCurves,
    CHeaderSettings,
    c_array_names,
    read_c_header,
    write_c_header,
)
from .check import (
    WRITTEN_SUFFIXES,
    WrittenCurves,
    quantised_allowance,
    read_written,
    resolution_text,
    written_violations,
)
from .common import FORMAT_VERSION
from .curves_csv import CURVES_CSV_FORMAT, plain_csv_metadata_path, read_csv, write_csv, write_plain_csv
from .curves_json import CURVES_JSON_FORMAT, curves_from_dict, curves_to_dict, read_json, write_json
from .dynamixel import (
    DXL_CONVERSION,
    DXL_GOAL_POSITION_ADDRESS,
    DXL_MODE_CHOICES,
    DXL_NO_LOAD_RPM,
    DXL_OPERATING_MODES,
    DXL_REGISTER_RANGE,
    DXL_SOURCE,
    DXL_TICK_RANGES,
    DXL_TICKS_PER_REV,
    DXL_VELOCITY_UNIT_RAD_S,
    DXL_VELOCITY_UNIT_RPM,
    DynamixelMotor,
    DynamixelSettings,
    dxl_velocity_to_rad_s,
    dynamixel_velocity_limit,
    rad_s_to_dxl_velocity,
    resolve_mode,
    tick_range_violations,
    tick_values,
    ticks_to_values,
    to_ticks,
    values_to_ticks,
)
from .dynamixel_ticks import (
    TICKS_FORMAT,
    TickCurves,
    read_dynamixel_csv,
    read_dynamixel_json,
    write_dynamixel_csv,
    write_dynamixel_json,
)
from .files import OutputError, check_not_input, check_output, open_output, read_text, write_bytes, write_text
from .gate import TickPlan, export_violations, plan_ticks, tick_violations

__all__ = [
    "CURVES_CSV_FORMAT",
    "CURVES_JSON_FORMAT",
    "C_HEADER_FORMAT",
    "DXL_CONVERSION",
    "DXL_GOAL_POSITION_ADDRESS",
    "DXL_MODE_CHOICES",
    "DXL_NO_LOAD_RPM",
    "DXL_OPERATING_MODES",
    "DXL_REGISTER_RANGE",
    "DXL_SOURCE",
    "DXL_TICKS_PER_REV",
    "DXL_TICK_RANGES",
    "DXL_VELOCITY_UNIT_RAD_S",
    "DXL_VELOCITY_UNIT_RPM",
    "FORMAT_VERSION",
    "TICKS_FORMAT",
    "WRITTEN_SUFFIXES",
    "CHeaderCurves",
    "CHeaderSettings",
    "DynamixelMotor",
    "DynamixelSettings",
    "OutputError",
    "TickCurves",
    "TickPlan",
    "WrittenCurves",
    "c_array_names",
    "check_not_input",
    "check_output",
    "curves_from_dict",
    "curves_to_dict",
    "dxl_velocity_to_rad_s",
    "dynamixel_velocity_limit",
    "export_violations",
    "open_output",
    "plain_csv_metadata_path",
    "plan_ticks",
    "quantised_allowance",
    "rad_s_to_dxl_velocity",
    "read_c_header",
    "read_csv",
    "read_dynamixel_csv",
    "read_dynamixel_json",
    "read_json",
    "read_text",
    "read_written",
    "resolution_text",
    "resolve_mode",
    "tick_range_violations",
    "tick_values",
    "tick_violations",
    "ticks_to_values",
    "to_ticks",
    "values_to_ticks",
    "write_bytes",
    "write_c_header",
    "write_csv",
    "write_dynamixel_csv",
    "write_dynamixel_json",
    "write_json",
    "write_plain_csv",
    "write_text",
    "written_violations",
]
