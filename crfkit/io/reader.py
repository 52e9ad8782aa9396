"""Streaming reader for column files (Wapiti, CRF++, CoNLL).

A column file holds one token per line, its columns separated by tabs or runs
of spaces, and a blank line between sequences.  :func:`read_sequences` yields
one :class:`Sequence` at a time, so labelling a 10 GB file needs the memory of
one sequence, and a caller learns the column count by peeking at the first
sequence instead of reading the file twice.

Design decisions, and why:

* Bytes are read in blocks of whole lines and decoded strictly, block by
  block; an undecodable byte is reported with its line and its absolute byte
  offset (in the decompressed stream for gzip input), because "invalid
  continuation byte" without a place is useless in a 50 MB corpus.  Only
  ASCII-compatible encodings are accepted (UTF-8, Latin-1, EUC-JP, Shift-JIS,
  GBK, ...): a line break must be the byte ``\\n``.
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

import codecs
import gc
import gzip
import io
import os
import re
import select
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from crfkit.errors import InputError, UsageError

__all__ = ["DOCSTART", "PAUSE", "DocStart", "Pause", "Sequence", "canonical_encoding",
           "is_live", "open_binary", "read_items", "read_sequences"]

_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_BLOCK_SIZE = 1 << 16
_SEPARATORS = ("auto", "tab", "space")
_SPACE_RUN = re.compile(r"  +")
_EDGE_SPACE = re.compile(r"^ | $", re.MULTILINE)  # after squeezing runs of spaces
_BLANK_LINE = re.compile(r"^[ \t]+$", re.MULTILINE)
_SURROGATE = re.compile("[\ud800-\udfff]")
DOCSTART = "-DOCSTART-"
_ENCODING_HINT = "(is the file in another encoding? give it with --encoding)"


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


def open_binary(source: str | os.PathLike | None) -> tuple[BinaryIO, str]:
    """Open ``source`` for binary reading and return ``(stream, display name)``.

    ``None`` or ``"-"`` is standard input (named ``<stdin>``; the caller must not
    close it).  Gzip data is decompressed transparently, recognised by its
    magic bytes whatever the file is called, so ``zcat``-less pipelines work;
    a ``.gz`` name whose content is not gzip is an error rather than garbage.
    """
    if source is None or source == "-":
        return _maybe_gunzip(sys.stdin.buffer, "<stdin>", owned=False), "<stdin>"
    name = os.fsdecode(source)
    try:
        stream = open(name, "rb")  # closed by the caller
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror or err}", path=name) from None
    return _maybe_gunzip(stream, name, owned=True), name


def read_sequences(
    source: str | os.PathLike | BinaryIO | None,
    *,
    encoding: str = "utf-8",
    sep: str = "auto",
    name: str | None = None,
    min_columns: int = 1,
) -> Iterator[Sequence]:
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
    codec = _check_options(encoding, sep, min_columns)
    return _read(source, codec, encoding, sep, name, min_columns)  # type: ignore[return-value]


def read_items(
    source: str | os.PathLike | BinaryIO | None,
    *,
    encoding: str = "utf-8",
    sep: str = "auto",
    name: str | None = None,
    min_columns: int = 1,
    pauses: bool = False,
    doc_sep: str | None = None,
) -> Iterator[Item]:
    """Like :func:`read_sequences`, but also yield a :class:`DocStart` for each
    ``-DOCSTART-`` line, in file order, and with ``pauses`` :data:`PAUSE` before
    every read that may wait (for input that :func:`is_live`). ``doc_sep``: a
    regex; lines it matches (``re.search``, after the separators are normalised)
    are document markers too."""
    codec = _check_options(encoding, sep, min_columns)
    separator = None
    if doc_sep is not None:
        try:
            separator = re.compile(doc_sep)
        except re.error as err:
            raise UsageError(f"--doc-sep: bad regex {doc_sep!r}: {err}") from None
    return _read(source, codec, encoding, sep, name, min_columns, markers=True, pauses=pauses,
                 doc_sep=separator)


def is_live(source: str | os.PathLike | BinaryIO | None) -> bool:
    """Whether reading ``source`` may wait for a writer: a pipe, terminal, socket or FIFO.

    A regular file (also as redirected standard input) and an in-memory stream
    are not live: all their data is there, so it can be read in large blocks.
    """
    try:
        if source is None or source == "-":
            mode = os.fstat(sys.stdin.fileno()).st_mode
        elif isinstance(source, (str, bytes, os.PathLike)):
            mode = os.stat(source).st_mode
        else:
            mode = os.fstat(source.fileno()).st_mode
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # no file descriptor (in-memory), or not there: the reader will say
    return not stat.S_ISREG(mode)


def canonical_encoding(encoding: str) -> str:
    """The codec name the reader decodes ``encoding`` with (``latin-1`` -> ``iso8859-1``;
    any UTF-8 spelling -> ``utf-8``); :class:`UsageError` if it cannot read column files."""
    return check_encoding(encoding)


def _check_options(encoding: str, sep: str, min_columns: int) -> str:
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
    stream, display, close = _open_source(source)
    display = name or display
    try:
        parser = _Parser(display, sep, min_columns, markers)
        parser.doc_sep = doc_sep
        for text in _text_blocks(stream, display, codec, encoding, pauses):
            if text is None:
                yield PAUSE
            else:
                yield from parser.feed(text)
        yield from parser.finish()
    finally:
        if close:
            stream.close()


class _Parser:
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
                self._parse(self._normalize(text), done)
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

    def _normalize(self, text: str) -> str:
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


def check_encoding(encoding: str) -> str:
    """Validate ``encoding``; return the name of the codec to decode with."""
    try:
        info = codecs.lookup(encoding)
        # An error handler, as crfkit eval uses: refuses idna, which is for host names.
        compatible = "\n\t a0".encode(info.name, "surrogateescape") == b"\n\t a0"
    except LookupError:
        raise UsageError(f"unknown encoding {encoding!r}") from None
    except (UnicodeError, TypeError):
        compatible = False
    except ValueError:  # codecs.lookup("a\x00"): an embedded NUL character
        raise UsageError(f"unknown encoding {encoding!r}") from None
    if not compatible:
        raise UsageError(
            f"encoding {encoding!r} is not supported: column files need an "
            "ASCII-compatible encoding such as utf-8, latin-1 or euc-jp"
        )
    if info.name == "utf-8-sig":
        # Decoding block by block with utf-8-sig would drop a BOM at every block;
        # _text_blocks skips the one at the file start for any UTF-8 spelling.
        return "utf-8"
    return info.name


def _open_source(
    source: str | os.PathLike | BinaryIO | None,
) -> tuple[BinaryIO, str, bool]:
    """Return ``(stream, display name, whether we must close it)``."""
    if source is None or isinstance(source, (str, bytes, os.PathLike)):
        stream, display = open_binary(source)  # type: ignore[arg-type]
        return stream, display, stream is not sys.stdin.buffer
    if isinstance(source, io.TextIOBase):
        raise UsageError("read_sequences needs a binary stream, not a text stream")
    display = getattr(source, "name", None)
    display = display if isinstance(display, str) else "<stream>"
    stream = _maybe_gunzip(source, display, owned=False)
    return stream, display, stream is not source


def _maybe_gunzip(stream: BinaryIO, name: str, *, owned: bool) -> BinaryIO:
    """Wrap ``stream`` in a gzip reader if it starts with the gzip magic bytes."""
    head = _peek(stream, 2)
    if head.startswith(_GZIP_MAGIC):
        return _GzipReader(stream, owned=owned)
    if head and name.endswith(".gz"):
        if owned:
            stream.close()
        raise InputError("not a gzip file, although its name ends in .gz", path=name)
    return stream


def _peek(stream: BinaryIO, size: int) -> bytes:
    """Look at the first bytes of ``stream`` without consuming them, if it allows."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return peek(size)[:size]
    if stream.seekable():
        position = stream.tell()
        head = stream.read(size)
        stream.seek(position)
        return head
    return b""  # cannot look ahead: assume plain text


