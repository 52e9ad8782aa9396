"""The input of ``crfkit eval``: the files conlleval reads, read as conlleval reads them.

Reading the input
-----------------
* Bytes, as conlleval (Perl compares and pads bytes): without ``--encoding``
  the input is decoded as UTF-8 or, if it is not valid UTF-8, byte for byte
  as Latin-1, and the report is written back with the same mapping, so type
  names come out as the same bytes and ``%17s`` pads by bytes. So
  ``crfkit label --encoding latin-1 ... | crfkit eval`` needs no
  ``--encoding``. With ``--encoding`` the input is decoded strictly (an
  undecodable byte is an error naming file, line and byte offset) and the
  report is written in that encoding. The JSON report is always UTF-8.
* Fields are separated by any ASCII whitespace (conlleval: a single space).
  ``-d`` sets another delimiter: one character is taken literally, anything
  longer is a regular expression with ASCII rules for ``\\s``, ``\\w`` (as in
  conlleval, so ``-d '\\t'`` means a tab). Trailing empty fields are dropped.
* The first non-empty line fixes the number of fields; a later non-empty line
  with another count is an error, and so is a line with fewer than two fields
  (unless it is a sentence break).
* A sentence break is an empty line or a line whose first field is ``-X-``.
  It is not counted as a token and acts as an ``O``/``O`` line (it ends open
  chunks).
* ``-DOCSTART-`` lines (CoNLL-2002/2003 document markers) with the file's
  number of fields are ordinary tokens (usually tagged ``O``), as in
  conlleval. One with another number of fields (a bare ``-DOCSTART-`` in a
  four-column file) is a document boundary, read as a sentence break, where
  conlleval would stop with an error. The first line that is not a
  ``-DOCSTART-`` line fixes the number of fields.
* Output of ``crfkit label -s`` is scored as it is: when the first non-empty
  line is a score line ``# LOGPROB`` (one number with four decimals) and
  every token line's last field ends in ``/PROB`` (``B-NP/0.9876``), score
  lines are read as sentence breaks and ``/PROB`` is removed from the
  predicted tags. Otherwise nothing is removed: ``# # B-NP`` (CoNLL-2000's
  ``#`` token) is a token and a tag may contain ``/``. Output that holds
  more than one prediction per token (``-n N`` blocks headed
  ``# RANK LOGPROB``, ``--marginals`` columns, ``-s`` with
  ``--nbest-columns``) is refused with the option to drop. (Without ``-s``,
  ``--nbest-columns`` output cannot be told from a file with more columns.)
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from crfkit.errors import InputError, UsageError
from crfkit.io.reader import check_encoding

BOUNDARY = "-X-"
"""First field of a line that marks a sentence break (besides empty lines)."""

DOCSTART = "-DOCSTART-"
"""First field of a CoNLL-2002/2003 document marker line (see the module docstring)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class EvalInput:
    """Tags read from a conlleval file: one entry per line, None at sentence breaks."""

    gold: list[str | None]
    pred: list[str | None]
    path: str | None = None
    first_line: int = 1
    encoding: str = "utf-8"
    """The encoding the text was decoded with (the report is written in it)."""


def _splitter(delimiter: str | None):
    """A function splitting a line into fields like conlleval's Perl ``split``.

    By default on runs of ASCII white space only: conlleval splits bytes, so
    U+3000 or U+00A0 inside a token (kept by crfkit's reader) is not a break.
    A regular expression matches with ASCII rules (``\\s``, ``\\w``), as Perl's
    does on bytes.
    """
    if delimiter is None:
        ascii_space = re.compile(r"[ \t\n\r\f\v]+")

        def split_ascii(line: str) -> list[str]:
            return [field for field in ascii_space.split(line) if field]

        return split_ascii
    if delimiter == "":
        raise UsageError("the field delimiter (-d) must not be empty")
    if len(delimiter) == 1:
        def split_literal(line: str) -> list[str]:
            fields = line.split(delimiter)
            while fields and not fields[-1]:  # Perl drops trailing empty fields
                fields.pop()
            return fields
        return split_literal
    try:
        pattern = re.compile(delimiter, re.ASCII)
    except re.error as err:
        raise UsageError(f"bad field delimiter (-d) {delimiter!r}: {err}") from None
    if pattern.match(""):
        raise UsageError(f"the field delimiter (-d) {delimiter!r} matches an empty string")

    def split_regex(line: str) -> list[str]:
        fields = pattern.split(line)
        while fields and not fields[-1]:
            fields.pop()
        return fields
    return split_regex


