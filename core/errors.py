"""Exceptions raised by looprig.

Every error that bad input can cause is a :class:`LooprigError`, so callers
(the CLI, the Blender add-on) can catch one type and show its message.
Messages name the object at fault and, where there is a choice, the valid ones.
"""


class LooprigError(Exception):
    """Root of all looprig errors."""


class LooprigWarning(UserWarning):
    """Root of the warnings looprig issues for people: something was approximated or left out.

    ``path`` (the file concerned, or None), ``obj`` (the object in it, e.g.
    ``"actuator 'knee'"``, or None) and ``problem`` (one line) let a front end
    print ``looprig: warning: FILE: object: problem`` (:meth:`one_line`) instead
    of Python's default warning format.
    """

    def __init__(self, problem: str, path=None, obj: str | None = None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.obj = obj
        super().__init__(": ".join(p for p in (self.path, obj, problem) if p))

    def one_line(self, program: str = "looprig") -> str:
        """``<program>: warning: FILE: object: problem`` (absent parts left out)."""
        return f"{program}: warning: {self}"


class CurvesError(LooprigError, ValueError):
    """Actuator curves or a curves file are malformed: wrong shape, not finite, unknown actuator..."""


class MechanismError(LooprigError, ValueError):
    """A mechanism is malformed: unknown body, disconnected graph, bad axis..."""


class SolverError(LooprigError, RuntimeError):
    """A solve failed to converge; ``result`` holds the last iterate."""

    def __init__(self, message: str, result=None):
        super().__init__(message)
        self.result = result


class TargetError(LooprigError, ValueError):
    """IK targets are malformed: wrong shape, not finite, unknown frame..."""


def did_you_mean(kind: str, name: str, valid, plural: str | None = None) -> str:
    """Format "no <kind> 'name'; <kinds> are: a, b, c" for error messages.

    ``plural`` defaults to :func:`plural_of` ``kind`` (its last word made plural).
    """
    names = ", ".join(sorted(valid)) or "(none)"
    return f"no {kind} {name!r}; {plural or plural_of(kind)} are: {names}"


def plural_of(noun: str) -> str:
    """The English plural of a noun phrase's last word: "mapping key" -> "mapping keys",
    "body" -> "bodies", "axis" -> "axes", "mesh" -> "meshes"."""
    if noun.endswith("is"):
        return noun[:-2] + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"