class _GzipReader(gzip.GzipFile):
    """A GzipFile that closes the underlying stream too when we opened it."""

    def __init__(self, stream: BinaryIO, *, owned: bool) -> None:
        super().__init__(fileobj=stream, mode="rb")
        self._owned_stream = stream if owned else None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._owned_stream is not None:
                self._owned_stream.close()


def _text_blocks(
    stream: BinaryIO, name: str, codec: str, encoding: str, pauses: bool = False
) -> Iterator[str | None]:
    """Yield decoded text in blocks of whole lines, without the block's last newline.

    ``codec`` is the normalised codec name; ``encoding`` the user's spelling,
    for messages.  A UTF-8 byte order mark at the start of the file is skipped
    (but counted in byte offsets).  With ``pauses``, ``None`` is yielded
    before a read that may wait (no data is ready on the file descriptor).

    The parser splits each block on ``\\n`` (``\\r\\n`` is already ``\\n``).
    Cutting blocks after a newline byte is safe because the encoding is
    ASCII-compatible.  On an undecodable byte the lines before the bad one
    are yielded first, then :class:`InputError` is raised.
    """
    read = getattr(stream, "read1", None) or stream.read  # read1: what is there, up to a block
    skip_bom = codec == "utf-8"
    offset = 0  # absolute byte offset of the block being decoded
    lineno = 0  # number of lines before that block
    pending: list[bytes] = []  # start of a line longer than one chunk
    while True:
        if pauses and not _input_ready(stream):
            yield None
        chunk = _read_chunk(read, stream, name, lineno)
        if chunk:
            end = chunk.rfind(b"\n") + 1
            if not end:
                pending.append(chunk)
                continue
            data = b"".join((*pending, chunk[:end])) if pending else chunk[:end]
            pending = [chunk[end:]] if end < len(chunk) else []
        else:
            data = b"".join(pending)  # a last line without a newline
            if not data:
                return
        if offset == 0 and skip_bom and data.startswith(_UTF8_BOM):
            data, offset = data[len(_UTF8_BOM) :], len(_UTF8_BOM)
        yield from _decode(data, codec, encoding, name, offset, lineno)
        if not chunk:
            return
        offset += len(data)
        lineno += data.count(b"\n")