def read_eval_file(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
) -> EvalInput:
    """Read gold and predicted tags (the last two fields) from a conlleval file.

    ``source`` is a path, ``"-"`` for stdin, or a binary stream. ``encoding``
    None reads any bytes (UTF-8, else Latin-1; see the module docstring); a
    named encoding is strict. Output of ``crfkit label -s`` is recognised.
    Raises InputError naming the file and line for unreadable or malformed
    input, UsageError for an encoding the column reader would refuse too.
    """
    # e.g. "idna" decodes but cannot sort/pad tags by their bytes; "utf-8-sig" reports as utf-8
    codec = None if encoding is None else check_encoding(encoding)
    name, data = _read_bytes(source)
    text, used = _decode(data, encoding, name)
    used = codec or used
    del data
    lines = text.split("\n")
    del text
    if lines[-1] == "":
        lines.pop()
    gold, pred = _read_columns(lines, _splitter(delimiter), name)
    return EvalInput(gold, pred, name, encoding=used)


def _read_bytes(source: str | os.PathLike[str] | IO[bytes]) -> tuple[str, bytes]:
    """(display name, whole content) of a path, ``-`` (stdin) or a binary stream."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path == "-":
            return "<stdin>", sys.stdin.buffer.read()
        try:
            with open(path, "rb") as handle:
                return path, handle.read()
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    name = getattr(source, "name", None)
    return (name if isinstance(name, str) else "<stream>"), source.read()


def _decode(data: bytes, encoding: str | None, name: str) -> tuple[str, str]:
    """(text, encoding used): byte-transparent without ``encoding``, else strict."""
    if encoding is None:
        try:
            return data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            return data.decode("latin-1"), "latin-1"  # every byte is one character
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise _decode_error(data, err.start, f"{err.reason}", encoding, name) from None
    except LookupError:
        raise UsageError(f"unknown encoding {encoding!r}") from None
    if not text.isascii() and (found := _SURROGATE.search(text)):  # UTF-7 can spell one
        # the encoding is ASCII-compatible: line k starts after the (k-1)th newline byte
        line = text.count("\n", 0, found.start())
        start = 0
        for _ in range(line):
            start = data.index(b"\n", start) + 1
        raise _decode_error(data, start, f"a lone surrogate U+{ord(found.group()):04X} "
                            "in the line starting there", encoding, name)
    return text, encoding


def _decode_error(data: bytes, offset: int, reason: str, encoding: str,
                  name: str) -> InputError:
    """The one-line error for undecodable input: file, line, byte offset, what to do."""
    return InputError(
        f"cannot decode the data as {encoding} at byte offset {offset} ({reason}); "
        f"give the file's encoding with --encoding, or leave --encoding out to read "
        f"the bytes as they are (as conlleval does)",
        path=name, line=data.count(b"\n", 0, offset) + 1)


# Output of `crfkit label` (see crfkit.labelling.output): log-probabilities and
# probabilities are written with four decimals.
_LOGPROB = r"-?(?:\d+\.\d{4}|inf)"
_SCORE_LINE = re.compile(rf"# {_LOGPROB}[ \t\r]*")  # -s
_SCORES_LINE = re.compile(rf"# {_LOGPROB}(?: {_LOGPROB})+[ \t\r]*")  # -s -n N --nbest-columns
_RANK_LINE = re.compile(rf"# \d+ {_LOGPROB}[ \t\r]*")  # -n N
_PROB_END = re.compile(r"/(?:0\.\d{4}|1\.0000)\Z")


def _read_columns(lines: list[str], split, name: str) -> tuple[list[str | None],
                                                             list[str | None]]:
    """Gold and predicted tags, recognising the output of ``crfkit label`` options.

    ``-s`` output is scored without its score lines and ``/PROB`` suffixes when
    the whole file has that shape; outputs that cannot be scored are refused.
    """
    first = next((number for number, line in enumerate(lines, 1) if line.strip()), 0)
    head = lines[first - 1] if first else ""
    if _RANK_LINE.fullmatch(head):
        raise _label_output_error("-n N", "N blocks headed '# RANK LOGPROB'", "-n",
                                  name, first)
    if _SCORES_LINE.fullmatch(head):
        raise _label_output_error("-s -n N --nbest-columns", "N label columns",
                                  "-n and --nbest-columns", name, first)
    scored = False
    if _SCORE_LINE.fullmatch(head):
        gold, pred, scored = _parse_scored(lines, split, name)
    if not scored:
        gold, pred = _parse_lines(lines, split, name)
    if _all_probabilities(pred) and _all_probabilities(gold):
        token = next((i for i, tag in enumerate(gold) if tag is not None), None)
        if token is not None:
            what = "-s --marginals" if scored else "--marginals"
            raise _label_output_error(what, "LABEL/PROB columns after the prediction",
                                      "--marginals", name, token + 1)
    if scored:
        stripped = {tag: tag[:tag.rindex("/")] for tag in set(pred) - {None}}
        stripped[None] = None
        pred = [stripped[tag] for tag in pred]
    return gold, pred


def _label_output_error(options: str, shape: str, drop: str, name: str,
                        line: int) -> InputError:
    """The one-line error for ``crfkit label`` output that is not one prediction a token."""
    return InputError(f"this is the output of 'crfkit label {options}' ({shape}), which "
                      f"cannot be scored: label again without {drop}", path=name, line=line)


def _parse_scored(lines: list[str], split, name: str) -> tuple[list[str | None],
                                                              list[str | None], bool]:
    """Parse as ``crfkit label -s`` output: (gold, pred, whether the file is that)."""
    try:
        gold, pred = _parse_lines(lines, split, name, skip=_SCORE_LINE.fullmatch)
    except InputError:
        if _all_scored(lines, split):  # -s output with a bad line: say where
            raise
        return [], [], False
    return gold, pred, _all_probabilities(pred)


def _all_scored(lines: list[str], split) -> bool:
    """Whether every token line's last field ends in ``/PROB`` (score lines aside)."""
    for line in lines:
        if not line or _SCORE_LINE.fullmatch(line):
            continue
        fields = split(line)
        if fields and fields[0] != BOUNDARY and not _PROB_END.search(fields[-1]):
            return False
    return True


