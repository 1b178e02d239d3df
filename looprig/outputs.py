"""The output policy of every command: regular files only, never onto an input, whole sets or nothing.

* A file is written to a temporary file beside it and renamed into place, so a
  reader sees the old file or the new one, never half of one.
* The destination must be a regular file or absent: a directory, device, FIFO
  or socket is refused, and so is a symbolic link (looprig does not decide for
  you whether the link or its target is meant: give the real path).
* A command never writes onto one of its inputs.
* A run that writes several files (``retarget``) writes them into a staging
  folder inside the destination and moves them into place only when the run
  succeeds; ``report.json`` is moved last, so a folder without it holds no
  complete run. A run that fails or is refused after it started writing renames
  the outputs an earlier run left there to ``NAME.stale`` (kept, but no longer
  under the name that ``looprig check`` or a player would pick up) and writes
  its own report as ``report.refused.json``.

Every failure is an :class:`OutputError`: one line naming the path and the problem.
"""

import os
import shutil
import stat
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from .core import LooprigError

STAGING_PREFIX = ".looprig-staging-"
STALE_SUFFIX = ".stale"


class OutputError(LooprigError, OSError):
    """An output cannot be written where asked (one line: the path and why)."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def check_destination(path, inputs: Iterable = ()) -> Path:
    """``path`` if a regular file may be written there, else :class:`OutputError`."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {_reason(error)}") from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise OutputError(f"{path}: is a symbolic link; give the real path to write")
        if stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{path}: is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(f"{path}: is not a regular file (a device, FIFO or socket)")
    for source in inputs:
        if _same_file(path, Path(source)):
            raise OutputError(f"{path}: is an input of this command; choose another output")
    if not path.parent.is_dir():
        raise OutputError(f"{path}: the folder {str(path.parent)!r} does not exist")
    return path


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_bytes(path, data: bytes, inputs: Iterable = ()) -> Path:
    """Write ``data`` atomically to the regular file ``path`` (see the module docstring)."""
    path = check_destination(path, inputs)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "xb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write: {_reason(error)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path, text: str, inputs: Iterable = ()) -> Path:
    """Write ``text`` (UTF-8) atomically to the regular file ``path``."""
    return write_bytes(path, text.encode("utf-8"), inputs)


def output_folder(path, inputs: Iterable = ()) -> Path:
    """Create the output folder ``path`` (and its parents); refuse what is not a folder."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutputError(f"{path}: is not a folder; give a folder for the outputs")
    for source in inputs:
        if _same_file(path, Path(source)):
            raise OutputError(f"{path}: is an input of this command; choose another output folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{path}: cannot create the output folder: {_reason(error)}") from None
    return path


class StagedSet:
    """A run's outputs, written into a staging folder and moved into ``folder`` together.

    names: every file name a run of this kind can write (the earlier run's files of
    these names are replaced on success and marked stale on failure); ``last``: the
    name moved last, whose presence says the set is complete.
    """

    def __init__(self, folder, names: Sequence[str], last: str, inputs: Iterable = ()):
        self.folder = output_folder(folder, inputs)
        self.names, self.last = tuple(names), last
        self.inputs = [Path(p) for p in inputs]
        try:
            self.staging = Path(self.folder / f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}")
            self.staging.mkdir()
        except OSError as error:
            raise OutputError(f"{self.folder}: cannot write in the output folder: {_reason(error)}") from None

    def path(self, name: str) -> Path:
        """Where to write ``name`` during the run (inside the staging folder)."""
        return self.staging / name

    def commit(self) -> list[Path]:
        """Move every staged file into place (``last`` last); returns the final paths."""
        staged = sorted((p for p in self.staging.iterdir()), key=lambda p: p.name == self.last)
        for name in self.names:
            if name not in {p.name for p in staged}:
                continue
            check_destination(self.folder / name, self.inputs)
        try:
            (self.folder / self.last).unlink(missing_ok=True)  # the old set is incomplete from here on
            moved = []
            for source in staged:
                target = self.folder / source.name
                os.replace(source, target)
                moved.append(target)
            for name in self.names:  # what this run did not write is not part of its set
                if name not in {p.name for p in moved}:
                    self._mark_stale(name)
        except OSError as error:
            raise OutputError(
                f"{self.folder}: cannot move the outputs into place: {_reason(error)}"
            ) from None
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)
        return moved

    def abort(self) -> None:
        """Drop the staged files and mark the earlier run's outputs stale (see the module docstring)."""
        shutil.rmtree(self.staging, ignore_errors=True)
        for name in self.names:
            try:
                self._mark_stale(name)
            except OSError as error:
                raise OutputError(f"{self.folder / name}: cannot mark as stale: {_reason(error)}") from None

    def _mark_stale(self, name: str) -> None:
        old = self.folder / name
        if old.is_file() and not old.is_symlink():
            os.replace(old, old.with_name(name + STALE_SUFFIX))
