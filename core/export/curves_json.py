"""Curves as JSON in SI units (format ``looprig-curves``, version 1).

``{"format", "version", "time_unit": "s", "rate_hz" (null if the times are not
uniform), "frame_count", "times": [...], "actuators": [{"name", "unit",
"velocity_unit", "acceleration_unit", "hardware_id", "lower", "upper",
"velocity_limit", "acceleration_limit", "values": [...]}], "violations":
[{"actuator", "quantity", "start_time", "end_time", "peak", "limit",
"peak_time", "unit"}]}``; ``null`` = no limit.
"""

import json
import os
from collections.abc import Mapping, Sequence

import numpy as np

from ..curves import ActuatorCurves, CurvesError, LimitCheckSettings, Violation, derivative_unit
from .common import FORMAT_VERSION, check_format, finite_or_none, limit_from, plain_id, read_text
from .files import write_text
from .gate import gate

CURVES_JSON_FORMAT = "looprig-curves"


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
                "hardware_id": plain_id(curves.hardware_ids[a]),
                "lower": finite_or_none(curves.lower[a]),
                "upper": finite_or_none(curves.upper[a]),
                "velocity_limit": finite_or_none(curves.velocity_limit[a]),
                "acceleration_limit": finite_or_none(curves.acceleration_limit[a]),
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
    check_format(doc, CURVES_JSON_FORMAT, what)
    try:
        acts = doc["actuators"]
        return ActuatorCurves(
            times=doc["times"],
            values=np.array([a["values"] for a in acts], dtype=float).T.reshape(len(doc["times"]), len(acts)),
            names=tuple(a["name"] for a in acts),
            units=tuple(a["unit"] for a in acts),
            lower=[limit_from(a.get("lower"), -np.inf) for a in acts],
            upper=[limit_from(a.get("upper"), np.inf) for a in acts],
            velocity_limit=[limit_from(a.get("velocity_limit"), np.inf) for a in acts],
            acceleration_limit=[limit_from(a.get("acceleration_limit"), np.inf) for a in acts],
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
    violations = gate(path, curves, allow_violations, check)
    text = json.dumps(curves_to_dict(curves, violations), indent=1, allow_nan=False)
    write_text(path, text + "\n")
    return violations


def read_json(path) -> ActuatorCurves:
    """Curves from a file written by :func:`write_json`."""
    what = f"curves JSON {os.fspath(path)!r}"
    try:
        doc = json.loads(read_text(path, "curves JSON"))
    except json.JSONDecodeError as exc:
        raise CurvesError(f"{what} is not valid JSON: {exc}") from None
    return curves_from_dict(doc, what)
