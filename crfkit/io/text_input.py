"""The bytes below a column file's lines: files, standard input and gzip opened alike,
blocks of whole lines decoded strictly.

Design decisions, and why:

* Bytes are read in blocks of whole lines and decoded strictly, block by
  block; an undecodable byte is reported with its line and its absolute byte
  offset (in the decompressed stream for gzip input), because "invalid
  continuation byte" without a place is useless in a 50 MB corpus.  Only
  ASCII-compatible encodings are accepted (UTF-8, Latin-1, EUC-JP, Shift-JIS,
  GBK, ...): a line break must be the byte ``\\n``.
* A read returns what is available (``read1``), never waiting to fill a block, and
  with ``pauses`` the caller hears before a read that may wait (a co-process on a
  pipe gets each sequence as soon as its blank line arrives).
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import select
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from crfkit.errors import InputError, UsageError

_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_BLOCK_SIZE = 1 << 16
_SURROGATE = re.compile("[\ud800-\udfff]")
_ENCODING_HINT = "(is the file in another encoding? give it with --encoding)"


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
        # text_blocks skips the one at the file start for any UTF-8 spelling.
        return "utf-8"
    return info.name


def open_source(
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


def text_blocks(
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
