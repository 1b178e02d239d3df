"""A run's whole set of outputs: written aside, moved into place together, or marked stale.

Single files go through :mod:`looprig.core.export.files` (regular files only,
symbolic links written through, never onto an input, atomic, one-line
:class:`OutputError`). On top of it, a run that writes several files
(``retarget``, a batch job) uses a :class:`StagedSet`:

* the files are written into a staging folder inside the destination
  (``.looprig-staging-<random>``) and moved into place only when the run succeeds;
  the report (``report.json``) is moved last, so a folder without it holds no
  complete run (a run killed while moving leaves no report);
* a run that fails or is refused after it started writing renames the outputs an
  earlier run left there to ``NAME.stale`` (kept, but no longer under the name
  that ``looprig check``, ``looprig play`` or a batch resume would pick up);
* a successful run marks stale the earlier outputs it did not write again, so
  the folder holds one run's files and no mix.
"""

import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from .core.export.files import OutputError, check_not_input, check_output, write_bytes, write_text

__all__ = ["STAGING_PREFIX", "STALE_SUFFIX", "OutputError", "StagedSet", "check_output", "output_folder"]
__all__ += ["write_bytes", "write_text"]

STAGING_PREFIX = ".looprig-staging-"
STALE_SUFFIX = ".stale"


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__


def output_folder(path, inputs: Iterable = ()) -> Path:
    """Create the output folder ``path`` (and its parents); refuse what is not a folder."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(path, "it is not a folder; give a folder for the outputs")
    check_not_input(path, *inputs)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(path, f"cannot create the output folder: {_reason(error)}") from None
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
            raise OutputError(self.folder, _reason(error)) from None

    def path(self, name: str) -> Path:
        """Where to write ``name`` during the run (inside the staging folder)."""
        return self.staging / name

    def commit(self) -> list[Path]:
        """Move every staged file into place (``last`` last); returns the final paths."""
        staged = sorted(self.staging.iterdir(), key=lambda p: p.name == self.last)
        targets = [check_output(self.folder / p.name, self.inputs) for p in staged]
        try:
            (self.folder / self.last).unlink(missing_ok=True)  # the old set is incomplete from here on
            moved = []
            for source, target in zip(staged, targets, strict=True):
                os.replace(source, target)
                moved.append(self.folder / source.name)
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
                raise OutputError(self.folder / name, f"cannot mark as stale: {_reason(error)}") from None

    def _mark_stale(self, name: str) -> None:
        old = self.folder / name
        if old.is_file() and not old.is_symlink():
            os.replace(old, old.with_name(name + STALE_SUFFIX))