def _all_probabilities(tags: Sequence[str | None]) -> bool:
    """Whether every tag ends in ``/PROB`` as ``crfkit label`` writes it."""
    return all(_PROB_END.search(tag) for tag in set(tags) - {None})


def _parse_lines(lines: list[str], split, name: str, *,
                 skip=None) -> tuple[list[str | None], list[str | None]]:
    """Gold and predicted tag per line, validating field counts as conlleval does.

    A line for which ``skip`` is true is read as a sentence break. A
    ``-DOCSTART-`` line whose field count differs from the file's is a document
    boundary (a sentence break); those before the first other line wait for
    its count.
    """
    gold: list[str | None] = []
    pred: list[str | None] = []
    add_gold, add_pred = gold.append, pred.append
    intern = sys.intern  # a few distinct tags: share them (memory, faster hashing later)
    width = -1  # number of fields, fixed by the first non-empty line
    width_line = 0
    waiting: list[tuple[int, list[str]]] = []  # -DOCSTART- lines before the width is known
    for number, line in enumerate(lines, 1):
        fields = split(line) if skip is None or not skip(line) else []
        n = len(fields)
        if n != width:
            if not n or fields[0] == DOCSTART:  # a break, or a -DOCSTART- line to settle
                if n and width < 0:
                    waiting.append((number, fields))
                add_gold(None)
                add_pred(None)
                continue
            if width < 0:
                width, width_line = n, number
                _settle_docstarts(waiting, width, gold, pred, name)
            else:
                fields_found = f"{n} field{'s' if n > 1 else ''}"
                raise InputError(f"found {fields_found}, expected {width} like line {width_line}",
                                 path=name, line=number)
        if fields[0] == BOUNDARY:
            add_gold(None)
            add_pred(None)
        elif n < 2:
            raise InputError("need at least two fields (gold and predicted tag), found 1",
                             path=name, line=number)
        else:
            add_gold(intern(fields[-2]))
            add_pred(intern(fields[-1]))
    if width < 0 and waiting:  # only -DOCSTART- lines: the first fixes the count
        _settle_docstarts(waiting, len(waiting[0][1]), gold, pred, name)
    return gold, pred


def _settle_docstarts(waiting: list[tuple[int, list[str]]], width: int,
                      gold: list[str | None], pred: list[str | None], name: str) -> None:
    """Turn waiting ``-DOCSTART-`` lines with the file's field count into tokens."""
    for number, fields in waiting:
        if len(fields) != width:
            continue  # a document boundary: stays a break
        if len(fields) < 2:
            raise InputError("need at least two fields (gold and predicted tag), found 1",
                             path=name, line=number)
        gold[number - 1], pred[number - 1] = fields[-2], fields[-1]
    waiting.clear()
