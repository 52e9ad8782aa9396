"""Chunk-level evaluation, a drop-in replacement for the CoNLL ``conlleval`` script.

``crfkit eval`` reads the same files as ``conlleval`` (the last two columns of
each line are the gold and the predicted tag) and prints the same report, byte
for byte, so existing scripts that parse conlleval's output keep working. The
rules below are those of conlleval (version 2004-01-26); they are reproduced
here, quirks included, because published CoNLL scores were computed with them.

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

Tags and chunks
---------------
* A tag is split at its **first** hyphen into a prefix and a type:
  ``B-DATE-TIME`` is prefix ``B`` with type ``DATE-TIME``; a tag without a
  hyphen (``O``, ``NP``) is a prefix with the empty type. A type written
  ``0`` counts as the empty type (a Perl truth-value quirk).
* Between the previous tag (prefix ``p``, type ``s``) and the current one
  (prefix ``c``, type ``t``), with the previous tag ``O`` at a file start:

  - a chunk **ends** if ``p c`` is one of ``B B``, ``B O``, ``I B``, ``I O``,
    ``E E``, ``E I``, ``E O``; or ``p`` is ``[`` or ``]``; or ``p`` is not
    ``O`` or ``.`` and ``s != t``;
  - a chunk **starts** if ``p c`` is one of ``B B``, ``I B``, ``O B``,
    ``O I``, ``E E``, ``E I``, ``O E``; or ``c`` is ``[`` or ``]``; or ``c``
    is not ``O`` or ``.`` and ``s != t``.

  So ``I-NP`` after ``O`` starts a chunk (IOB1), a type change always splits
  chunks, and ``E`` is read as in IOE (``E`` ends a chunk only when the next
  tag begins another). conlleval knows no ``S`` prefix: an ``S-X`` tag only
  starts a chunk through a type change, so with IOBES tags two adjacent
  same-type chunks (``S-X S-X``, ``E-X B-X``) count as one. ``--scheme iobes``
  adds the missing IOBES rules (``B``/``S`` always start a chunk, ``E``/``S``
  always end one); without it the counts are conlleval's. ``--scheme``
  cannot be combined with ``-r``.
* ``--scheme`` checks the gold and the predicted column and stops at the
  first line (``file:line``, naming the column) whose tag breaks the
  scheme. Tags are the outside tag (``-o``, default ``O``) and ``P-TYPE``
  with a prefix ``P`` of the scheme and a non-empty type. A sentence break
  resets the previous tag to outside. Transitions (``X`` a type):

  - ``iob1``: ``I-X`` may start a chunk anywhere; ``B-X`` only directly
    after a token of type ``X`` (``B-X`` or ``I-X``).
  - ``iob2``: ``B-X`` anywhere; ``I-X`` only after ``B-X`` or ``I-X``.
  - ``iobes``: after ``B-X`` or ``I-X`` only ``I-X`` or ``E-X`` (so a
    sentence end may not follow them); ``I-X`` and ``E-X`` only after
    ``B-X`` or ``I-X``; ``S-X``, ``B-X`` and the outside tag elsewhere.

  With a scheme the ``-o`` tag also counts as outside when scoring.
* A predicted chunk is correct when it starts where a gold chunk starts, with
  the same type, and both end at the same place.
* ``-r`` (raw): tags have no prefixes; every tag other than the outside tag is
  a one-word chunk (``B-`` is prepended). The outside tag (``-o``, default
  ``O``) matters only with ``-r`` (and ``--scheme``), exactly as in conlleval:
  without ``-r`` only the prefix ``O`` is outside.
* Token accuracy compares prefix and type of gold and predicted tags.

Scores
------
Precision, recall and FB1 are percentages; a ratio with a zero denominator is
0. The per-type list is the union of gold and predicted chunk types, sorted by
byte value (the empty type is listed once per side it occurs on, as conlleval
does). Empty input prints only the ``processed 0 tokens`` line.

JSON report (``--format json``)
-------------------------------
The JSON object has these keys (stable; new keys may be added later):

| key | meaning |
| --- | --- |
| `format` | `"crfkit-eval/1"`, the version of this layout |
| `options` | `{"outside": str, "raw": bool, "scheme": str or null}` as used |
| `tokens` | number of tokens (sentence-break lines not counted) |
| `correct_tags` | tokens whose predicted tag equals the gold tag |
| `accuracy` | `100 * correct_tags / tokens` (0 when there are no tokens) |
| `overall` | chunk scores over all types, a *score object* |
| `types` | chunk type → *score object*; gold and predicted types, sorted (see below) |
| `labels` | full tag (e.g. `B-NP`) → token-level *score object* (what `--tokens` prints) |
| `confusion` | with `--confusion`: `{"tags": [...], "matrix": [[...]]}` (tokens; row gold) |
| `chunk_errors` | with `--confusion`: chunk error classes (:mod:`crfkit.evaluation.confusion`) |

Types are sorted by name; `""` is the type of tags without a hyphen.
A *score object* has `precision`, `recall`, `f1` (percentages, 0–100,
unrounded, 0 when undefined), `support` (number of gold chunks or tokens),
`found` (number of predicted ones) and `correct` (number of correct ones).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import IO

import numpy as np

from crfkit.errors import InputError, UsageError
from crfkit.io.reader import check_encoding

__all__ = [
    "SCHEMES",
    "ChunkCounts",
    "EvalInput",
    "EvalReport",
    "check_scheme",
    "evaluate",
    "evaluate_tags",
    "format_conlleval",
    "format_json",
    "format_latex",
    "format_token_table",
    "read_eval_file",
]

BOUNDARY = "-X-"
"""First field of a line that marks a sentence break (besides empty lines)."""

DOCSTART = "-DOCSTART-"
"""First field of a CoNLL-2002/2003 document marker line (see the module docstring)."""

JSON_FORMAT = "crfkit-eval/1"

SCHEMES: dict[str, frozenset[str]] = {
    "iob1": frozenset("BI"),
    "iob2": frozenset("BI"),
    "iobes": frozenset("BIES"),
}
"""Tag prefixes each ``--scheme`` allows (besides the plain outside tag ``O``)."""

# conlleval's prefix pairs (previous, current) that end / start a chunk.
_END_PAIRS = frozenset({("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                        ("E", "E"), ("E", "I"), ("E", "O")})
_START_PAIRS = frozenset({("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                          ("E", "E"), ("E", "I"), ("O", "E")})
_SURROGATE = re.compile("[\ud800-\udfff]")
_NO_TYPE_RULE = ("O", ".")  # prefixes exempt from the type-change rule
_ONE_WORD = ("[", "]")  # prefixes of one-word chunks


# ---------------------------------------------------------------------------
# Report objects


def _ratio(num: int, den: int) -> float:
    """``100 * num / den`` or 0.0, computed in conlleval's order (same float)."""
    return 100 * num / den if den > 0 else 0.0


