"""Atomic output files: a reader of ``path`` sees the old file or the new one, never half.

Training runs for hours and labelling can be interrupted; if an output file
were written in place, a crash or Ctrl-C would leave a truncated model that
loads as garbage (or a truncated label file that scores as a bad model).
:func:`atomic_output` writes to a temporary file in the target's directory
(same file system, so the final :func:`os.replace` is atomic), fsyncs it, and
only then renames it onto the target.  On any exception the temporary file is
removed and the previous file is left byte-identical.

Decisions:

* ``None`` or ``"-"`` means standard output, which is flushed but never closed.
* A symbolic link is followed, so the file it points to is replaced and the
  link survives.
* An existing target that is not a regular file (``/dev/null``, a FIFO,
  ``/dev/stdout``) is written directly: renaming onto it would replace the
  device or pipe itself.
* The new file keeps the permission bits of the file it replaces; a new file
  gets ``0o666 & ~umask``, like :func:`open` would give it.  A read-only
  existing target is refused, as :func:`open` would refuse it.
* A name ending in ``.gz`` is written gzip-compressed with a zero timestamp,
  so the same content always gives the same bytes.
* A write that fails for want of space (or quota, or file size limit) inside
  the ``with`` body is reported like a failed commit, as one
  :class:`CrfkitError` naming the path (``<stdout>`` for standard output):
  those errors can only come from writing, so they never hide a read error.
"""

from __future__ import annotations

import codecs
import errno
import gzip
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

from crfkit.errors import OutputError, UsageError

__all__ = ["WRITE_ERRNOS", "atomic_output", "check_writable"]

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""OS errors only a write can raise: no space, quota exceeded, file too large."""

STDOUT_NAME = "<stdout>"


@contextmanager
def atomic_output(
    path: str | os.PathLike | None,
    *,
    binary: bool = False,
    encoding: str = "utf-8",
) -> Iterator[IO]:
    """Yield a writable file whose content replaces ``path`` only on success.

    The yielded stream is text (``encoding``; standard output keeps its own)
    unless ``binary``; do not close it, leaving the ``with`` block commits.
    A failure to create or commit the file raises :class:`CrfkitError` naming
    the path; exceptions from the ``with`` body (including
    :class:`KeyboardInterrupt`) are re-raised after the temporary file is
    removed.
    """
    if not binary:
        _check_encoding(encoding)
    if path is None or path == "-":
        with _stdout_output(binary, encoding) as stream:
            yield stream
        return
    target = os.path.realpath(os.fsdecode(path))
    output = _direct_output if _is_special(target) else _replacing_output
    with output(target, os.fsdecode(path), binary, encoding) as stream:
        yield stream


@contextmanager
def _stdout_output(binary: bool, encoding: str) -> Iterator[IO]:
    """Standard output, in ``encoding``: flushed at the end, never closed."""
    if binary:
        stream = sys.stdout.buffer
    elif codecs.lookup(encoding).name == codecs.lookup(sys.stdout.encoding or "utf-8").name:
        stream = sys.stdout
    else:  # honour --encoding on standard output too
        stream = io.TextIOWrapper(sys.stdout.buffer, encoding=encoding, newline="",
                                  write_through=True)
    try:
        yield stream
        stream.flush()
    except OSError as err:
        if err.errno not in WRITE_ERRNOS:
            raise
        raise _write_error(STDOUT_NAME, err) from None
    finally:
        if isinstance(stream, io.TextIOWrapper) and stream is not sys.stdout:
            stream.detach()


@contextmanager
def _replacing_output(target: str, display: str, binary: bool, encoding: str) -> Iterator[IO]:
    """A temporary file beside ``target``, renamed onto it once written and synced."""
    mode = _new_file_mode(target, display)
    directory, base = os.path.split(target)
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    except OSError as err:
        raise _write_error(display, err) from None
    raw = os.fdopen(fd, "wb")
    try:
        os.chmod(temp, mode)
        gz, stream = _layers(raw, target, binary, encoding)
    except BaseException as err:
        _discard([raw], temp)
        if isinstance(err, OSError):
            raise _write_error(display, err) from None
        raise
    layers = [raw, gz, stream]
    try:
        yield stream
    except BaseException as err:
        _discard(layers, temp)
        if isinstance(err, OSError) and err.errno in WRITE_ERRNOS:
            raise _write_error(display, err) from None
        raise
    _commit(layers, temp, target, display)


def _commit(layers: list, temp: str, target: str, display: str) -> None:
    """Flush and sync the temporary file's layers, then rename it onto ``target``."""
    raw, gz, stream = layers
    try:
        stream.flush()
        if gz is not None:
            gz.close()  # writes the gzip trailer; leaves ``raw`` open
        raw.flush()
        os.fsync(raw.fileno())
        stream.close()
        raw.close()
        os.replace(temp, target)
    except OSError as err:  # disk full, quota, target turned into a directory...
        _discard(layers, temp)
        raise _write_error(display, err) from None
    except BaseException:
        _discard(layers, temp)
        raise
    _sync_directory(os.path.dirname(target))


