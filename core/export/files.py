"""Writing output files safely, and reading input text files strictly.

Every file looprig writes goes through :func:`write_text`, :func:`write_bytes`
or :func:`open_output`; they share one output policy:

* **Regular files only.** If the path exists and is a folder, a device
  (``/dev/full``), a FIFO or a socket, the write is refused before anything is
  opened.
* **A symbolic link is written through**: the new content atomically replaces
  the file the link points to, and the link stays (a dangling link creates its
  target). This is what ``open(path, "w")`` would do, without its risks.
* **Never onto an input**: pass the run's input files as ``inputs``; an output
  that is one of them (the same resolved path, or the same file through a hard
  link) is refused (:func:`check_not_input`).
* **Atomic**: the content goes to a hidden temporary file in the destination's
  folder (``.NAME.<random>.tmp``), is flushed and fsynced, then renamed over
  the destination, and the folder is fsynced. Until the rename the previous
  file is untouched; on any failure (a full disk, no permission, an exception
  in the caller's ``with`` block) the temporary file is removed and the
  previous file survives intact. A process killed mid-write leaves at most a
  hidden ``.tmp`` file, never a truncated ``NAME``. Other hard links to the
  previous file keep the previous content.
* A replaced file keeps its permission bits; an existing file that is not
  writable is refused rather than silently replaced.
* **Every failure is one line**: an :class:`OutputError` (a
  :class:`~looprig.core.errors.LooprigError`) naming the path and the problem
  ("folder ... does not exist", "No space left on device", ...).

Reading: :func:`read_text` reads a regular file as UTF-8 and turns a missing
file, a folder, a FIFO or bytes that are not UTF-8 into one error line naming
the file (and the line and column of the first bad byte).
"""

import io
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LooprigError

#: Largest input file :func:`read_text` reads by default [bytes].
MAX_INPUT_BYTES = 1 << 30


class OutputError(LooprigError, ValueError):
    """An output file cannot be written; ``path`` is the path asked for, the message one line."""

    def __init__(self, path, problem: str):
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"cannot write {self.path!r}: {problem}")


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _problem(exc: OSError) -> str:
    """The OS's reason in words, without the path (the caller names it)."""
    return exc.strerror or type(exc).__name__


def check_not_input(out, *inputs) -> None:
    """Raise :class:`OutputError` if ``out`` is one of ``inputs`` (None entries are skipped).

    Two paths are the same file if they resolve to the same path (symbolic
    links followed) or, when both exist, are the same device and inode (hard
    links, bind mounts).
    """
    out_real = os.path.realpath(out)
    try:
        out_stat = os.stat(out_real)
    except OSError:
        out_stat = None
    for source in inputs:
        if source is None:
            continue
        same = os.path.realpath(source) == out_real
        if not same and out_stat is not None:
            try:
                same = os.path.samestat(out_stat, os.stat(source))
            except OSError:
                same = False
        if same:
            raise OutputError(out, f"it is the input file {os.fspath(source)!r}; choose another output path")


def check_output(path, inputs=()) -> Path:
    """The regular file a write to ``path`` creates or replaces (symbolic links followed).

    Refuses (:class:`OutputError`) a folder, device, FIFO or socket, a path in
    a missing folder, an existing file that is not writable, and any of
    ``inputs`` (:func:`check_not_input`). Nothing is written.
    """
    text = os.fspath(path)
    if not text or text.endswith(("/", os.sep)):
        raise OutputError(path, "the path names a folder, not a file")
    check_not_input(path, *inputs)
    target = Path(os.path.realpath(text))
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        folder = target.parent
        try:
            folder_stat = os.stat(folder)
        except OSError as exc:
            reason = "does not exist" if isinstance(exc, FileNotFoundError) else _problem(exc)
            raise OutputError(path, f"folder {os.fspath(folder)!r} {reason}") from None
        if not stat.S_ISDIR(folder_stat.st_mode):
            raise OutputError(path, f"{os.fspath(folder)!r} is not a folder") from None
        return target
    except OSError as exc:
        raise OutputError(path, _problem(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(path, f"it is {_kind(st.st_mode)}; looprig writes regular files only")
    if not os.access(target, os.W_OK):
        raise OutputError(path, "the existing file is read-only")
    return target


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: not every system can open folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def open_output(path, mode: str = "w", *, inputs=()) -> Iterator[io.IOBase]:
    """Open ``path`` for writing under the output policy (see the module doc).

    ``mode`` is ``"w"`` (text, UTF-8, newlines written as given) or ``"wb"``.
    Write into the yielded file inside the ``with`` block; the destination is
    replaced only when the block ends without an exception. Use it for
    writers that want a file object (``matplotlib``'s ``savefig``,
    ``numpy.savez``)::

        with open_output(outdir / "curves.png", "wb", inputs=[curves_path]) as f:
            figure.savefig(f, format="png")
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    target = check_output(path, inputs)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        previous = os.stat(target)
    except OSError:
        previous = None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise OutputError(path, _problem(exc)) from None
    try:
        with os.fdopen(fd, "wb") as raw:
            if previous is not None:
                os.fchmod(raw.fileno(), stat.S_IMODE(previous.st_mode))
            if mode == "w":
                text = io.TextIOWrapper(raw, encoding="utf-8", newline="", write_through=True)
                yield text
                text.flush()
                text.detach()
            else:
                yield raw
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, LooprigError):
            raise OutputError(path, _problem(exc)) from None
        raise
    _fsync_folder(target.parent)


def write_bytes(path, data: bytes, *, inputs=()) -> Path:
    """Write ``data`` to ``path`` under the output policy; returns ``path`` as a Path.

    Raises :class:`OutputError` (one line) on any refusal or OS failure; the
    previous file at ``path``, if any, is then left as it was.
    """
    with open_output(path, "wb", inputs=inputs) as f:
        fd = f.fileno()
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]
    return Path(path)


def write_text(path, text: str, *, inputs=()) -> Path:
    """Write ``text`` as UTF-8 to ``path`` under the output policy (see :func:`write_bytes`)."""
    return write_bytes(path, text.encode("utf-8"), inputs=inputs)


def read_text(
    path, what: str, error: type[LooprigError] = LooprigError, max_bytes: int = MAX_INPUT_BYTES
) -> str:
    """The UTF-8 text of the regular file ``path``, or ``error`` (one line naming ``what`` and the file).

    Refuses folders, devices and FIFOs (reading a FIFO could wait forever),
    files over ``max_bytes``, and bytes that are not UTF-8 (naming the line
    and column of the first one). A leading byte-order mark is dropped and
    line ends become ``"\\n"``.
    """
    where = f"{what} {os.fspath(path)!r}"
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {where}: it is {_kind(st.st_mode)}, not a file")
        if st.st_size > max_bytes:
            raise error(f"cannot read {where}: {st.st_size} bytes, more than the {max_bytes} bytes allowed")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {where}: {_problem(exc)}") from None
    if len(data) > max_bytes:
        raise error(f"cannot read {where}: more than the {max_bytes} bytes allowed")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            f"{where} is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column}"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text mode reads