@dataclass(frozen=True)
class ChunkCounts:
    """Counts for one chunk type (or one tag, or all): scores derive from them."""

    correct: int = 0
    found: int = 0
    support: int = 0

    @property
    def precision(self) -> float:
        """Percentage of found items that are correct (0 when none found)."""
        return _ratio(self.correct, self.found)

    @property
    def recall(self) -> float:
        """Percentage of gold items that were found correctly (0 when none)."""
        return _ratio(self.correct, self.support)

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall, as conlleval's FB1."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        """The JSON *score object* (see module docstring)."""
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "support": self.support, "found": self.found, "correct": self.correct}


@dataclass(frozen=True)
class EvalReport:
    """Everything conlleval counts, plus token-level tag pairs for ``--tokens``.

    Scores are percentages (0–100), like conlleval prints them.
    """

    tokens: int
    correct_tags: int
    overall: ChunkCounts
    types: dict[str, ChunkCounts]
    """Chunk counts per type, sorted; union of gold and predicted types."""
    gold_types: frozenset[str] = frozenset()
    """Types with at least one gold chunk (conlleval lists ``""`` once per side)."""
    found_types: frozenset[str] = frozenset()
    """Types with at least one predicted chunk."""
    tag_pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    """Token counts per (gold tag, predicted tag), sentence breaks excluded."""
    outside: str = "O"
    raw: bool = False
    scheme: str | None = None
    encoding: str = "utf-8"
    """Encoding of the input: conlleval pads and sorts bytes, so we measure in it."""

    @property
    def accuracy(self) -> float:
        """Percentage of tokens whose predicted tag equals the gold tag."""
        return _ratio(self.correct_tags, self.tokens)

    @property
    def precision(self) -> float:
        """Overall chunk precision (percent)."""
        return self.overall.precision

    @property
    def recall(self) -> float:
        """Overall chunk recall (percent)."""
        return self.overall.recall

    @property
    def f1(self) -> float:
        """Overall chunk FB1 (percent)."""
        return self.overall.f1

    def listed_types(self) -> list[str]:
        """Types in the order (and multiplicity) conlleval prints them.

        conlleval sorts the gold and found type names together and drops a name
        equal to the previous one, except after the empty name (Perl treats it
        as false): so ``""`` appears twice when both sides have untyped chunks.
        """
        names = sorted(chain(self.gold_types, self.found_types), key=self._bytes)
        listed: list[str] = []
        last: str | None = None
        for name in names:
            if not last or last != name:
                listed.append(name)
            last = name
        return listed

    def labels(self) -> dict[str, ChunkCounts]:
        """Token-level counts per full tag (``B-NP``, ``O``...), sorted by tag."""
        support: Counter[str] = Counter()
        found: Counter[str] = Counter()
        correct: Counter[str] = Counter()
        for (gold, pred), n in self.tag_pairs.items():
            support[gold] += n
            found[pred] += n
            if gold == pred:
                correct[gold] += n
        return {tag: ChunkCounts(correct[tag], found[tag], support[tag])
                for tag in sorted(support.keys() | found.keys(), key=self._bytes)}

    def _bytes(self, text: str) -> bytes:
        return text.encode(self.encoding, "surrogateescape")

    def _width(self, text: str) -> int:
        """Width printf gives ``text``: conlleval counts bytes, not characters."""
        return len(self._bytes(text))