def check_writable(path: str | os.PathLike | None) -> None:
    """Fail now, naming ``path``, if :func:`atomic_output` could not write it later.

    Training for an hour and then failing to write the model loses the hour:
    the commands call this for every output before any work starts. It makes
    a temporary file where :func:`atomic_output` would, writes a few bytes to
    it, fsyncs and removes it, so a missing or read-only directory, a
    read-only target and a full file system all show up; nothing is left
    behind. A character device (``/dev/full``) gets an empty write, which
    fails where any write would; a FIFO is not opened (that would wait for a
    reader).
    """
    if path is None or path == "-":
        return
    target = os.path.realpath(os.fsdecode(path))
    display = os.fsdecode(path)
    if os.path.isdir(target):
        raise OutputError("cannot write: Is a directory", path=display)
    if _is_special(target):
        if not os.access(target, os.W_OK):
            raise OutputError("cannot write: Permission denied", path=display)
        _probe_device(target, display)
        return
    _new_file_mode(target, display)  # refuses a read-only target
    directory, base = os.path.split(target)
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    except OSError as err:
        raise _write_error(display, err) from None
    try:
        os.write(fd, b"crfkit\n" * 512)  # a few kilobytes: more than a full disk's slack
        os.fsync(fd)
    except OSError as err:
        raise _write_error(display, err) from None
    finally:
        os.close(fd)
        with suppress(OSError):
            os.unlink(temp)


def _probe_device(target: str, display: str) -> None:
    """An empty write to a character device: ``/dev/full`` refuses it, ``/dev/null`` takes it."""
    if not stat.S_ISCHR(os.stat(target).st_mode):
        return
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as err:
        raise _write_error(display, err) from None
    try:
        os.write(fd, b"")
    except OSError as err:
        if err.errno in WRITE_ERRNOS:
            raise _write_error(display, err) from None
    finally:
        os.close(fd)


def _discard(layers: list[IO | None], temp: str) -> None:
    """Close every layer (outermost first) and delete the temporary file.

    Closing the outer layers explicitly keeps their finalizers from writing
    to the closed file later and printing "Exception ignored" noise.
    Secondary errors are ignored: the caller is already raising the real one.
    """
    for layer in reversed(layers):
        if layer is not None:
            with suppress(Exception):
                layer.close()
    with suppress(OSError):
        os.unlink(temp)


def _layers(raw: IO[bytes], target: str, binary: bool, encoding: str) -> tuple[IO | None, IO]:
    """Stack gzip and text layers on ``raw``; return ``(gzip layer, top layer)``."""
    gz = None
    stream: IO = raw
    if target.endswith(".gz"):
        gz = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
        stream = gz
    if not binary:
        stream = io.TextIOWrapper(stream, encoding=encoding)
    return gz, stream


@contextmanager
def _direct_output(target: str, display: str, binary: bool, encoding: str) -> Iterator[IO]:
    """Write straight into a device or pipe, where atomic replacement makes no sense."""
    try:
        stream = open(target, "wb" if binary else "w", encoding=None if binary else encoding)
    except OSError as err:
        raise _write_error(display, err) from None
    try:
        with stream:
            yield stream
    except OSError as err:  # /dev/full, a full pipe's file system...
        if err.errno not in WRITE_ERRNOS:
            raise
        raise _write_error(display, err) from None


def _is_special(target: str) -> bool:
    """Whether ``target`` exists and is not a regular file."""
    try:
        return not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        return False


def _new_file_mode(target: str, display: str) -> int:
    """Permission bits for the new file: those of the old one, else 0o666 minus umask."""
    try:
        old = os.stat(target)
    except FileNotFoundError:
        umask = os.umask(0)  # the only portable way to read the umask is to set it
        os.umask(umask)
        return 0o666 & ~umask
    except OSError as err:
        raise _write_error(display, err) from None
    if not os.access(target, os.W_OK):
        raise OutputError("cannot write: Permission denied", path=display)
    return stat.S_IMODE(old.st_mode)


def _check_encoding(encoding: str) -> None:
    """Refuse an unknown encoding before any file is created."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise UsageError(f"unknown encoding {encoding!r}") from None


def _write_error(display: str, err: OSError) -> OutputError:
    """The user-facing error for an OS failure while creating or committing a file."""
    return OutputError(f"cannot write: {err.strerror or err}", path=display)


def _sync_directory(directory: str) -> None:
    """Make the rename durable; some file systems cannot fsync a directory."""
    with suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
