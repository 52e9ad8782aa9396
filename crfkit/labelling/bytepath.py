"""Labelling a large regular file from its bytes: compiled reading, lookup and writing.

Why: on a large file the column labeller (:mod:`crfkit.labelling.columnar`) spends
more time turning text into ids (Python strings, dictionaries) and labels back into
text than decoding. Here the file is mapped into memory and cut at blank lines
into windows; for each, compiled kernels find the lines and fields
(:mod:`crfkit.kernels.bytelines`), the observation ids
(:mod:`crfkit.features.bytecells`, tables from :mod:`crfkit.labelling.bytetables`),
the best path (the structure's fused decoder) and the output lines, written as
bytes. The kernels release the GIL, so windows are labelled on worker threads
and written in input order.

It serves what the column labeller serves (:func:`byte_path_applies`), for a UTF-8
file without anything its reader treats specially: a file holding a carriage
return, a ``-DOCSTART-`` marker, bytes that are not UTF-8, token lines of
different column counts or fewer columns than needed is left, untouched, to the
usual path (:func:`label_file_bytes` returns None), which gives the same output or
reports the problem at its line. The output is the column labeller's, byte for byte.
"""

from __future__ import annotations

import codecs
import mmap
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

import numpy as np

from crfkit.labelling.columnar import columnar_applies
from crfkit.labelling.label import Decoder, LabelOptions, LabelStats, labels_scaled
from crfkit.model.model import Model
from crfkit.space import Dataset

if TYPE_CHECKING:
    from crfkit.labelling.bytetables import ByteTables

# A file this large labels faster here, loading Numba included (the manual gives the
# measurement); a smaller one keeps the column labeller, which never loads Numba.
BYTE_PATH_BYTES = 8 << 20
COMPILE_SECONDS = 5  # its kernels' compile seconds on a first run (2-core machine)
WINDOW_BYTES = 1 << 20  # a window ends at the first blank line after about this many bytes
_CHECK_BYTES = 1 << 24  # UTF-8 is checked this many bytes at a time
_BOM = b"\xef\xbb\xbf"
_MARKER = b"-DOCSTART-"


def byte_path_applies(model: Model, options: LabelOptions, *, encoding: str,
                      sep: str) -> bool:
    """Whether the byte path can label for ``model`` and ``options``: the column
    labeller's cases (:func:`~crfkit.labelling.columnar.columnar_applies`) without
    constraints, a structure with a fused best path, patterns of plain ``%x`` cells,
    and UTF-8 (not UTF-8 with a signature, which the output would start with)."""
    from crfkit.labelling.bytetables import plain_cells

    return (columnar_applies(model, options, sep=sep, live=False, doc_sep=None)
            and options.constraints is None and not options.uses_kernels
            and codecs.lookup(encoding).name == "utf-8"
            and model.structure.fused_best_path(model) and plain_cells(model.featurizer))


def pays(path: str, n_labels: int) -> bool:
    """Whether ``path`` is a regular file large enough to repay loading Numba, for a model
    of ``n_labels`` (:func:`~crfkit.labelling.label.labels_scaled`)."""
    return (path != "-" and os.path.isfile(path)
            and os.path.getsize(path) >= labels_scaled(BYTE_PATH_BYTES, n_labels))


def label_file_bytes(model: Model, path: str, out: TextIO, options: LabelOptions, *,
                     sep: str, threads: int = 1, progress: Callable[[int], None] | None = None,
                     hash_mask: np.uint64 | None = None,
                     loading: Callable[[], None] | None = None) -> LabelStats | None:
    """Label ``path`` into ``out`` (for which :func:`byte_path_applies`); None, nothing
    written, if the file is not regular (module docstring). ``hash_mask``: see
    :mod:`crfkit.features.bytecells`; ``loading`` is called before Numba is first
    needed (a file that is not regular may be refused without it)."""
    start = _regular_start(path)
    if start is None:
        return None
    if loading is not None:
        loading()
    from crfkit.kernels.bytelines import MODES, column_count
    from crfkit.labelling.bytetables import ALL_BITS, byte_tables

    data = np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))
    mode = MODES[sep]
    # the count reads the whole file, without the GIL: the tables are built meanwhile
    with ThreadPoolExecutor(1) as aside:
        counted = aside.submit(column_count, data, start, mode)
        tables = byte_tables(model, ALL_BITS if hash_mask is None else hash_mask)
        columns = counted.result()
    needed = model.n_token_columns + (1 if options.check else 0)
    if columns < max(needed, 1):
        return None
    labeller = _WindowLabeller(model, options, tables, data, columns, mode, path)
    return labeller.run(_windows(data, start, _window_bytes(len(data) - start, threads)), out,
                        threads, progress)


