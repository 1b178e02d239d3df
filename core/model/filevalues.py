"""How numbers cross the file boundary: one rule for unbounded limits.

JSON (and the other text formats looprig writes) has no infinity, so an
unbounded limit — a position range, velocity or acceleration limit that does
not exist — is written as ``null`` and read back as ``±inf``. Every reader and
writer of limits uses these two functions, so the rule is the same in every file.
"""

import math


def limit_to_file(value: float) -> float | None:
    """A limit as written to a file: the float, or None (``null``) when unbounded (±inf).

    NaN is no limit value and raises ValueError.
    """
    value = float(value)
    if math.isnan(value):
        raise ValueError("a limit cannot be NaN")
    return value if math.isfinite(value) else None


def limit_from_file(value: float | None, unbounded: float = math.inf) -> float:
    """A limit as read from a file: ``unbounded`` (``inf`` or ``-inf``) for None, else the float.

    Range checks (finite, sign) stay with the reader, which knows the file and field.
    """
    return unbounded if value is None else float(value)
