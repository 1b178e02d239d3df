"""Limit violations: the record of one broken interval, merging them, and the refusal error.

A :class:`Violation` is what every limit check, export and report speaks of:
an actuator, a quantity (position, velocity, acceleration, or a hardware unit
such as ``"tick_range"``), the interval it is broken in and its worst sample.
"""

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import CurvesError, LooprigError

#: Quantities a limit check covers, in report order.
QUANTITIES = ("position", "velocity", "acceleration")


class LimitViolationError(LooprigError, ValueError):
    """Curves break an actuator limit, so nothing was written.

    violations: every broken interval (:class:`Violation`). path: the file not
    written, or None. overridable: True if the same call with the override
    (``allow_violations=True``) writes the file with the violations recorded;
    False if the values cannot be written at all (servo ticks beyond the
    register).

    The message is one line naming the first violations, and names no
    override of its own, because the override is spelled differently in each
    front end. A front end sets ``override_hint`` (the CLI
    ``"--allow-violations"``, the Blender add-on its checkbox) before showing
    the error; ``str()`` then ends with "; <hint> writes the file anyway, with
    the violations recorded in it" when the error is overridable.
    """

    def __init__(
        self,
        message: str,
        violations: Sequence["Violation"] = (),
        path=None,
        overridable: bool = True,
    ):
        super().__init__(message)
        self.message = message
        self.violations = tuple(violations)
        self.path = None if path is None else os.fspath(path)
        self.overridable = overridable
        self.override_hint = ""

    def __str__(self) -> str:
        if self.override_hint and self.overridable:
            return (
                f"{self.message}; {self.override_hint} writes the file anyway, "
                "with the violations recorded in it"
            )
        return self.message


@dataclass(frozen=True)
class Violation:
    """One interval in which an actuator breaks a limit.

    actuator: the actuator's name. quantity: ``"position"``, ``"velocity"`` or
    ``"acceleration"`` (hardware exports add ``"tick_range"``, in motor ticks).
    start_time, end_time: first and last violating sample [s] (equal for a
    single sample). peak: the signed value that exceeds its bound the most,
    sampled at ``peak_time`` [s]. limit: the bound it breaks, signed like the
    peak (``upper`` or ``lower`` for positions, ``+limit`` or ``-limit`` for
    rates). unit: unit of ``peak`` and ``limit`` ("rad/s", "m", "tick"...).
    """

    actuator: str
    quantity: str
    start_time: float
    end_time: float
    peak: float
    limit: float
    peak_time: float = math.nan
    unit: str = ""

    @property
    def excess(self) -> float:
        """How far ``peak`` lies beyond ``limit`` (positive), in ``unit``."""
        return abs(self.peak - self.limit)

    def describe(self) -> str:
        """One line for error messages and reports."""
        unit = f" {self.unit}" if self.unit else ""
        when = (
            f"at t={self.start_time:.4f} s"
            if self.start_time == self.end_time
            else f"from t={self.start_time:.4f} s to {self.end_time:.4f} s"
        )
        return (
            f"actuator {self.actuator!r}: {self.quantity} {self.peak:.6g}{unit} beyond limit "
            f"{self.limit:.6g}{unit} {when}"
        )

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (field names as keys)."""
        return {
            "actuator": self.actuator,
            "quantity": self.quantity,
            "start_time": float(self.start_time),
            "end_time": float(self.end_time),
            "peak": float(self.peak),
            "limit": float(self.limit),
            "peak_time": None if math.isnan(self.peak_time) else float(self.peak_time),
            "unit": self.unit,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "Violation":
        """The violation of a record written by :meth:`to_dict`; CurvesError naming the bad field."""
        if not isinstance(data, Mapping):
            raise CurvesError(f"a violation record must be an object, got {data!r:.80}")
        fields = {}
        for key in ("actuator", "quantity", "unit"):
            value = data.get(key, "") if key == "unit" else data.get(key)
            if not isinstance(value, str):
                raise CurvesError(f"violation record: {key!r} must be a string, got {value!r:.80}")
            fields[key] = value
        for key in ("start_time", "end_time", "peak", "limit", "peak_time"):
            value = data.get(key)
            if key == "peak_time" and value is None:
                fields[key] = math.nan
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise CurvesError(f"violation record: {key!r} must be a finite number, got {value!r:.80}")
            fields[key] = float(value)
        return cls(**fields)


def merge_violations(*groups: Iterable[Violation], order: Sequence[str] = ()) -> list[Violation]:
    """Union of violation lists: overlapping intervals of one actuator and quantity merge.

    The merged interval spans both; its peak and limit are those of the larger
    excess. The result is sorted by start time, then by actuator (in ``order``
    if given, else by name) and quantity, and within one actuator and quantity
    the intervals are disjoint.
    """
    rank = {name: i for i, name in enumerate(order)}
    quantity_rank = {q: i for i, q in enumerate((*QUANTITIES, "tick_range"))}
    by_key: dict[tuple[str, str], list[Violation]] = {}
    for group in groups:
        for v in group:
            by_key.setdefault((v.actuator, v.quantity), []).append(v)
    merged: list[Violation] = []
    for items in by_key.values():
        items.sort(key=lambda v: (v.start_time, v.end_time))
        current = items[0]
        for v in items[1:]:
            if v.start_time <= current.end_time:
                top = v if v.excess > current.excess else current
                current = replace(
                    top,
                    start_time=current.start_time,
                    end_time=max(current.end_time, v.end_time),
                )
            else:
                merged.append(current)
                current = v
        merged.append(current)
    merged.sort(
        key=lambda v: (
            v.start_time,
            rank.get(v.actuator, len(rank)),
            v.actuator,
            quantity_rank.get(v.quantity, len(quantity_rank)),
            v.quantity,
        )
    )
    return merged


def violations_from_excess(
    actuator: str,
    quantity: str,
    times: np.ndarray,
    values: np.ndarray,
    excess: np.ndarray,
    limits: np.ndarray,
    unit: str,
) -> list[Violation]:
    """Runs of consecutive samples with ``excess > 0``, one :class:`Violation` each.

    times, values, excess, limits: (F,) arrays; ``limits[f]`` is the signed
    bound that sample f is measured against.
    """
    bad = excess > 0.0
    if not bad.any():
        return []
    edges = np.diff(np.concatenate([[0], bad.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1) - 1  # inclusive
    out = []
    for a, b in zip(starts, stops, strict=True):
        k = a + int(np.argmax(excess[a : b + 1]))
        out.append(
            Violation(
                actuator=actuator,
                quantity=quantity,
                start_time=float(times[a]),
                end_time=float(times[b]),
                peak=float(values[k]),
                limit=float(limits[k]),
                peak_time=float(times[k]),
                unit=unit,
            )
        )
    return out


def summarize_violations(violations: Sequence[Violation], first: int = 3) -> str:
    """One line: the ``first`` violations, then "and N more" (for error messages)."""
    parts = [v.describe() for v in violations[:first]]
    if len(violations) > first:
        parts.append(f"and {len(violations) - first} more")
    return "; ".join(parts)


def format_violations(violations: Sequence[Violation], max_lines: int = 20) -> str:
    """Multi-line listing of violations, at most ``max_lines`` (then a count of the rest)."""
    lines = [v.describe() for v in violations[:max_lines]]
    if len(violations) > max_lines:
        lines.append(f"... and {len(violations) - max_lines} more")
    return "\n".join(lines)
