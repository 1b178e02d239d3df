"""Curves as JSON in SI units (format ``looprig-curves``, version 1).

``{"format", "version", "time_unit": "s", "rate_hz" (null if the times are not
uniform), "frame_count", "times": [...], "actuators": [{"name", "unit",
"velocity_unit", "acceleration_unit", "hardware_id", "lower", "upper",
"velocity_limit", "acceleration_limit", "values": [...]}], "violations":
[{"actuator", "quantity", "start_time", "end_time", "peak", "limit",
"peak_time", "unit"}], "audio" (optional): {"path", "offset_s"}}``; ``null`` = no
limit. ``audio`` is the clip's sound: its file and the clip time [s] its first sample
plays at (:func:`read_audio`; ``looprig play --audio`` plays it with the motion).
"""

import json
from collections.abc import Mapping, Sequence

import numpy as np

from ..curves.actuator_curves import ActuatorCurves, derivative_unit
from ..curves.limit_checks import LimitCheckSettings
from ..curves.violations import Violation
from ..errors import CurvesError
from .common import (
    FORMAT_VERSION,
    check_derivatives,
    check_format,
    finite_array,
    finite_or_none,
    hardware_ids,
    limit_from,
    plain_id,
    read_text,
    reading,
    reading_document,
    string_list,
)
from .files import write_text
from .gate import gate

CURVES_JSON_FORMAT = "looprig-curves"


def curves_to_dict(
    curves: ActuatorCurves, violations: Sequence[Violation] = (), audio: Mapping | None = None
) -> dict:
    """The ``looprig-curves`` version 1 document of ``curves`` (JSON-ready); ``audio``: the
    clip's sound, ``{"path": str, "offset_s": seconds}``."""
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
    } | ({} if audio is None else {"audio": audio_from_dict(audio, "audio")})


def audio_from_dict(audio, what: str) -> dict:
    """``{"path": non-empty str, "offset_s": finite float}`` checked; CurvesError naming ``what``."""
    path, offset = (
        (audio.get("path"), audio.get("offset_s", 0.0)) if isinstance(audio, Mapping) else (None, None)
    )
    number = isinstance(offset, int | float) and not isinstance(offset, bool) and np.isfinite(offset)
    if not (isinstance(path, str) and path and number and set(audio) <= {"path", "offset_s"}):
        raise CurvesError(f"{what}: expected {{'path': sound file, 'offset_s': seconds}}, got {audio!r:.80}")
    return {"path": path, "offset_s": float(offset)}


def curves_from_dict(doc: Mapping, what: str = "curves document") -> ActuatorCurves:
    """Curves from a ``looprig-curves`` document; its violations become carried ones.

    Raises :class:`~looprig.core.curves.actuator_curves.CurvesError` naming ``what`` and the
    field at fault.
    """
    with reading_document(what):
        if not isinstance(doc, Mapping):
            raise CurvesError(f"{what}: expected a JSON object")
        check_format(doc, CURVES_JSON_FORMAT, what)
        acts = doc.get("actuators")
        if not isinstance(acts, list) or not acts or not all(isinstance(a, Mapping) for a in acts):
            raise CurvesError(f"{what}: 'actuators' must be a non-empty list of objects")
        records = doc.get("violations", [])
        if not isinstance(records, list):
            raise CurvesError(f"{what}: 'violations' must be a list")
        times = finite_array(doc.get("times"), what, "times")
        if times.ndim != 1:
            raise CurvesError(f"{what}: 'times' must be a list of numbers")
        columns = []
        for i, a in enumerate(acts):
            column = finite_array(a.get("values"), what, f"actuators[{i}].values")
            if column.shape != times.shape:
                raise CurvesError(f"{what}: actuator {i + 1} has {column.size} values for {times.size} times")
            columns.append(column)
        violations = []
        for i, record in enumerate(records):
            try:
                violations.append(Violation.from_dict(record))
            except CurvesError as exc:
                raise CurvesError(f"{what}: violations[{i}]: {exc}") from None

        def limits(key: str, default: float) -> list[float]:
            return [limit_from(a.get(key), default, f"actuators[{i}].{key}") for i, a in enumerate(acts)]

        curves = ActuatorCurves(
            times=times,
            values=np.column_stack(columns),
            names=tuple(string_list([a.get("name") for a in acts], "actuators[].name")),
            units=tuple(string_list([a.get("unit") for a in acts], "actuators[].unit")),
            lower=limits("lower", -np.inf),
            upper=limits("upper", np.inf),
            velocity_limit=limits("velocity_limit", np.inf),
            acceleration_limit=limits("acceleration_limit", np.inf),
            hardware_ids=hardware_ids([a.get("hardware_id") for a in acts], "actuators[].hardware_id"),
            carried_violations=tuple(violations),
        )
        check_derivatives(curves)

    return curves


def write_json(
    curves: ActuatorCurves,
    path,
    *,
    allow_violations: bool = False,
    check: LimitCheckSettings | None = None,
    audio: Mapping | None = None,
) -> list[Violation]:
    """Write ``curves`` as JSON (format ``looprig-curves`` version 1); see the module doc."""
    violations = gate(path, curves, allow_violations, check)
    text = json.dumps(curves_to_dict(curves, violations, audio), indent=1, allow_nan=False)
    write_text(path, text + "\n")
    return violations


def read_json(path) -> ActuatorCurves:
    """Curves from a file written by :func:`write_json`."""
    with reading(path, "curves JSON") as where:
        try:
            doc = json.loads(read_text(path, "curves JSON"))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise CurvesError(f"{where} is not valid JSON: {exc}") from None
        return curves_from_dict(doc, where)


def read_audio(path) -> dict | None:
    """The ``audio`` entry (``{"path", "offset_s"}``) of a curves JSON, None without one."""
    with reading(path, "curves JSON") as where:
        try:
            doc = json.loads(read_text(path, "curves JSON"))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise CurvesError(f"{where} is not valid JSON: {exc}") from None
        audio = doc.get("audio") if isinstance(doc, Mapping) else None
        return None if audio is None else audio_from_dict(audio, f"{where}: audio")
