"""Cutting column files into shards at sequence boundaries, and reading one shard.

A shard is a byte range of one file that starts just after a blank line
(or at the file's start) and ends just after one (or at its end), so no
sequence is cut. The driver finds the cuts by reading a few kilobytes after
each target offset: the corpus itself never passes through it. A gzip file,
or a file in an encoding where a blank line is not the bytes ``\\n\\n``, is
one shard.

Line numbers: a worker reading a shard knows its lines only relative to the
shard's start, so it returns an error as data (message and relative line)
together with the shard's newline count, and the driver, which has the
counts of every shard before it, raises it at the right line of the file
(:func:`raise_first_error`). Column counts are checked within a shard by
the reader and across shards by the driver, in file order, so the first
bad line is the one the single-process reader would report.
"""

from __future__ import annotations

import glob
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from crfkit.errors import CrfkitError, InputError, UsageError
from crfkit.io.reader import Item, Sequence, read_items
from crfkit.labelling.forklabel import splittable

DEFAULT_SHARD_BYTES = 16 << 20
_WINDOW = 1 << 16  # bytes read per step while looking for a blank line after a target


@dataclass(frozen=True)
class Shard:
    """Bytes ``start:stop`` of ``path`` (``stop`` -1: to the end, for whole files)."""

    path: str
    start: int = 0
    stop: int = -1


@dataclass
class ShardReport:
    """What reading a shard found, for the driver's checks (no sequence data)."""

    newlines: int = 0  # newline bytes in the shard: the line offset of the next shard
    columns: int = 0  # columns of its first token line (0: no token line)
    first_line: int = 0  # that line, relative to the shard's start
    error: tuple[str, int | None] | None = None  # (message, relative line) of a bad line
    n_sequences: int = 0
    n_tokens: int = 0
    extra: dict = field(default_factory=dict)


def expand_inputs(spec: str | os.PathLike | list) -> list[str]:
    """The files named by a path, a glob pattern or a list of them, in order (a glob's
    matches sorted); :class:`UsageError` if a name matches nothing."""
    names = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    files: list[str] = []
    for name in map(os.fspath, names):
        if name == "-":
            raise UsageError("--dask reads its input on the workers: name the file(s), "
                             "not standard input")
        matches = sorted(glob.glob(name)) if glob.has_magic(name) else [name]
        matches = [m for m in matches if os.path.isfile(m)]
        if not matches:
            raise UsageError(f"INPUT: {name!r} names no file")
        files += matches
    return files


def plan_shards(paths: list[str], shard_bytes: int = DEFAULT_SHARD_BYTES, *,
                encoding: str = "utf-8") -> list[Shard]:
    """Shards of about ``shard_bytes`` each, cut just after blank lines, in file order."""
    shards: list[Shard] = []
    for path in paths:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
            if gz or not splittable(encoding) or size <= shard_bytes:
                shards.append(Shard(path))
                continue
            start = 0
            while start < size:
                cut = _cut_after(f, start + shard_bytes, size)
                shards.append(Shard(path, start, cut))
                start = cut
    return shards


def _cut_after(f: io.BufferedReader, target: int, size: int) -> int:
    """The offset just after the first empty line (``\\n\\n`` or ``\\n\\r\\n``) at or after
    ``target``, or ``size``."""
    if target >= size:
        return size
    f.seek(target - 1)  # the newline before a blank line may sit just before the target
    at = target - 1
    tail = b""
    while True:
        block = f.read(_WINDOW)
        if not block:
            return size
        data = tail + block
        found = [i + len(sep) for sep in (b"\n\n", b"\n\r\n") if (i := data.find(sep)) >= 0]
        if found:
            return min(at - len(tail) + min(found), size)
        tail = data[-2:]
        at += len(block)


def shard_items(shard: Shard, *, encoding: str, sep: str, min_columns: int,
                report: ShardReport) -> Iterator[Item]:
    """The items of a shard, read on a worker; fills ``report`` (errors as data)."""
    with open(shard.path, "rb") as raw:
        if shard.stop < 0:
            data = raw.read()
        else:
            raw.seek(shard.start)
            data = raw.read(shard.stop - shard.start)
    if data[:2] == b"\x1f\x8b":
        import gzip

        data = gzip.decompress(data)
    report.newlines = data.count(b"\n")
    try:
        for item in read_items(io.BytesIO(data), encoding=encoding, sep=sep,
                               min_columns=min_columns, name=shard.path):
            if type(item) is Sequence:
                if not report.columns:
                    report.columns, report.first_line = len(item.rows[0]), item.lines[0]
                report.n_sequences += 1
                report.n_tokens += len(item.rows)
            yield item
    except CrfkitError as err:
        report.error = (err.message, err.line)


def read_shard(shard: Shard, *, encoding: str, sep: str, min_columns: int = 2
               ) -> tuple[list[Sequence], ShardReport]:
    """The sequences of a shard and its report."""
    report = ShardReport()
    items = shard_items(shard, encoding=encoding, sep=sep, min_columns=min_columns,
                        report=report)
    return [item for item in items if type(item) is Sequence], report


def raise_first_error(shards: list, reports: list[ShardReport]) -> None:
    """Raise the first bad line of the input, in file order, at its line in its file.

    ``shards`` are :class:`Shard` (or anything else, for in-memory partitions,
    which have no file to point at).
    """
    columns = next((r.columns for r in reports if r.columns), 0)
    line_base: dict[str, int] = {}
    for shard, report in zip(shards, reports, strict=True):
        path = shard.path if isinstance(shard, Shard) else None
        base = line_base.get(path, 0) if path is not None else 0
        if report.columns and report.columns != columns:
            raise InputError(f"expected {columns} columns, found {report.columns}", path=path,
                             line=base + report.first_line)
        if report.error is not None:
            message, line = report.error
            raise InputError(message, path=path, line=None if line is None else base + line)
        if path is not None:
            line_base[path] = base + report.newlines
