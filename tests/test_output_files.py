"""The output policy of looprig.core.export.files: regular files only, never onto an input,
atomic replace, every failure one line. Full disks are tested on a real tiny tmpfs (when the
test may mount one) and by an ENOSPC injected at the write call."""

import errno
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.errors import CurvesError
from looprig.core.export import (
    OutputError,
    check_not_input,
    open_output,
    read_text,
    write_bytes,
    write_csv,
    write_text,
)


def leftovers(folder: Path) -> list[str]:
    """Temporary files the writer may have left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def assert_one_line(exc: pytest.ExceptionInfo, *words: str) -> None:
    message = str(exc.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, message


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 64 KiB tmpfs mounted at a fresh folder (skips where mounting is not permitted)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_write_creates_and_replaces_leaving_no_temp(tmp_path):
    out = tmp_path / "a.txt"
    assert write_text(out, "first\n") == out
    write_text(out, "second ✓\n")
    assert out.read_text(encoding="utf-8") == "second ✓\n"
    assert leftovers(tmp_path) == []


def test_replaced_file_keeps_its_permissions(tmp_path):
    out = tmp_path / "a.txt"
    out.write_text("old")
    out.chmod(0o640)
    write_text(out, "new")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_refuses_a_folder_and_a_folder_name(tmp_path):
    with pytest.raises(OutputError) as exc:
        write_text(tmp_path, "x")
    assert_one_line(exc, str(tmp_path), "folder")
    with pytest.raises(OutputError):
        write_text(str(tmp_path / "sub") + "/", "x")


def test_refuses_a_fifo_without_waiting_and_keeps_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError) as exc:
        write_text(fifo, "x")
    assert_one_line(exc, "FIFO", "regular files only")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_refuses_a_socket(tmp_path):
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(OutputError) as exc:
            write_text(path, "x")
    assert_one_line(exc, "socket")


def test_refuses_a_device_and_keeps_the_node(tmp_path):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the null device's numbers
    except PermissionError:
        pytest.skip("creating a device node needs root")
    with pytest.raises(OutputError) as exc:
        write_csv(ActuatorCurves([0.0, 0.1], [0.0, 0.1], ("a",)), node)
    assert_one_line(exc, "device")
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_a_symlink_is_written_through_and_kept(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "created.csv")
    write_text(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "created.csv").read_text() == "made"
    assert leftovers(tmp_path) == []


def test_a_hard_link_elsewhere_keeps_the_previous_content(tmp_path):
    out = tmp_path / "a.txt"
    out.write_text("old")
    other = tmp_path / "b.txt"
    os.link(out, other)
    write_text(out, "new")
    assert (out.read_text(), other.read_text()) == ("new", "old")


def test_never_onto_an_input(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("input")
    link = tmp_path / "link.csv"
    link.symlink_to(source)
    hard = tmp_path / "hard.csv"
    os.link(source, hard)
    for out in (source, link, hard, tmp_path / "." / "in.csv"):
        with pytest.raises(OutputError) as exc:
            write_text(out, "output", inputs=[source])
        assert_one_line(exc, "input file")
        with pytest.raises(OutputError):
            check_not_input(out, None, source)
    assert source.read_text() == "input"
    write_text(tmp_path / "out.csv", "output", inputs=[source, None])
    check_not_input(tmp_path / "missing.csv", source)


def test_missing_folder_and_file_as_folder(tmp_path):
    with pytest.raises(OutputError) as exc:
        write_text(tmp_path / "no" / "such" / "a.csv", "x")
    assert_one_line(exc, "does not exist")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError) as exc:
        write_text(tmp_path / "file" / "a.csv", "x")
    assert_one_line(exc, "not a folder")


def test_an_exception_in_the_block_keeps_the_previous_file(tmp_path):
    out = tmp_path / "plot.png"
    out.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="renderer crashed"), open_output(out, "wb") as f:
        f.write(b"half a pic")
        raise RuntimeError("renderer crashed")
    assert out.read_bytes() == b"previous"
    assert leftovers(tmp_path) == []
    with open_output(out, "w") as f:
        f.write("text\r\n")
    assert out.read_bytes() == b"text\r\n"


def test_enospc_at_the_write_call_keeps_the_previous_file(tmp_path, monkeypatch):
    """A disk that fills mid-file: the first write call stores part of the data, the next fails."""
    out = tmp_path / "curves.csv"
    out.write_text("previous complete file\n")
    real_write = os.write
    calls = []

    def filling_disk(fd, data):
        if fd <= 2:  # the test runner's own output
            return real_write(fd, data)
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", filling_disk)
    with pytest.raises(OutputError) as exc:
        write_text(out, "x" * 100_000)
    monkeypatch.undo()
    assert len(calls) == 2
    assert_one_line(exc, str(out), "No space left on device")
    assert out.read_text() == "previous complete file\n"
    assert leftovers(tmp_path) == []


def test_a_full_tmpfs_keeps_the_previous_file(tiny_tmpfs):
    out = tiny_tmpfs / "curves.csv"
    write_text(out, "previous complete file\n")
    with pytest.raises(OutputError) as exc:
        write_bytes(out, b"y" * 1_000_000)
    assert_one_line(exc, "No space left on device")
    assert out.read_text() == "previous complete file\n"
    assert leftovers(tiny_tmpfs) == []
    curves = ActuatorCurves(np.arange(20_000) / 100.0, np.zeros(20_000), ("a",))
    with pytest.raises(OutputError):
        write_csv(curves, out)
    assert out.read_text() == "previous complete file\n"
    assert leftovers(tiny_tmpfs) == []


def test_a_read_only_file_system_keeps_the_previous_file(tiny_tmpfs):
    out = tiny_tmpfs / "report.json"
    write_text(out, "{}\n")
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    try:
        with pytest.raises(OutputError) as exc:
            write_text(out, '{"new": 1}\n')
        with pytest.raises(OutputError) as exc_new:
            write_text(tiny_tmpfs / "new.json", "{}")
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(tiny_tmpfs)], check=True)
    assert_one_line(exc, "read-only")
    assert_one_line(exc_new, "Read-only file system")
    assert out.read_text() == "{}\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write read-only files")
def test_a_read_only_file_is_refused(tmp_path):
    out = tmp_path / "a.txt"
    out.write_text("keep")
    out.chmod(0o444)
    with pytest.raises(OutputError) as exc:
        write_text(out, "x")
    assert_one_line(exc, "read-only")
    assert out.read_text() == "keep"


def test_read_text_names_the_bad_byte_and_refuses_non_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"time [s],a [rad]\n0.0,1.\xff\n")
    with pytest.raises(CurvesError) as exc:
        read_text(bad, "curves CSV", CurvesError)
    assert_one_line(exc, "bad.csv", "not UTF-8", "0xff", "line 2, column 7")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, word in ((fifo, "FIFO"), (tmp_path, "folder"), (tmp_path / "none", "No such file")):
        with pytest.raises(CurvesError) as exc:
            read_text(path, "curves CSV", CurvesError)
        assert_one_line(exc, word)
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 100)
    with pytest.raises(CurvesError, match="more than the 10 bytes"):
        read_text(big, "curves CSV", CurvesError, max_bytes=10)
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(b"\xef\xbb\xbfa\r\nb\rc\n")
    assert read_text(crlf, "curves CSV") == "a\nb\nc\n"


def test_a_process_killed_mid_write_leaves_the_previous_file(tmp_path):
    """kill -9 while the content is half written: the destination is the previous file, whole;
    only the hidden temporary file is left, which no reader takes for the output."""
    out = tmp_path / "curves.csv"
    out.write_text("previous complete file\n")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from looprig.core.export import open_output\n"
            "with open_output(sys.argv[1], 'wb') as f:\n"
            "    f.write(b'half of the new ' * 1000)\n"
            "    f.flush()\n"
            "    print('writing', flush=True)\n"
            "    time.sleep(60)\n",
            str(out),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout.readline() == b"writing\n"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        child.kill()
        child.stdout.close()
    assert out.read_text() == "previous complete file\n"
    (tmp,) = leftovers(tmp_path)
    assert tmp.startswith(".curves.csv.") and (tmp_path / tmp).stat().st_size == 16_000
