"""A corpus as interned columns: per column, one integer id per token and its distinct values.

Encoding needs only the values of the columns that the patterns read (and the
label column), each interned once: a token's value becomes the rank of its
first appearance among the column's distinct values (:func:`intern_column`'s
numbering). Holding every row of a training file as Python strings until
that happens is what made reading the biggest share of training memory
(CoNLL-2000: 78 MB of row lists against 2 MB of ids), so
:func:`collect_columns` interns a stream of sequences a chunk of tokens at a
time and drops the rows as it goes. :func:`columns_of` gives the same
columns from sequences already in a list (labelling, development sets).
Both number alike, so the feature ids, and the model, do not depend on
which one built the columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from crfkit.errors import InputError
from crfkit.features.patterns import Pattern
from crfkit.features.strings import intern_column, intern_values
from crfkit.io.reader import Sequence

# Tokens interned per step of collect_columns: their rows are alive at once.
CHUNK_TOKENS = 1 << 15


@dataclass
class TokenColumns:
    """Interned columns of a corpus (module docstring).

    ``ids[c][t]`` is the id of token t's value in column c, ``distinct[c][i]``
    the value of id i (ids in order of first appearance). Only the columns
    asked for (that the corpus has) are there. ``n_columns`` is the corpus's
    column count (0 when empty), ``first_line`` the line of its first token,
    ``first_lines`` each sequence's (a token's line is its sequence's plus its
    position: what an error names, once the rows are gone).
    """

    lengths: np.ndarray  # int64 (n_seqs,): tokens per sequence
    ids: dict[int, np.ndarray]  # column -> int64 (n_tokens,)
    distinct: dict[int, list[str]]
    n_columns: int = 0
    first_line: int = 0
    first_lines: np.ndarray | None = None  # int64 (n_seqs,)

    def line_of(self, token: int) -> int | None:
        """The source line of a token (by its index in the corpus); None without lines."""
        if self.first_lines is None:
            return None
        ends = np.cumsum(self.lengths)
        s = int(np.searchsorted(ends, token, side="right"))
        return int(self.first_lines[s]) + token - int(ends[s] - self.lengths[s])

    @property
    def n_seqs(self) -> int:
        return len(self.lengths)

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())


def pattern_columns(patterns: Iterable[Pattern]) -> set[int]:
    """The columns that some pattern's command reads."""
    return {command.column for pattern in patterns for command in pattern.commands}


def columns_of(seqs: Seq[Sequence], wanted: Iterable[int]) -> TokenColumns:
    """The wanted columns of sequences held in a list (negative: from the end).

    Columns the sequences do not have are left out (as by :func:`collect_columns`);
    an empty list gives every non-negative wanted column, empty."""
    lengths = np.fromiter((len(s.rows) for s in seqs), dtype=np.int64, count=len(seqs))
    n_columns = len(seqs[0].rows[0]) if len(seqs) and seqs[0].rows else 0
    rows = [row for seq in seqs for row in seq.rows]
    ids, distinct = {}, {}
    # columns past the end are left out, as by collect_columns
    for c in _resolve(wanted, n_columns) if rows else {c for c in wanted if c >= 0}:
        ids[c], distinct[c] = intern_column(rows, c)
    first_line = seqs[0].lines[0] if len(seqs) and seqs[0].lines else 0
    first_lines = np.fromiter((s.lines[0] if s.lines else 0 for s in seqs), dtype=np.int64,
                              count=len(seqs))
    return TokenColumns(lengths, ids, distinct, n_columns, first_line, first_lines)


def columns_of_fields(fields: list[str], n_columns: int, lengths: np.ndarray,
                      wanted: Iterable[int], first_line: int) -> TokenColumns:
    """:func:`columns_of` for tokens held as one flat list of fields, row after row
    (:class:`crfkit.io.columnar.TokenBlock`): a column is a slice of that list, taken
    without touching a string."""
    ids, distinct = {}, {}
    for c in _resolve(wanted, n_columns) if fields else {c for c in wanted if c >= 0}:
        ids[c], distinct[c] = intern_values(fields[c::n_columns])
    return TokenColumns(lengths, ids, distinct, n_columns if fields else 0, first_line)


def collect_columns(sequences: Iterable[Sequence], wanted: Iterable[int], *,
                    source: str = "<input>", chunk_tokens: int = CHUNK_TOKENS) -> TokenColumns:
    """Intern the wanted columns of a stream of sequences, keeping no row (module docstring).

    Negative columns count from the end (-1: the label). Every sequence must
    have the column count of the first (:class:`InputError` at its first
    line otherwise). The ids equal :func:`columns_of`'s on the same sequences.
    """
    collector = _Collector(wanted, source)
    pending: list[list[str]] = []
    for seq in sequences:
        collector.check(seq)
        pending += seq.rows
        collector.lengths.append(len(seq.rows))
        collector.first_lines.append(seq.lines[0])
        if len(pending) >= chunk_tokens:
            collector.add(pending)
            pending = []
    collector.add(pending)
    return collector.result()


class _Collector:
    """The state of :func:`collect_columns`: per column, the position where each distinct
    value first occurred, and every token's first-occurrence position."""

    def __init__(self, wanted: Iterable[int], source: str) -> None:
        self.wanted = list(wanted)
        self.source = source
        self.columns: list[int] = []
        self.n_columns = 0
        self.first_line = 0
        self.lengths: list[int] = []
        self.first_lines: list[int] = []
        self.seen: dict[int, dict[str, int]] = {}
        self.first: dict[int, list[np.ndarray]] = {}
        self.n_tokens = 0

    def check(self, seq: Sequence) -> None:
        found = len(seq.rows[0])
        if not self.n_columns:
            self.n_columns, self.first_line = found, seq.lines[0]
            self.columns = _resolve(self.wanted, found)
            self.seen = {c: {} for c in self.columns}
            self.first = {c: [] for c in self.columns}
        elif found != self.n_columns:
            raise InputError(f"expected {self.n_columns} columns, found {found}",
                             path=self.source, line=seq.lines[0])

    def add(self, rows: list[list[str]]) -> None:
        """Intern a chunk: ``setdefault`` keeps a value's first position, in C."""
        n, base = len(rows), self.n_tokens
        for c in self.columns:
            values = map(itemgetter(c), rows)
            first = map(self.seen[c].setdefault, values, range(base, base + n))
            self.first[c].append(np.fromiter(first, dtype=np.int64, count=n))
        self.n_tokens += n

    def result(self) -> TokenColumns:
        """Ranks of the first positions are the ids (:func:`intern_column`'s numbering);
        a dict keeps its keys in insertion order, which is the order of first appearance."""
        ids = {}
        everywhere = np.arange(self.n_tokens, dtype=np.int64)
        for c in self.columns:
            first = np.concatenate(self.first.pop(c)) if self.n_tokens else everywhere
            rank = np.cumsum(first == everywhere) - 1
            ids[c] = rank[first]
        distinct = {c: list(self.seen.pop(c)) for c in self.columns}
        return TokenColumns(np.array(self.lengths, dtype=np.int64), ids, distinct,
                            self.n_columns, self.first_line,
                            np.array(self.first_lines, dtype=np.int64))


def _resolve(wanted: Iterable[int], n_columns: int) -> list[int]:
    """Wanted columns as indices the corpus has, sorted; negatives count from the end.

    Columns past the end are left out: :func:`crfkit.features.patterns.check_columns`
    names the pattern that reads them."""
    resolved = {c + n_columns if c < 0 else c for c in wanted}
    return sorted(c for c in resolved if 0 <= c < n_columns)
