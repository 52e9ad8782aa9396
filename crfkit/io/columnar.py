"""Reading a column file by blocks of tokens held by column, for fast labelling.

:func:`crfkit.io.reader.read_items` hands over one :class:`~crfkit.io.reader.Sequence`
of row lists per sentence. Labelling a million tokens then touches every row
list several times (a column at a time, the label column, the output line),
and those passes over scattered small objects cost as much as the decoding.
:func:`read_token_blocks` reads the same text into :class:`TokenBlock` items:
the fields of all tokens of a text block in one flat list (a column is a slice
of it), each token's line as read (the output line starts with it), and the
sequence lengths. Splitting a block's lines, checking their column counts and
finding the sequence ends are a few whole-block operations in C.

Only regular text takes this road. At the first text block that holds a
``-DOCSTART-`` marker or a line with another column count, the reader hands
everything from there on (the incomplete sequence before that block
included) to :class:`crfkit.io.reader` 's own parser and yields its items
instead: the same items, and the same errors at the same lines, as
:func:`~crfkit.io.reader.read_items` gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import BinaryIO

import numpy as np

from crfkit.io.reader import (
    DOCSTART,
    BlockParser,
    Item,
    check_options,
)
from crfkit.io.text_input import open_source, text_blocks

# Lines of an unfinished sequence carried from block to block (each block copies them):
# a longer sequence goes to the row reader, which extends its rows in place.
LONGEST_TAIL = 1 << 14


@dataclass(slots=True)
class TokenBlock:
    """Complete sequences of a column file, held by column.

    ``fields`` holds every token's ``n_columns`` fields, token after token;
    ``texts[t]`` is token t's line with its fields joined by the separator
    (what ``crfkit label`` writes before the label); ``lengths`` the tokens
    of each sequence and ``lines[t]`` token t's 1-based line number.
    """

    fields: list[str]
    texts: list[str]
    n_columns: int
    lengths: np.ndarray  # int64 (n_sequences,)
    lines: np.ndarray  # int64 (n_tokens,)

    @property
    def n_tokens(self) -> int:
        return len(self.texts)

    def split(self, tokens: int) -> tuple[TokenBlock, TokenBlock | None]:
        """The block's sequences up to the one that brings the count to ``tokens`` (at
        least one), and the rest (None if nothing is left)."""
        ends = np.cumsum(self.lengths)
        k = int(np.searchsorted(ends, tokens)) + 1
        if k >= len(ends):
            return self, None
        t, n = int(ends[k - 1]), self.n_columns
        return (TokenBlock(self.fields[:t * n], self.texts[:t], n, self.lengths[:k],
                           self.lines[:t]),
                TokenBlock(self.fields[t * n:], self.texts[t:], n, self.lengths[k:],
                           self.lines[t:]))


def read_token_blocks(source: str | os.PathLike | BinaryIO | None, *,
                      encoding: str = "utf-8", sep: str = "auto",
                      name: str | None = None) -> Iterator[TokenBlock | Item]:
    """The items of :func:`crfkit.io.reader.read_items` (without pauses or ``doc_sep``),
    but as :class:`TokenBlock` items until the text stops being regular (module
    docstring)."""
    codec = check_options(encoding, sep, 1)
    stream, display, close = open_source(source)
    try:
        reader = _BlockReader(BlockParser(name or display, sep, 1, markers=True))
        blocks = text_blocks(stream, reader.parser.name, codec, encoding)
        for text in blocks:
            block = reader.feed(text)
            if block is None:  # irregular: the row reader takes over from here
                yield from reader.parser.feed(reader.handover(text))
                for rest in blocks:
                    yield from reader.parser.feed(rest)
                break
            if block.n_tokens:
                yield block
        else:
            last = reader.finish()
            if last is not None:
                yield last
            elif reader.tail:
                yield from reader.parser.feed(reader.handover(""))
        yield from reader.parser.finish()
    finally:
        if close:
            stream.close()


class _BlockReader:
    """Turns blocks of normalised lines into :class:`TokenBlock` items; the lines after a
    block's last blank line (a sequence that may go on) wait for the next block."""

    def __init__(self, parser: BlockParser) -> None:
        self.parser = parser  # its normalisation, and the reader after a handover
        self.tail: list[str] = []  # the lines of the incomplete sequence
        self.lineno = 0  # lines before the tail

    def feed(self, text: str) -> TokenBlock | None:
        """The complete sequences of the tail and this block; None if the block is not
        regular (nothing consumed then)."""
        text = self.parser.normalize(text)
        if DOCSTART in text:
            return None
        lines = text.split("\n")
        if self.tail:
            lines = self.tail + lines
        sizes = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        blank = np.flatnonzero(sizes == 0)
        cut = int(blank[-1]) + 1 if len(blank) else 0  # lines[cut:] may go on
        if len(lines) - cut > LONGEST_TAIL:  # a huge sequence: the row reader extends it
            return None
        block = self._block(lines[:cut], sizes[:cut] > 0)
        if block is None:
            return None
        self.tail = lines[cut:]
        self.lineno += cut
        return block

    def finish(self) -> TokenBlock | None:
        """The last sequence, when the file does not end with a blank line (None, the tail
        kept, if it is not regular)."""
        if not self.tail:
            return None
        block = self._block(self.tail, np.ones(len(self.tail), dtype=bool))
        if block is not None:
            self.tail = []
        return block

    def handover(self, text: str) -> str:
        """Set the row reader's state to where this reader stands and return the text
        it must read first: the tail's lines, then the block's."""
        parser = self.parser
        parser.lineno = self.lineno
        if not text:
            return "\n".join(self.tail)
        return "\n".join([*self.tail, text]) if self.tail else text

    def _block(self, lines: list[str], is_token: np.ndarray) -> TokenBlock | None:
        """The sequences of ``lines`` (whole ones), or None if a token line has another
        column count than the file's first."""
        sep = self.parser.sep_char
        texts = list(filter(None, lines))
        if not texts:
            return TokenBlock([], [], self.parser.ncols, np.zeros(0, np.int64),
                              np.zeros(0, np.int64))
        if not self.parser.ncols:
            self.parser.ncols = texts[0].count(sep) + 1
        ncols = self.parser.ncols
        counts = list(map(str.count, texts, repeat(sep)))
        if counts.count(ncols - 1) != len(counts):
            return None
        fields = sep.join(texts).split(sep)
        where = np.flatnonzero(is_token)
        starts = np.flatnonzero(np.diff(where, prepend=-2) != 1)
        lengths = np.diff(np.append(starts, len(where)))
        return TokenBlock(fields, texts, ncols, lengths, where + self.lineno + 1)
