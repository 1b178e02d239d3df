"""Errors and warnings of the file importers.

Every problem a file can cause is a :class:`FileFormatError` (a
:class:`~looprig.core.errors.LooprigError`), whose message names the file, the
element (and its line, where the parser reports one) and the problem. Problems
that do not stop the import (a mesh that is not watertight, an MJCF feature
looprig cannot express) are issued as :class:`FileFormatWarning`.
"""

from ..core.errors import LooprigError


class FileFormatError(LooprigError, ValueError):
    """A mechanism file is malformed or asks for something looprig cannot do.

    Attributes: ``path`` (the file), ``element`` (a short description such as
    ``"joint 'knee'"`` or ``"<mesh filename=...>"``, or None), ``line`` (1-based
    line in the file, or None), ``problem`` (the bare message).
    """

    def __init__(self, path, problem: str, element: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.element = element
        self.line = line
        self.problem = problem
        where = self.path or "<input>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {element}: {problem}" if element else f"{where}: {problem}")


class FileFormatWarning(UserWarning):
    """Something in a mechanism file was approximated or left out; the message says what."""

