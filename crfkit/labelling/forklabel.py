"""Labelling a file in two processes.

The numpy labeller holds the GIL for much of its work (``take`` and ufuncs
on arrays of a few thousand rows), so worker threads gain ~5%. A regular
file, though, can be cut at a blank line into two halves that a forked
child and the parent label at the same time, each streaming with bounded
memory into a temporary file; the parent then writes both, in order. Fork
shares the loaded model copy-on-write, so the child starts at once.

Any failure in either half (bad input, a column count that changes at the
cut, a crash) makes :func:`label_file_in_two` return None: the caller then
labels the whole file in one process, which reports the first error with
its exact position, as without the split.

Progress: the child adds its token count to a shared memory word, which the
parent's progress line (:class:`crfkit.labelling.label.TokenMeter`) reads.
"""

from __future__ import annotations

import codecs
import io
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from typing import TextIO

from crfkit.errors import CrfkitError
from crfkit.io.columnar import TokenBlock, read_token_blocks
from crfkit.io.reader import Item, Sequence, read_items
from crfkit.labelling.columnar import columnar_applies, label_blocks
from crfkit.labelling.label import LabelOptions, LabelStats, TokenMeter, label_stream
from crfkit.model.model import Model

MIN_BYTES = 1 << 18  # below this, one process is as fast (fork, copies)
_WINDOW = 1 << 16  # bytes searched for a blank line after the middle


def splittable(encoding: str) -> bool:
    """Whether a blank line is the bytes ``\n\n`` and a cut there leaves no state
    behind (ASCII-compatible encodings; not UTF-16/32, UTF-7 or the ISO-2022 family)."""
    name = codecs.lookup(encoding).name
    return "\n\n".encode(name) == b"\n\n" and not name.startswith(("iso2022", "utf-7", "hz"))


def split_offset(path: str) -> int | None:
    """A byte offset just after a blank line near the middle of ``path``, or None.

    None for small files, gzip files, and when no empty line (``\\n\\n`` or
    ``\\n\\r\\n``) starts within a window after the middle.
    """
    size = os.path.getsize(path)
    if size < MIN_BYTES:
        return None
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":
            return None
        f.seek(size // 2)
        window = f.read(_WINDOW)
    found = [(i, len(sep)) for sep in (b"\n\n", b"\n\r\n") if (i := window.find(sep)) >= 0]
    if not found:
        return None
    i, n = min(found)
    offset = size // 2 + i + n
    return offset if offset < size else None


class _ByteRange(io.RawIOBase):
    """Bytes [start, stop) of a file as a readable binary stream."""

    def __init__(self, path: str, start: int, stop: int) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        self._file.seek(start)
        self._left = stop - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self._left)
        if n <= 0:
            return 0
        got = self._file.readinto(memoryview(buffer)[:n])
        self._left -= got
        return got

    def close(self) -> None:
        self._file.close()
        super().close()


def _label_part(model: Model, path: str, start: int, stop: int, out_path: str,
                options: LabelOptions, encoding: str, sep: str,
                progress: Callable[[int], None] | None = None) -> tuple[LabelStats, int]:
    """Label bytes [start, stop) of ``path`` into ``out_path``; (stats, columns of its first
    token line)."""
    columns = [0]

    def noting_columns(items: Iterable[Item | TokenBlock]) -> Iterator[Item | TokenBlock]:
        for item in items:
            if not columns[0] and type(item) is Sequence:
                columns[0] = len(item.rows[0])
            elif not columns[0] and type(item) is TokenBlock:
                columns[0] = item.n_columns
            yield item

    with io.BufferedReader(_ByteRange(path, start, stop)) as stream, \
            open(out_path, "w", encoding=encoding, newline="") as out:
        if columnar_applies(model, options, sep=sep, live=False, doc_sep=None):
            blocks = read_token_blocks(stream, encoding=encoding, sep=sep, name=path)
            stats = label_blocks(model, noting_columns(blocks), out, options, source=path,
                                 progress=progress)
        else:
            items = read_items(stream, encoding=encoding, sep=sep, name=path)
            stats = label_stream(model, noting_columns(items), out, options, source=path,
                                 progress=progress)
    return stats, columns[0]


class _SharedCount:
    """A token count in shared memory: written by the forked child, read by the parent."""

    def __init__(self) -> None:
        self.memory = mmap.mmap(-1, 8)  # anonymous and shared: fork keeps it shared

    def add(self, tokens: int) -> None:
        self.memory[:8] = (self.value() + tokens).to_bytes(8, "little")

    def value(self) -> int:
        return int.from_bytes(self.memory[:8], "little")


def label_file_in_two(model: Model, path: str, out: TextIO, options: LabelOptions, *,
                      encoding: str, sep: str, meter: TokenMeter | None = None
                      ) -> LabelStats | None:
    """Label ``path`` into ``out``, a forked child labelling the second half; None (and
    nothing written) if the file cannot be split or either half fails. ``meter`` shows
    the progress of both halves."""
    if not hasattr(os, "fork") or options.uses_kernels or not splittable(encoding):
        return None
    offset = split_offset(path)
    if offset is None:
        return None
    size = os.path.getsize(path)
    model.featurizer.vocab.index  # noqa: B018 - built once here, both halves share it
    shared = _SharedCount()
    if meter is not None:
        meter.also = shared.value
    with tempfile.TemporaryDirectory(prefix="crfkit-label-") as tmp:
        first, second = os.path.join(tmp, "first"), os.path.join(tmp, "second")
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the second half, its stats through the pipe
            code = 1
            try:
                os.close(read_end)
                stats, columns = _label_part(model, path, offset, size, second, options,
                                             encoding, sep, shared.add)
                os.write(write_end, json.dumps([asdict(stats), columns]).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        try:
            mine, my_columns = _label_part(model, path, 0, offset, first, options, encoding,
                                           sep, meter.add if meter is not None else None)
        except CrfkitError:
            mine = None
        finally:
            with os.fdopen(read_end, "rb") as pipe:
                reply = pipe.read()
            _, status = os.waitpid(pid, 0)
        if mine is None or os.waitstatus_to_exitcode(status) != 0 or not reply:
            return None
        theirs, their_columns = json.loads(reply)
        if their_columns != my_columns:  # the one-process reader refuses this
            return None
        _copy_parts(out, (first, second), encoding)
    return LabelStats(**{key: getattr(mine, key) + theirs[key] for key in theirs})


def _copy_parts(out: TextIO, parts: Iterable[str], encoding: str) -> None:
    """Append the halves' text to ``out``: as bytes when it has a binary buffer (they are
    in its encoding already), else decoded."""
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
    for part in parts:
        if buffer is not None:
            with open(part, "rb") as data:
                shutil.copyfileobj(data, buffer)
        else:
            with open(part, encoding=encoding, newline="") as text:
                shutil.copyfileobj(text, out)
