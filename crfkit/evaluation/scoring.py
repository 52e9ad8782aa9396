"""Chunk-level evaluation, a drop-in replacement for the CoNLL ``conlleval`` script:
its chunk rules and counts.

``crfkit eval`` reads the same files as ``conlleval`` (the last two columns of
each line are the gold and the predicted tag) and prints the same report, byte
for byte, so existing scripts that parse conlleval's output keep working. The
rules below are those of conlleval (version 2004-01-26); they are reproduced
here, quirks included, because published CoNLL scores were computed with them.
The input is read by :mod:`crfkit.evaluation.reading`, the report printed by
:mod:`crfkit.evaluation.formatting`.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from crfkit.errors import InputError, UsageError
from crfkit.evaluation.counts import ChunkCounts, EvalReport
from crfkit.evaluation.partial import resolve_partial
from crfkit.evaluation.reading import EvalInput
from crfkit.io.label_sets import is_partial

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
_NO_TYPE_RULE = ("O", ".")  # prefixes exempt from the type-change rule
_ONE_WORD = ("[", "]")  # prefixes of one-word chunks


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
    partial: str = "skip",
) -> EvalReport:
    """Score flat tag lists in which ``None`` marks a sentence break.

    This is the layout of a conlleval file (one entry per line), which lets the
    file reader skip building sentences. ``scheme="iobes"`` adds the IOBES
    boundary rules; other schemes use conlleval's rules unchanged, except that
    with any scheme the ``outside`` tag reads as ``O``. ``partial`` says what a
    partial gold tag (``?``, ``A|B``) means (:mod:`crfkit.evaluation.partial`).
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold tags but {len(pred)} predicted tags")
    resolved = resolve_partial(gold, pred, partial)
    gold, pred = resolved.gold, resolved.pred
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
    partial: str = "skip",
) -> EvalReport:
    """Score predicted tag sequences against gold ones, as conlleval would.

    Each sentence is scored as if followed by a blank line in a conlleval file.
    Raises ValueError when the sentences or their lengths do not match.
    ``partial``: what a partial gold tag means (:mod:`crfkit.evaluation.partial`).
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
    return evaluate_tags(flat_gold, flat_pred, outside=outside, raw=raw, scheme=scheme,
                         partial=partial)


def check_scheme(data: EvalInput, scheme: str, *, outside: str = "O",
                 partial: str = "skip") -> None:
    """Raise InputError at the first line whose gold or predicted tag breaks the scheme.

    Catches a file evaluated with the wrong ``--scheme`` (say IOBES tags read
    as IOB2), or output a tagger made invalid, instead of printing scores
    computed with rules that do not fit it. The rules per scheme are in the
    module docstring; ``outside`` is the outside tag (``-o``). Unless ``partial``
    is ``literal``, a partial gold tag stands for tags the scheme may allow: no
    transition into or out of it is judged.
    """
    if scheme not in SCHEMES:
        raise UsageError(f"unknown tagging scheme {scheme!r} (expected one of "
                         f"{', '.join(SCHEMES)})")
    found = []
    for side, column in (("gold", data.gold), ("predicted", data.pred)):
        unknown = side == "gold" and partial != "literal"
        problem = _first_scheme_problem(column, scheme, outside, unknown)
        if problem is not None:
            found.append((*problem, side))
    if found:
        index, reason, side = min(found, key=lambda item: item[0])  # gold first on a tie
        raise InputError(f"{side} {reason}", path=data.path, line=data.first_line + index)


def _first_scheme_problem(tags: Sequence[str | None], scheme: str, outside: str,
                          skip_partial: bool = False) -> tuple[int, str] | None:
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
    reasons = [None if skip_partial and _touches_partial(vocab[c // size], vocab[c % size])
               else _transition_problem(vocab[c // size], vocab[c % size], scheme, outside)
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


def _touches_partial(prev: str | None, cur: str | None) -> bool:
    """Whether either tag of a transition is a partial gold tag (its tag is unknown)."""
    return any(tag is not None and is_partial(tag) for tag in (prev, cur))


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
