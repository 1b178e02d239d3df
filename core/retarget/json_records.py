"""Reading the mapping file's JSON: objects, lists, numbers and records, with errors
(:class:`~looprig.core.errors.TargetError`) naming the file and the object."""

import dataclasses
from collections.abc import Mapping

from ..errors import TargetError


def plain_numbers(values) -> bool:
    """Whether ``values`` is a sequence of plain numbers (no booleans, strings, objects)."""
    return isinstance(values, list | tuple) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    )


def json_object(value, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise TargetError(f"{where} must be a JSON object, got {value!r}")
    return value


def json_list(value, where: str) -> list:
    if not isinstance(value, list | tuple):
        raise TargetError(f"{where} must be a list, got {value!r}")
    return list(value)


def record_from_json(cls, value, where: str):
    """``cls(**value)`` for a JSON object, with lists as tuples; errors name ``where``
    (``"<file>: <object>"``) and the missing or unknown keys."""
    fields = {f.name for f in dataclasses.fields(cls)}
    value = json_object(value, where)
    source, _, what = where.partition(": ")
    unknown = sorted(set(value) - fields)
    missing = sorted(f.name for f in dataclasses.fields(cls) if f.name not in value and _required(f))
    if unknown or missing:
        problem = f"unknown keys {unknown} (valid: {sorted(fields)})" if unknown else f"missing {missing}"
        raise TargetError(f"{source}: malformed mapping ({what}: {problem})")
    try:
        return cls(**_tuples(value))
    except (TypeError, ValueError) as error:
        raise TargetError(f"{source}: malformed mapping ({what}: {error})") from None


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _tuples(d: Mapping) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
