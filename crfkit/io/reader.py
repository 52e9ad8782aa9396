"""Streaming reader for column files (Wapiti, CRF++, CoNLL): lines into sequences.

A column file holds one token per line, its columns separated by tabs or runs
of spaces, and a blank line between sequences.  :func:`read_sequences` yields
one :class:`Sequence` at a time, so labelling a 10 GB file needs the memory of
one sequence, and a caller learns the column count by peeking at the first
sequence instead of reading the file twice.  The bytes below the lines (files,
standard input, gzip, encodings) are :mod:`crfkit.io.text_input`'s.

Design decisions, and why:

* ``sep="auto"`` splits on tabs and runs of spaces only, never on other
  Unicode white space: U+3000 (ideographic space) and U+00A0 are token
  characters in real corpora.
* ``sep="tab"`` splits on every single tab and keeps fields verbatim: spaces
  belong to tokens, and an empty field between two tabs is kept as ``""`` so
  that an empty cell does not shift the columns after it.
* Complete sequences before a bad line are yielded before its error is
  raised, so streaming consumers behave as if reading line by line.
* A line whose first field is ``-DOCSTART-`` (the document marker of the
  CoNLL-2002/2003 corpora) is a document boundary, not a token: it ends the
  current sequence.  :func:`read_sequences` drops it, so nothing trains on
  it; :func:`read_items` yields it as a :class:`DocStart`, so that
  ``crfkit label`` can copy it to its output and document-level models can
  group sequences into documents.  It is exempt from the column-count check.
* With ``pauses=True`` (``crfkit label`` on a pipe or terminal),
  :func:`read_items` yields :data:`PAUSE` whenever it has handed over every
  complete sequence and the next read may wait for the writer, so a
  co-process gets each sequence labelled as soon as its blank line arrives.
  A read returns what is available (``read1``), never waiting to fill a block.
* The cyclic garbage collector is paused while one block (at most 64 KiB of
  text, no caller code) is parsed: the block allocates thousands of small
  lists that can never form cycles, and collections triggered every 700 of
  them made reading CoNLL-2000 about 1.4 times slower.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from crfkit.errors import InputError, UsageError
from crfkit.io.text_input import (
    canonical_encoding,
    check_encoding,
    is_live,
    open_binary,
    open_source,
    text_blocks,
)

__all__ = ["DOCSTART", "PAUSE", "DocStart", "Pause", "Sequence", "canonical_encoding",
           "check_encoding", "is_live", "open_binary", "read_items", "read_sequences"]

_SEPARATORS = ("auto", "tab", "space")
_SPACE_RUN = re.compile(r"  +")
_EDGE_SPACE = re.compile(r"^ | $", re.MULTILINE)  # after squeezing runs of spaces
_BLANK_LINE = re.compile(r"^[ \t]+$", re.MULTILINE)
DOCSTART = "-DOCSTART-"


@dataclass(slots=True)
class Sequence:
    """One sequence of a column file.

    ``rows[i]`` holds the column strings of token ``i`` and ``lines[i]`` its
    1-based line number in the source, so later stages (pattern expansion,
    label checks) can report errors at the right place.
    """

    rows: list[list[str]]
    lines: list[int]


@dataclass(slots=True)
class DocStart:
    """A ``-DOCSTART-`` line: the start of a document, yielded by :func:`read_items`.

    ``fields`` are the line's columns, ``line`` its 1-based number and
    ``blank_after`` whether a blank line followed it (CoNLL-2003 has one,
    CoNLL-2002 not), so that output can reproduce the input's layout.
    """

    fields: list[str]
    line: int
    blank_after: bool = False


class Pause:
    """The type of :data:`PAUSE`: everything complete so far has been yielded and the
    next read may wait for the writer (only with ``read_items(..., pauses=True)``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PAUSE"


PAUSE = Pause()
Item = Sequence | DocStart | Pause


def read_sequences(source: str | os.PathLike | BinaryIO | None, *, encoding: str = "utf-8",
                   sep: str = "auto", name: str | None = None,
                   min_columns: int = 1) -> Iterator[Sequence]:
    """Yield the sequences of a column file one at a time.

    ``source`` is a path, ``"-"``/``None`` for standard input, or an open binary
    stream (which is read but not closed).  ``name`` overrides the file name
    used in error messages.  Every token line must have as many columns as the
    first one, and at least ``min_columns`` (the trainer asks for 2: tokens
    and a label).  ``-DOCSTART-`` lines end a sequence and are dropped
    (:func:`read_items` keeps them).

    Raises :class:`InputError` for unreadable or malformed data and
    :class:`UsageError` for a bad ``encoding``, ``sep`` or ``min_columns``; the
    options are checked when the generator is created, before any reading.
    """
    codec = check_options(encoding, sep, min_columns)
    return _read(source, codec, encoding, sep, name, min_columns)  # type: ignore[return-value]


def read_items(source: str | os.PathLike | BinaryIO | None, *, encoding: str = "utf-8",
               sep: str = "auto", name: str | None = None, min_columns: int = 1,
               pauses: bool = False, doc_sep: str | None = None) -> Iterator[Item]:
    """Like :func:`read_sequences`, but also yield a :class:`DocStart` for each
    ``-DOCSTART-`` line, in file order, and with ``pauses`` :data:`PAUSE` before
    every read that may wait (for input that :func:`is_live`). ``doc_sep``: a
    regex; lines it matches (``re.search``, after the separators are normalised)
    are document markers too."""
    codec = check_options(encoding, sep, min_columns)
    separator = None
    if doc_sep is not None:
        try:
            separator = re.compile(doc_sep)
        except re.error as err:
            raise UsageError(f"--doc-sep: bad regex {doc_sep!r}: {err}") from None
    return _read(source, codec, encoding, sep, name, min_columns, markers=True, pauses=pauses,
                 doc_sep=separator)


def check_options(encoding: str, sep: str, min_columns: int) -> str:
    """Check the reading options up front; return the codec name to decode with."""
    codec = check_encoding(encoding)
    if sep not in _SEPARATORS:
        raise UsageError(f"unknown column separator {sep!r} (expected auto, tab or space)")
    if min_columns < 1:
        raise UsageError(f"min_columns must be at least 1, got {min_columns}")
    return codec


def _read(
    source: str | os.PathLike | BinaryIO | None,
    codec: str,
    encoding: str,
    sep: str,
    name: str | None,
    min_columns: int,
    *,
    markers: bool = False,
    pauses: bool = False,
    doc_sep: re.Pattern | None = None,
) -> Iterator[Item]:
    """The generator behind :func:`read_sequences` and :func:`read_items`."""
    stream, display, close = open_source(source)
    display = name or display
    try:
        parser = BlockParser(display, sep, min_columns, markers)
        parser.doc_sep = doc_sep
        for text in text_blocks(stream, display, codec, encoding, pauses):
            if text is None:
                yield PAUSE
            else:
                yield from parser.feed(text)
        yield from parser.finish()
    finally:
        if close:
            stream.close()


class BlockParser:
    """Turns blocks of whole lines into sequences, keeping state across blocks.

    Per-line Python code is what makes readers slow, so a block is first
    normalised with a few whole-block string operations (tabs to spaces,
    runs of spaces squeezed, edge spaces and blank-looking lines emptied);
    afterwards a blank line is exactly an empty line.  The block's rows come
    from one list comprehension, column counts are checked with
    ``list.count`` and sequence ends found with ``list.index``: the only
    Python-level loop runs once per sequence, not once per token.  A
    ``-DOCSTART-`` line is turned into a blank line (so it ends a sequence
    and escapes the column check) after its fields are set aside; only
    blocks that contain the string pay for looking at every line.
    """

    def __init__(self, name: str, sep: str, min_columns: int, markers: bool = False) -> None:
        self.name = name
        self.sep = sep
        self.sep_char = "\t" if sep == "tab" else " "
        self.min_columns = min_columns
        self.markers = markers  # yield DocStart items (else drop them)
        self.ncols = 0  # set by the first token line of the file
        self.lineno = 0  # lines before the current block
        self.rows: list[list[str]] = []  # a sequence that may go on in the next block
        self.lines: list[int] = []
        self.marker: DocStart | None = None  # the block's last line: blank_after unknown
        self.doc_sep: re.Pattern | None = None  # lines it matches are markers too

    def feed(self, text: str) -> Iterator[Item]:
        """Parse one block; yield the items it completes, then raise its error."""
        done: list[Item] = []
        error: InputError | None = None
        with _gc_paused():
            try:
                self._parse(self.normalize(text), done)
            except InputError as err:
                error = err
        yield from done
        if error is not None:
            raise error

    def finish(self) -> list[Item]:
        """Return what is left at the end of the file: a last sequence without a
        blank line after it, or a marker on the last line."""
        last: list[Item] = []
        if self.rows:
            last.append(Sequence(self.rows, self.lines))
            self.rows, self.lines = [], []
        if self.marker is not None:
            last.append(self.marker)
            self.marker = None
        return last

    def normalize(self, text: str) -> str:
        """Rewrite a block so that fields are split by exactly one ``sep_char``."""
        if self.sep == "tab":
            if "\n " in text or "\n\t" in text or text.startswith((" ", "\t")):
                text = _BLANK_LINE.sub("", text)
            return text
        if self.sep == "auto":
            if "\t" in text:
                text = text.replace("\t", " ")
        elif "\t" in text:  # space mode: tabs are token characters, except on blank lines
            text = _BLANK_LINE.sub("", text)
        if "  " in text:
            text = _SPACE_RUN.sub(" ", text)
        if " \n" in text or "\n " in text or text.startswith(" ") or text.endswith(" "):
            text = _EDGE_SPACE.sub("", text)
        return text

    def _parse(self, text: str, done: list[Item]) -> None:
        lines = text.split("\n")
        rows = [line.split(self.sep_char) for line in lines]  # blank lines give [""]
        marks = self._take_markers(text, lines, rows) if DOCSTART in text else None
        if self.doc_sep is not None:
            marks = self._take_separators(lines, rows, marks or {})
        if self.marker is not None:  # a marker ended the previous block
            self._emit_marker(self.marker, lines[0] == "" and not (marks and 0 in marks), done)
            self.marker = None
        stop, error = len(lines), None
        if not self.ncols or not self._columns_agree(lines, rows):
            stop, error = self._first_column_error(lines, rows)
        self._collect(lines, rows, stop, done, marks)
        self.lineno += len(lines)
        if error is not None:
            raise error

    @staticmethod
    def _take_markers(
        text: str, lines: list[str], rows: list[list[str]]
    ) -> dict[int, list[str]]:
        """Set the ``-DOCSTART-`` lines aside (index -> fields) and blank them.

        The string is searched for, not every line looked at: a Python step per
        occurrence, not per line (that cost 15% of reading CoNLL-2002).
        """
        marks = {}
        index, counted = 0, 0  # line index of text[counted]
        at = text.find(DOCSTART)
        while at >= 0:
            index += text.count("\n", counted, at)
            counted = at
            if rows[index][0] == DOCSTART:
                marks[index] = rows[index]
                lines[index], rows[index] = "", [""]
            at = text.find(DOCSTART, at + len(DOCSTART))
        return marks

    def _take_separators(self, lines: list[str], rows: list[list[str]],
                         marks: dict[int, list[str]]) -> dict[int, list[str]] | None:
        """Set the lines ``doc_sep`` matches aside as markers too (a step per line: only
        with ``--doc-sep``)."""
        search = self.doc_sep.search
        for index, line in enumerate(lines):
            if line and search(line):
                marks[index] = rows[index]
                lines[index], rows[index] = "", [""]
        return marks or None

    @staticmethod
    def _emit_marker(marker: DocStart, blank_after: bool, done: list[Item]) -> None:
        marker.blank_after = blank_after
        done.append(marker)

    def _columns_agree(self, lines: list[str], rows: list[list[str]]) -> bool:
        """Whether every token line has ``ncols`` fields, counted in C, not per line."""
        ncols = self.ncols
        expected = len(rows) if ncols == 1 else len(rows) - lines.count("")
        return list(map(len, rows)).count(ncols) == expected

    def _first_column_error(
        self, lines: list[str], rows: list[list[str]]
    ) -> tuple[int, InputError | None]:
        """Line by line: fix ``ncols`` at the first token line, find the first bad line.

        Returns the index of the bad line (or the block length) and its error.
        """
        for index, fields in enumerate(rows):
            if not lines[index]:
                continue
            found, ncols = len(fields), self.ncols
            if not ncols and found < self.min_columns:
                what = " (tokens and a label)" if self.min_columns >= 2 else ""
                message = f"expected at least {self.min_columns} columns{what}, found {found}"
            elif ncols and found != ncols:
                message = f"expected {ncols} columns, found {found}"
            else:
                self.ncols = found
                continue
            return index, InputError(message, path=self.name, line=self.lineno + index + 1)
        return len(rows), None

    def _collect(
        self,
        lines: list[str],
        rows: list[list[str]],
        stop: int,
        done: list[Item],
        marks: dict[int, list[str]] | None,
    ) -> None:
        """Group ``rows[:stop]`` into sequences at blank lines, found by ``list.index``;
        a marker (a blank line in ``marks``) follows the sequence it ends."""
        first = self.lineno + 1  # line number of lines[0]
        start = 0
        while True:
            try:
                blank = lines.index("", start, stop)
            except ValueError:
                blank = stop
            if blank > start:
                numbers = list(range(first + start, first + blank))
                if self.rows:  # the sequence began in the previous block
                    self.rows.extend(rows[start:blank])
                    self.lines.extend(numbers)
                else:
                    self.rows, self.lines = rows[start:blank], numbers
            if blank == stop:
                return
            if self.rows:
                done.append(Sequence(self.rows, self.lines))
                self.rows, self.lines = [], []
            if marks and self.markers and blank in marks:
                marker = DocStart(marks[blank], first + blank)
                if blank + 1 == len(lines):  # the next line is in the next block
                    self.marker = marker
                else:
                    after = blank + 1
                    self._emit_marker(marker, lines[after] == "" and after not in marks, done)
            start = blank + 1


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for a short stretch of our own code."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