def _input_ready(stream: BinaryIO) -> bool:
    """Whether the stream's file descriptor has data to read now (False if unknown).

    Data buffered inside ``stream`` is not seen, which only costs an extra pause.
    """
    try:
        return bool(select.select([stream.fileno()], [], [], 0)[0])
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def _read_chunk(read, stream: BinaryIO, name: str, lineno: int) -> bytes:
    """Read the next chunk, turning I/O and gzip failures into InputError."""
    try:
        return read(_BLOCK_SIZE)
    except (OSError, EOFError, zlib.error) as err:
        what = "gzip data" if isinstance(stream, gzip.GzipFile) else "file"
        raise InputError(f"cannot read {what}: {err}", path=name, line=lineno + 1) from None


def _decode(
    data: bytes, codec: str, encoding: str, name: str, offset: int, lineno: int
) -> Iterator[str]:
    """Decode one block; yield its text, or the good lines then raise InputError."""
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as err:
        last_good = data.rfind(b"\n", 0, err.start)
        if last_good >= 0:
            yield from _valid(data[:last_good].decode(codec), data, encoding, name, offset,
                              lineno)
        raise InputError(
            f"cannot decode the data as {encoding} at byte offset {offset + err.start} "
            f"{_ENCODING_HINT}",
            path=name,
            line=lineno + data.count(b"\n", 0, err.start) + 1,
        ) from None
    if text.endswith("\n"):
        text = text[:-1]
    yield from _valid(text, data, encoding, name, offset, lineno)


def _valid(
    text: str, data: bytes, encoding: str, name: str, offset: int, lineno: int
) -> Iterator[str]:
    """Yield decoded text, or its lines before a lone surrogate and then raise InputError.

    UTF-7 and raw_unicode_escape can spell lone surrogates, which no model file
    or UTF-8 output can hold: undecodable data like any other.  ``data`` is the
    block's bytes (starting at ``offset``), to place the error.
    """
    if not text.isascii() and (found := _SURROGATE.search(text)):
        last_good = text.rfind("\n", 0, found.start())
        if last_good >= 0:
            yield _normalize(text[:last_good])
        bad = text.count("\n", 0, found.start())  # lines of the block before the bad one
        start = 0
        for _ in range(bad):  # a line break is the byte \n: find the bad line's first byte
            start = data.index(b"\n", start) + 1
        raise InputError(
            f"cannot decode the data as {encoding}: it encodes a lone surrogate "
            f"U+{ord(found.group()):04X} in the line at byte offset {offset + start} "
            f"{_ENCODING_HINT}",
            path=name,
            line=lineno + bad + 1,
        )
    yield _normalize(text)


def _normalize(text: str) -> str:
    """Turn CRLF line ends into LF, including the block's last one."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if text.endswith("\r"):
            text = text[:-1]
    return text
