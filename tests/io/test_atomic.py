"""Tests for crfkit.io.atomic: the target holds the old content or the new, never half."""

from __future__ import annotations

import errno
import gzip
import os
import stat
import tempfile
import threading

import pytest

from crfkit.errors import CrfkitError, UsageError
from crfkit.io.atomic import atomic_output


def leftovers(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_success_replaces_the_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with atomic_output(target) as out:
        out.write("new é\n")
        assert target.read_text() == "old\n"  # nothing visible before the commit
    assert target.read_bytes() == "new é\n".encode()
    assert leftovers(tmp_path) == []


def test_binary_and_encoding(tmp_path):
    with atomic_output(tmp_path / "b.bin", binary=True) as out:
        out.write(b"\x00\xff")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"
    with atomic_output(tmp_path / "l.txt", encoding="latin-1") as out:
        out.write("café")
    assert (tmp_path / "l.txt").read_bytes() == b"caf\xe9"


@pytest.mark.parametrize("exception", [RuntimeError("boom"), KeyboardInterrupt()])
def test_exception_mid_write_keeps_the_old_file(tmp_path, exception):
    target = tmp_path / "model.bin"
    old = os.urandom(1000)
    target.write_bytes(old)
    with pytest.raises(type(exception)):
        with atomic_output(target, binary=True) as out:
            out.write(b"half of a new model" * 1000)
            raise exception
    assert target.read_bytes() == old
    assert leftovers(tmp_path) == []


def test_exception_with_text_and_gzip_layers_leaves_nothing(tmp_path):
    target = tmp_path / "out.txt.gz"
    with pytest.raises(ValueError):
        with atomic_output(target) as out:
            out.write("x" * 100_000)
            raise ValueError("stop")
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_gz_suffix_writes_compressed_deterministic_output(tmp_path):
    target = tmp_path / "labels.txt.gz"
    with atomic_output(target) as out:
        out.write("a B\n")
    first = target.read_bytes()
    assert gzip.decompress(first) == b"a B\n"
    with atomic_output(target) as out:
        out.write("a B\n")
    assert target.read_bytes() == first  # mtime 0: same content, same bytes


def test_dash_and_none_write_to_stdout_without_closing_it(capsys):
    with atomic_output("-") as out:
        out.write("to stdout\n")
    with atomic_output(None) as out:
        out.write("again\n")
    assert capsys.readouterr().out == "to stdout\nagain\n"
    with atomic_output("-") as out:
        out.write("still open\n")
    assert capsys.readouterr().out == "still open\n"


def test_binary_dash_writes_to_stdout_buffer(capsysbinary):
    with atomic_output("-", binary=True) as out:
        out.write(b"\x01\x02")
    assert capsysbinary.readouterr().out == b"\x01\x02"


def test_missing_directory_is_a_crfkit_error(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.txt"
    with pytest.raises(CrfkitError, match="cannot write: No such file or directory") as info:
        with atomic_output(target) as out:
            out.write("never")
    assert info.value.path == str(target)


def test_path_below_a_regular_file_is_a_crfkit_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CrfkitError, match="cannot write: Not a directory"):
        with atomic_output(blocker / "out.txt"):
            pass


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_directory_is_a_crfkit_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(CrfkitError, match="cannot write: Permission denied"):
            with atomic_output(locked / "out.txt"):
                pass
    finally:
        locked.chmod(0o700)


def test_permission_denied_is_reported_even_when_running_as_root(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "out.txt"
    with pytest.raises(CrfkitError) as info:
        with atomic_output(target):
            pass
    assert str(info.value) == f"{target}: cannot write: Permission denied"


def test_failed_commit_is_a_crfkit_error_and_keeps_the_old_file(tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "out.txt"
    target.write_text("old")
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(CrfkitError, match="cannot write: No space left on device"):
        with atomic_output(target) as out:
            out.write("new")
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_directory_as_target_is_a_crfkit_error(tmp_path):
    with pytest.raises(CrfkitError, match="Is a directory"):
        with atomic_output(tmp_path):
            pass


def test_permission_bits_are_kept_or_follow_the_umask(tmp_path):
    existing = tmp_path / "existing"
    existing.write_text("old")
    existing.chmod(0o640)
    with atomic_output(existing) as out:
        out.write("new")
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    old_umask = os.umask(0o027)
    try:
        with atomic_output(tmp_path / "fresh") as out:
            out.write("x")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o640


def test_symlink_survives_and_its_target_is_replaced(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with atomic_output(link) as out:
        out.write("new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def test_fifo_is_written_directly_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    with atomic_output(fifo) as out:
        out.write("through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_unknown_encoding_is_refused_before_creating_anything(tmp_path):
    with pytest.raises(UsageError, match="unknown encoding"):
        with atomic_output(tmp_path / "x.txt", encoding="no-such-codec"):
            pass
    assert os.listdir(tmp_path) == []


def _no_space(*args):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_at_write_time_is_a_crfkit_error_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(CrfkitError) as info:
        with atomic_output(target) as out:
            out.write("new")
            _no_space()  # what a write that reaches a full disk raises
    assert str(info.value) == f"{target}: cannot write: No space left on device"
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_device_that_refuses_writes_is_a_crfkit_error_and_is_refused_up_front():
    from crfkit.io.atomic import check_writable

    with pytest.raises(CrfkitError, match="/dev/full: cannot write: No space left on device"):
        with atomic_output("/dev/full") as out:
            out.write("x" * 100_000)
    with pytest.raises(CrfkitError, match="/dev/full: cannot write: No space left on device"):
        check_writable("/dev/full")
    check_writable(os.devnull)  # takes every write


def test_a_full_standard_output_is_named_as_such():
    with pytest.raises(CrfkitError, match="^<stdout>: cannot write: No space left on device$"):
        with atomic_output("-"):
            _no_space()


def test_the_writability_probe_does_not_open_a_fifo(tmp_path):
    from crfkit.io.atomic import check_writable

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_writable(fifo)  # opening it would wait for a reader: the test would hang
