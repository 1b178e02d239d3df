"""The refusal gate every curve export passes before it writes.

:func:`gate` collects the violations an export would record (the curves'
limits through :func:`~looprig.core.curves.all_violations`, plus any the
format adds, such as a servo's tick range) and raises
:class:`~looprig.core.curves.LimitViolationError` unless the caller allows
them; nothing is written then.
"""

import os
from collections.abc import Sequence

from ..curves import (
    ActuatorCurves,
    LimitCheckSettings,
    LimitViolationError,
    Violation,
    all_violations,
    format_violations,
    merge_violations,
)


def gate(
    path,
    curves: ActuatorCurves,
    allow_violations: bool,
    check: LimitCheckSettings | None,
    extra: Sequence[Violation] = (),
) -> list[Violation]:
    """All violations to record, or :class:`LimitViolationError` (nothing written)."""
    violations = merge_violations(all_violations(curves, check), extra, order=curves.names)
    if violations and not allow_violations:
        raise LimitViolationError(
            f"refusing to write {os.fspath(path)!r}: the curves break {len(violations)} "
            f"actuator limit(s) (pass allow_violations=True to write them anyway, with the "
            f"violations recorded in the file):\n{format_violations(violations)}",
            violations,
        )
    return violations