# ---------------------------------------------------------------------------
# Scoring


def split_tag(tag: str | None, raw: bool, outside: str, scheme: bool = False) -> tuple[str, str]:
    """(prefix, type) of a tag as conlleval reads it; None is a sentence break.

    With a ``scheme`` the outside tag is read as ``O`` (conlleval does that only with -r).
    """
    if tag is None:
        return "O", ""
    if scheme and tag == outside:
        return "O", ""
    if raw:
        if tag == outside:
            tag = "O"
        if tag != "O":
            tag = "B-" + tag
    prefix, _, kind = tag.partition("-")
    return prefix, ("" if kind == "0" else kind)


def chunk_end(prev: str, cur: str, prev_type: str, cur_type: str, iobes: bool) -> bool:
    """Whether a chunk ended between the previous and the current token."""
    if (prev, cur) in _END_PAIRS or prev in _ONE_WORD:
        return True
    if prev not in _NO_TYPE_RULE and prev_type != cur_type:
        return True
    # IOBES only: E and S close their chunk, S is a chunk of its own.
    return iobes and (prev in ("E", "S") or (prev in ("B", "I") and cur == "S"))


def chunk_start(prev: str, cur: str, prev_type: str, cur_type: str, iobes: bool) -> bool:
    """Whether a chunk started between the previous and the current token."""
    if (prev, cur) in _START_PAIRS or cur in _ONE_WORD:
        return True
    if cur not in _NO_TYPE_RULE and prev_type != cur_type:
        return True
    return iobes and (cur in ("B", "S") or (prev in ("E", "S") and cur in ("I", "E")))


_DENSE_LIMIT = 1 << 22  # code spaces up to this size are counted with a dense table


def _distinct(codes: np.ndarray, space: int) -> np.ndarray:
    """Sorted distinct values of non-negative int codes below ``space``."""
    if space <= _DENSE_LIMIT:
        return np.flatnonzero(np.bincount(codes, minlength=space))
    return np.unique(codes)