def _regular_start(path: str) -> int | None:
    """Where the lines of ``path`` start (after a UTF-8 signature), or None if the file
    is empty, compressed, or holds a carriage return, a document marker or bytes that
    are not UTF-8."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            start = len(_BOM) if mm[:3] == _BOM else 0
            if mm[:2] == b"\x1f\x8b" or mm.find(b"\r") >= 0 or mm.find(_MARKER) >= 0:
                return None
            return start if _utf8(mm, start) else None


def _utf8(mm: mmap.mmap, start: int) -> bool:
    """Whether ``mm[start:]`` is valid UTF-8 (decoded a block at a time and dropped,
    unless it is all ASCII, which is tested many times faster)."""
    if all(mm[at:at + _CHECK_BYTES].isascii() for at in range(start, len(mm), _CHECK_BYTES)):
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    at = start
    try:
        while at < len(mm):
            stop = min(at + _CHECK_BYTES, len(mm))
            decoder.decode(mm[at:stop], final=stop == len(mm))
            at = stop
    except UnicodeDecodeError:
        return False
    return True


def _window_bytes(size: int, threads: int) -> int:
    """The window size for ``size`` bytes on ``threads`` threads: about
    :data:`WINDOW_BYTES`, cut so that every thread gets as many windows (a last window
    left to one thread would leave the others idle while it runs)."""
    windows = -(-size // WINDOW_BYTES)
    windows = -(-windows // threads) * threads
    return max(1, -(-size // windows))


def _windows(data: np.ndarray, start: int, window: int) -> Iterator[tuple[int, int]]:
    """Byte ranges of whole sequences: each ends after the first empty line found
    ``window`` bytes after its start (or at the end of the file)."""
    size = len(data)
    blank = np.frombuffer(b"\n\n", dtype=np.uint8)
    a = start
    while a < size:
        b = size
        at = a + window
        while at < size:  # search on, a window's worth of bytes at a time
            chunk = data[at:at + window + 1]
            hits = np.flatnonzero((chunk[:-1] == blank[0]) & (chunk[1:] == blank[1]))
            if len(hits):
                b = at + int(hits[0]) + 2
                break
            at += window
        yield a, b
        a = b


class _WindowLabeller:
    """Labels windows of one mapped file (on worker threads) and writes them in order."""

    def __init__(self, model: Model, options: LabelOptions, tables: ByteTables,
                 data: np.ndarray, columns: int, mode: int, source: str) -> None:
        self.decoder = Decoder(model, replace(options, fused=True), source)
        self.tables, self.data, self.columns, self.mode = tables, data, columns, mode
        self.separator = ord(options.separator)
        self.labels_only = options.labels_only
        self.table_column = tables.table_column.copy()
        if options.check:  # the labels' table reads the gold column
            self.table_column[-1] = columns - 1

    def run(self, windows: Iterator[tuple[int, int]], out: TextIO, threads: int,
            progress: Callable[[int], None] | None) -> LabelStats:
        stats = LabelStats()
        buffer = getattr(out, "buffer", None)
        out.flush()
        with ThreadPoolExecutor(max(1, threads)) as pool:
            pending: deque = deque()
            for a, b in windows:
                pending.append(pool.submit(self.label, a, b))
                while len(pending) > 2 * threads or (pending and pending[0].done()):
                    self._write(pending.popleft().result(), out, buffer, stats, progress)
            while pending:
                self._write(pending.popleft().result(), out, buffer, stats, progress)
        return stats

    @staticmethod
    def _write(done: tuple, out: TextIO, buffer, stats: LabelStats,
               progress: Callable[[int], None] | None) -> None:
        text, tokens, sequences, correct = done
        if buffer is not None:
            buffer.write(text)
        else:
            out.write(text.tobytes().decode("utf-8"))
        stats.tokens += tokens
        stats.sequences += sequences
        stats.correct += correct
        if progress is not None:
            progress(tokens)

    def label(self, a: int, b: int) -> tuple[np.ndarray, int, int, int]:
        """(output bytes, tokens, sequences, correct gold labels) of ``data[a:b]``."""
        from crfkit.features.bytecells import window_cells, window_observations
        from crfkit.kernels.bytelines import scan_window, write_lines

        t, data, columns = self.tables, self.data, self.columns
        starts, ends, lengths = scan_window(data, a, b, self.mode, columns)
        cells = window_cells(data, starts, ends, columns, self.table_column, t.strings,
                             t.hash_mask)
        tok_ptr, tok_obs = window_observations(cells, lengths, t.commands, t.codes, t.hash_mask)
        seq_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=seq_ptr[1:])
        path = np.zeros(0, dtype=np.int32)
        if len(lengths):
            dec = self.decoder.decode_data(
                Dataset(seq_ptr=seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs,
                        labels=np.zeros(0, dtype=np.int32)),
                None, lambda s, i: 0,  # lines name errors of constraints: not served here
                log_z=False, marginals=False)
            path = np.ascontiguousarray(dec.paths[:, 0], dtype=np.int32)
        text = write_lines(data, starts, ends, columns, lengths, path, t.names, t.name_ptr,
                           self.separator, self.labels_only)
        return text, len(path), len(lengths), int(np.sum(cells[-1] == path))
