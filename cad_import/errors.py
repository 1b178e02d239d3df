"""Errors and warnings of the file importers.

Every problem a file can cause is a :class:`FileFormatError` (a
:class:`~looprig.core.errors.LooprigError`), whose message names the file, the
element (and its line, where the parser reports one) and the problem. Problems
that do not stop the import (a mesh that is not watertight, an MJCF feature
looprig cannot express) are issued as :class:`FileFormatWarning`.
"""

import os

from ..core.errors import LooprigError


class FileFormatError(LooprigError, ValueError):
    """A mechanism file is malformed or asks for something looprig cannot do.

    Attributes: ``path`` (the file), ``element`` (a short description such as
    ``"joint 'knee'"`` or ``"<mesh filename=...>"``, or None), ``line`` (1-based
    line in the file, or None), ``problem`` (the bare message, made one line).
    """

    def __init__(self, path, problem: str, element: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        problem = " ".join(part.strip() for part in str(problem).splitlines() if part.strip())  # one line
        self.element = element
        self.line = line
        self.problem = problem
        where = self.path or "<input>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {element}: {problem}" if element else f"{where}: {problem}")


class FileFormatWarning(UserWarning):
    """Something in a mechanism file was approximated or left out; the message says what."""


#: Largest model description file read (URDF, MJCF and its includes, native JSON, YAML side
#: files) [bytes]; the largest public robot descriptions are a few MB.
MAX_MODEL_BYTES = 64 * 2**20
#: Largest mesh file read [bytes]: 256 MiB is some 5 million triangles of binary STL.
MAX_MESH_BYTES = 256 * 2**20


def check_file_size(path, limit: int, what: str = "file") -> None:
    """Refuse a file larger than ``limit`` bytes before reading it (FileFormatError).

    A path that cannot be stat'ed is left to the reader, which reports it.
    """
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return
    if size > limit:
        raise FileFormatError(
            path, f"{what} is {size / 2**20:.1f} MiB, above looprig's limit of {limit / 2**20:.0f} MiB"
        )