def _count_distinct(codes: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes and how often each occurs (np.unique without its slow paths)."""
    if space <= _DENSE_LIMIT:
        counts = np.bincount(codes, minlength=space)
        present = np.flatnonzero(counts)
        return present, counts[present]
    return np.unique(codes, return_counts=True)


def _lookup(codes: np.ndarray, keys: np.ndarray, values: np.ndarray, space: int) -> np.ndarray:
    """``values[i]`` for each code equal to ``keys[i]`` (keys sorted, all present)."""
    if space <= _DENSE_LIMIT:
        table = np.zeros(space, dtype=values.dtype)
        table[keys] = values
        return table[codes]
    return values[np.searchsorted(keys, codes)]


def evaluate_tags(
    gold: Sequence[str | None],
    pred: Sequence[str | None],
    *,
    outside: str = "O",
    raw: bool = False,
    scheme: str | None = None,
    encoding: str = "utf-8",
) -> EvalReport:
    """Score flat tag lists in which ``None`` marks a sentence break.

    This is the layout of a conlleval file (one entry per line), which lets the
    file reader skip building sentences. ``scheme="iobes"`` adds the IOBES
    boundary rules; other schemes use conlleval's rules unchanged, except that
    with any scheme the ``outside`` tag reads as ``O``.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold tags but {len(pred)} predicted tags")
    if scheme is not None and scheme not in SCHEMES:
        raise UsageError(f"unknown tagging scheme {scheme!r} (expected one of "
                         f"{', '.join(SCHEMES)})")
    c = _code_tags(gold, pred, outside=outside, raw=raw, scheme=scheme, encoding=encoding)
    correct_by_type, start_g, start_p = _chunk_counts(c, scheme == "iobes")
    n_types = len(c.type_names)
    support_by_type = np.bincount(c.tag_type[c.g][start_g], minlength=n_types)
    found_by_type = np.bincount(c.tag_type[c.p][start_p], minlength=n_types)
    tokens_mask = c.g != 0  # not a sentence break
    g, p, size = c.g[tokens_mask], c.p[tokens_mask], c.size
    correct_tags = int(np.count_nonzero(c.tag_norm[g] == c.tag_norm[p]))
    codes, counts = _count_distinct(g * size + p, size * size)
    tag_pairs = {(c.vocab[code // size], c.vocab[code % size]): k
                 for code, k in zip(codes.tolist(), counts.tolist(), strict=True)}

    types: dict[str, ChunkCounts] = {}
    for i, name in enumerate(c.type_names):
        if support_by_type[i] or found_by_type[i]:
            types[name] = ChunkCounts(int(correct_by_type[i]), int(found_by_type[i]),
                                      int(support_by_type[i]))
    overall = ChunkCounts(int(correct_by_type.sum()), int(found_by_type.sum()),
                          int(support_by_type.sum()))
    return EvalReport(
        tokens=int(np.count_nonzero(tokens_mask)),
        correct_tags=correct_tags,
        overall=overall,
        types=types,
        gold_types=frozenset(t for t, c in types.items() if c.support),
        found_types=frozenset(t for t, c in types.items() if c.found),
        tag_pairs=tag_pairs,
        outside=outside,
        raw=raw,
        scheme=scheme,
        encoding=encoding,
    )


@dataclass(frozen=True)
class _CodedTags:
    """Tags as small integers (0 is a sentence break); every rule is decided once per
    distinct tag or tag pair in Python, then applied to all tokens with numpy."""

    vocab: list[str | None]
    g: np.ndarray
    p: np.ndarray
    parts: list[tuple[str, str]]  # (prefix, type) of each tag id
    type_names: list[str]  # sorted by bytes
    tag_type: np.ndarray  # tag id -> index in type_names
    tag_norm: np.ndarray  # tag id -> id of its (prefix, type): equal tags for accuracy

    @property
    def size(self) -> int:
        return len(self.vocab)


def _code_tags(gold: Sequence[str | None], pred: Sequence[str | None], *, outside: str,
               raw: bool, scheme: str | None, encoding: str) -> _CodedTags:
    n = len(gold)
    vocab: list[str | None] = [None, *((set(gold) | set(pred)) - {None})]
    index = {tag: i for i, tag in enumerate(vocab)}
    g = np.fromiter(map(index.__getitem__, gold), dtype=np.int64, count=n)
    p = np.fromiter(map(index.__getitem__, pred), dtype=np.int64, count=n)
    if not np.array_equal(g == 0, p == 0):
        raise ValueError("sentence breaks (None) differ between gold and predicted tags")

    parts = [split_tag(tag, raw, outside, scheme is not None) for tag in vocab]
    type_names = sorted({kind for _, kind in parts}, key=lambda s: s.encode(encoding,
                                                                          "surrogateescape"))
    type_index = {kind: i for i, kind in enumerate(type_names)}
    tag_type = np.array([type_index[kind] for _, kind in parts], dtype=np.int64)
    norm_index: dict[tuple[str, str], int] = {}
    tag_norm = np.array([norm_index.setdefault(part, len(norm_index)) for part in parts],
                        dtype=np.int64)
    return _CodedTags(vocab, g, p, parts, type_names, tag_type, tag_norm)


def _boundaries(c: _CodedTags, cur: np.ndarray,
                iobes: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk end / start before each token of one column, and the previous tag ids."""
    size, parts = c.size, c.parts
    prev = np.concatenate((np.zeros(1, dtype=np.int64), cur[:-1]))
    codes = prev * size + cur
    pairs = _distinct(codes, size * size)
    ends = np.zeros(len(pairs), dtype=bool)
    starts = np.zeros(len(pairs), dtype=bool)
    for k, pair in enumerate(pairs.tolist()):
        (lp, lt), (cp, ct) = parts[pair // size], parts[pair % size]
        ends[k] = chunk_end(lp, cp, lt, ct, iobes)
        starts[k] = chunk_start(lp, cp, lt, ct, iobes)
    return (_lookup(codes, pairs, ends, size * size),
            _lookup(codes, pairs, starts, size * size), prev)


def _chunk_counts(c: _CodedTags, iobes: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Correct chunks per type, and where gold and predicted chunks start."""
    end_g, start_g, prev_g = _boundaries(c, c.g, iobes)
    end_p, start_p, _ = _boundaries(c, c.p, iobes)
    type_g, type_p = c.tag_type[c.g], c.tag_type[c.p]
    same_type = type_g == type_p
    same_last_type = np.concatenate((np.ones(1, dtype=bool), same_type[:-1]))

    # conlleval's state machine: "inside a chunk that is correct so far". At an
    # event (a chunk end on either side, or differing types) the state becomes
    # `opens`, after counting a correct chunk if both sides closed it; between
    # events it only switches on. So a chunk closed at an event is correct iff
    # some token since the previous event (inclusive) opened one.
    n = len(c.g)
    close = end_g & end_p & same_last_type
    opens = start_g & start_p & same_type
    events = np.flatnonzero(close | (end_g != end_p) | ~same_type)
    opened = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(opens)))
    since = np.concatenate((np.zeros(1, dtype=np.int64), events[:-1]))
    closing = events[close[events] & (opened[events] > opened[since])]
    correct_by_type = np.bincount(c.tag_type[prev_g[closing]], minlength=len(c.type_names))
    last_event = int(events[-1]) if len(events) else 0
    if n and opened[n] > opened[last_event]:  # a correct chunk still open at the end
        correct_by_type[c.tag_type[c.g[-1]]] += 1
    return correct_by_type, start_g, start_p


def evaluate(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    outside: str = "O",
    raw: bool = False,
    scheme: str | None = None,
) -> EvalReport:
    """Score predicted tag sequences against gold ones, as conlleval would.

    Each sentence is scored as if followed by a blank line in a conlleval file.
    Raises ValueError when the sentences or their lengths do not match.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted sentences")
    flat_gold: list[str | None] = []
    flat_pred: list[str | None] = []
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted tags")
        flat_gold.extend(g)
        flat_gold.append(None)
        flat_pred.extend(p)
        flat_pred.append(None)
    return evaluate_tags(flat_gold, flat_pred, outside=outside, raw=raw, scheme=scheme)


def check_scheme(data: EvalInput, scheme: str, *, outside: str = "O") -> None:
    """Raise InputError at the first line whose gold or predicted tag breaks the scheme.

    Catches a file evaluated with the wrong ``--scheme`` (say IOBES tags read
    as IOB2), or output a tagger made invalid, instead of printing scores
    computed with rules that do not fit it. The rules per scheme are in the
    module docstring; ``outside`` is the outside tag (``-o``).
    """
    if scheme not in SCHEMES:
        raise UsageError(f"unknown tagging scheme {scheme!r} (expected one of "
                         f"{', '.join(SCHEMES)})")
    found = []
    for side, column in (("gold", data.gold), ("predicted", data.pred)):
        problem = _first_scheme_problem(column, scheme, outside)
        if problem is not None:
            found.append((*problem, side))
    if found:
        index, reason, side = min(found, key=lambda item: item[0])  # gold first on a tie
        raise InputError(f"{side} {reason}", path=data.path, line=data.first_line + index)


def _first_scheme_problem(tags: Sequence[str | None], scheme: str,
                          outside: str) -> tuple[int, str] | None:
    """(index, reason) of the first tag of one column that breaks the scheme, or None.

    Every (previous tag, tag) pair is judged once, then looked up for all
    tokens; a sentence break (None) is both the end of one sequence (a pair
    (tag, None), reported at the tag) and an outside previous tag.
    """
    vocab: list[str | None] = [None, *(set(tags) - {None})]
    index = {tag: i for i, tag in enumerate(vocab)}
    size = len(vocab)
    ids = np.fromiter(map(index.__getitem__, chain(tags, [None])), dtype=np.int64,
                      count=len(tags) + 1)  # a sequence end after the last line
    prev = np.concatenate((np.zeros(1, dtype=np.int64), ids[:-1]))
    codes = prev * size + ids
    pairs = _distinct(codes, size * size)
    reasons = [_transition_problem(vocab[c // size], vocab[c % size], scheme, outside)
               for c in pairs.tolist()]
    bad = np.array([r is not None for r in reasons], dtype=bool)
    if not bad.any():
        return None
    where = np.flatnonzero(_lookup(codes, pairs, bad, size * size))
    # a problem found at a break (an unclosed chunk) belongs to the line before it
    at = np.where(ids[where] == 0, where - 1, where)
    k = int(np.argmin(at))
    code = int(codes[where[k]])
    return int(at[k]), str(reasons[int(np.searchsorted(pairs, code))])


def _scheme_parts(tag: str | None, scheme: str, outside: str) -> tuple[str, str] | None:
    """(prefix, type) of a tag under a scheme, ("O", "") outside, None if not a tag of it."""
    if tag is None or tag == outside:
        return "O", ""
    prefix, hyphen, kind = tag.partition("-")
    if not hyphen or not kind or prefix not in SCHEMES[scheme]:
        return None
    return prefix, kind


def _transition_problem(prev: str | None, cur: str | None, scheme: str,
                        outside: str) -> str | None:
    """Why ``cur`` may not follow ``prev`` under the scheme (None: it may).

    ``prev`` None is a sequence start, ``cur`` None a sequence end.
    """
    here = _scheme_parts(cur, scheme, outside)
    if here is None:
        prefixes = "/".join(sorted(SCHEMES[scheme]))
        return (f"tag {cur!r} is not a tag of scheme {scheme} "
                f"(expected {outside!r} or {prefixes}-TYPE)")
    before = _scheme_parts(prev, scheme, outside)
    if before is None:
        return None  # already reported at the previous line
    (p, s), (c, t) = before, here
    after = "at the start of a sequence" if prev is None else f"after {prev!r}"
    if scheme == "iob1" and c == "B" and not (p in ("B", "I") and s == t):
        return (f"tag {cur!r} {after} does not fit scheme iob1: B-{t} only directly "
                f"follows a token of type {t} (I-{t} starts a chunk)")
    if scheme == "iob2" and c == "I" and not (p in ("B", "I") and s == t):
        return (f"tag {cur!r} {after} does not fit scheme iob2: I-{t} only follows "
                f"B-{t} or I-{t}")
    if scheme == "iobes":
        if p in ("B", "I") and not (c in ("I", "E") and s == t):
            if cur is None:
                single = f" (a one-token chunk is S-{s})" if p == "B" else ""
                return (f"tag {prev!r} ends a sequence, which scheme iobes does not allow: "
                        f"a chunk ends with E-{s}{single}")
            return (f"tag {cur!r} {after} does not fit scheme iobes: after {prev!r} "
                    f"only I-{s} or E-{s}")
        if c in ("I", "E") and not (p in ("B", "I") and s == t):
            return (f"tag {cur!r} {after} does not fit scheme iobes: {c}-{t} only follows "
                    f"B-{t} or I-{t}")
    return None


# ---------------------------------------------------------------------------
# Reading


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


# ---------------------------------------------------------------------------
# Formatting


def format_conlleval(report: EvalReport) -> str:
    """The text report exactly as conlleval prints it (what scripts parse)."""
    o = report.overall
    out = [f"processed {report.tokens} tokens with {o.support} phrases; "
           f"found: {o.found} phrases; correct: {o.correct}.\n"]
    if report.tokens > 0:
        out.append(f"accuracy: {report.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
                   f"recall: {o.recall:6.2f}%; FB1: {o.f1:6.2f}\n")
    for name in report.listed_types():
        c = report.types[name]
        pad = " " * max(0, 17 - report._width(name))
        out.append(f"{pad}{name}: precision: {c.precision:6.2f}%; recall: {c.recall:6.2f}%; "
                   f"FB1: {c.f1:6.2f}  {c.found}\n")
    return "".join(out)


def _latex_rows(report: EvalReport, rows: Iterable[tuple[str, ChunkCounts]]) -> str:
    out = ["        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline"]
    for name, c in rows:
        pad = " " * max(0, 7 - report._width(name))
        out.append(f"\n{name}{pad} &  {c.precision:6.2f}\\% & {c.recall:6.2f}\\% & "
                   f"{c.f1:6.2f} \\\\")
    out.append("\\hline\n")
    return "".join(out)


def format_latex(report: EvalReport) -> str:
    """conlleval's ``-l`` output: a LaTeX table body, one row per type plus Overall."""
    rows = [(name, report.types[name]) for name in report.listed_types()]
    o = report.overall
    return _latex_rows(report, rows) + (
        f"Overall &  {o.precision:6.2f}\\% & {o.recall:6.2f}\\% & {o.f1:6.2f} \\\\\\hline\n")


def format_json(report: EvalReport, extra: dict | None = None) -> str:
    """The JSON report (keys documented in the module docstring), newline-terminated;
    ``extra`` adds keys (``--confusion``: ``confusion``, ``chunk_errors``)."""
    document = {
        "format": JSON_FORMAT,
        "options": {"outside": report.outside, "raw": report.raw, "scheme": report.scheme},
        "tokens": report.tokens,
        "correct_tags": report.correct_tags,
        "accuracy": report.accuracy,
        "overall": report.overall.as_dict(),
        "types": {name: c.as_dict() for name, c in report.types.items()},
        "labels": {tag: c.as_dict() for tag, c in report.labels().items()},
        **(extra or {}),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def format_token_table(report: EvalReport, *, latex: bool = False) -> str:
    """Token-level precision/recall/F1 per full tag (like Wapiti's check mode).

    Chunk scores hide which tags a model confuses; this table shows it. The
    header line differs from conlleval's lines so that report parsers skip it.
    """
    labels = report.labels()
    if latex:
        return _latex_rows(report, labels.items())
    out = [f"token-level scores per tag: {report.tokens} tokens; "
           f"correct: {report.correct_tags}; accuracy: {report.accuracy:6.2f}%\n",
           f"{'tag':>17}  {'precision':>9}  {'recall':>9}  {'F1':>9}  {'gold':>8}  "
           f"{'found':>8}  {'correct':>8}\n"]
    for tag, c in labels.items():
        pad = " " * max(0, 17 - report._width(tag))
        out.append(f"{pad}{tag}  {c.precision:8.2f}%  {c.recall:8.2f}%  {c.f1:9.2f}  "
                   f"{c.support:8d}  {c.found:8d}  {c.correct:8d}\n")
    return "".join(out)
