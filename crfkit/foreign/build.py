"""Turn another tool's feature strings and weight blocks into a crfkit :class:`Model`.

CRF++, Wapiti and CRFsuite all store a model as strings (``U05:in/the``)
with a block of weights each. crfkit stores an observation as the tuple of
its pattern's command values instead (``("in", "the")`` for pattern
``U05:%x[-1,0]/%x[0,0]``), so each string is matched back to every pattern
that can render it, and split into values at the pattern's literal text.
A string may split in several ways (``U05:1/2/3``: ``("1/2", "3")`` or
``("1", "2/3")``); each split becomes an observation with the same
weights, because the foreign tool fires the string whichever way it was
built. Zero weights are dropped: they change no score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from crfkit.errors import ModelFormatError
from crfkit.features.extract import Featurizer
from crfkit.features.keys import tuple_keys
from crfkit.features.patterns import Pattern
from crfkit.features.vocab import ObservationVocab
from crfkit.model.model import Model
from crfkit.space import FeatureSpace

ValueMap = Callable[[int, int, str], list[str]]
"""(pattern index, command index, foreign value) -> the crfkit values it stands for."""

# A string whose separators occur this often is split every way only up to this many ways.
_MAX_SPLITS = 10_000


def splits(pattern: Pattern, text: str) -> list[tuple[str, ...]]:
    """Every tuple of command values that ``pattern`` renders as ``text``."""
    head, tail = pattern.literals[0], pattern.literals[-1]
    if len(pattern.literals) == 1:
        return [()] if text == head else []
    if len(text) < len(head) + len(tail) or not text.startswith(head) \
            or not text.endswith(tail):
        return []
    body = text[len(head):len(text) - len(tail)]
    seps = pattern.literals[1:-1]
    if not seps:
        return [(body,)]
    if seps[0] and all(s == seps[0] for s in seps) and body.count(seps[0]) == len(seps):
        return [tuple(body.split(seps[0]))]
    out = []
    for found in _split_rest(body, seps):
        out.append(found)
        if len(out) > _MAX_SPLITS:
            break
    return out


def _split_rest(body: str, seps: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if not seps:
        yield (body,)
        return
    sep, start = seps[0], 0
    while True:
        i = body.find(sep, start)
        if i < 0:
            return
        for rest in _split_rest(body[i + len(sep):], seps[1:]):
            yield (body[:i],) + rest
        start = i + 1


class PatternMatcher:
    """Finds the patterns whose literal head starts a string, with one dict probe per length."""

    def __init__(self, patterns: list[Pattern], usable: Callable[[Pattern], bool]) -> None:
        self.patterns = patterns
        self.by_head: dict[str, list[int]] = {}
        for p, pattern in enumerate(patterns):
            if usable(pattern):
                self.by_head.setdefault(pattern.literals[0], []).append(p)
        self.lengths = sorted({len(h) for h in self.by_head})

    def matches(self, text: str) -> Iterator[tuple[int, tuple[str, ...]]]:
        """(pattern index, values) for every way a pattern renders ``text``."""
        for n in self.lengths:
            if n > len(text):
                break
            for p in self.by_head.get(text[:n], ()):
                for values in splits(self.patterns[p], text):
                    yield p, values


@dataclass
class ModelBuilder:
    """Collects observations (pattern, values) with their weight blocks, then builds a Model.

    ``unigram`` blocks hold L weights, ``bigram`` blocks L*L (previous label
    major); ``transitions`` is the L x L block of the constant bigram pattern.
    """

    labels: list[str]
    patterns: list[Pattern]
    n_token_columns: int
    source: str
    model_type: str = "crf"
    transitions: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    _obs: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    _uni: list[np.ndarray | None] = field(default_factory=list)
    _bi: list[np.ndarray | None] = field(default_factory=list)
    _rank: list[int] = field(default_factory=list)

    def add(self, pattern: int, values: tuple[str, ...], unigram: np.ndarray | None,
            bigram: np.ndarray | None, rank: int = 0) -> None:
        """One observation; where two share a tuple, the lower ``rank`` (then the first) wins."""
        self._obs.append((pattern, values))
        self._uni.append(unigram)
        self._bi.append(bigram)
        self._rank.append(rank)

    def add_strings(self, strings: list[str], unigram: list[np.ndarray | None],
                    bigram: list[np.ndarray | None], value_map: ValueMap | None = None,
                    *, what: str = "feature string") -> None:
        """Match each string to the patterns that render it and add every reading."""
        matcher = PatternMatcher(self.patterns, lambda p: True)
        for i, text in enumerate(strings):
            uni, bi = unigram[i], bigram[i]
            found = False
            for p, values in matcher.matches(text):
                pattern = self.patterns[p]
                if (uni is not None and not pattern.has_unigram) or \
                        (bi is not None and not pattern.has_bigram):
                    continue
                found = True
                if pattern.is_constant and pattern.has_bigram and bi is not None:
                    self.transitions = bi.reshape(len(self.labels), len(self.labels))
                    bi = None
                    if uni is None:
                        continue
                for variant, rank in _variants(p, values, value_map):
                    self.add(p, variant, uni, bi, rank)
            if not found:
                raise ModelFormatError(f"{what} {text!r} cannot be generated by any of the "
                                       "model's patterns", path=self.source)

    def build(self) -> Model:
        L = len(self.labels)
        featurizer = Featurizer(self.patterns)
        keys, pattern_of, values = self._vocab(featurizer)
        keep = _first_of_each_key(keys, np.array(self._rank, dtype=np.int64))
        self.info.setdefault("conversion", {})["merged_observations"] = int(len(keys) - len(keep))
        u_ptr, u_lab, u_w = _sparse([self._uni[i] for i in keep], L)
        b_ptr, b_code, b_w = _sparse([self._bi[i] for i in keep], L * L)
        has_trans = self.transitions is not None
        if has_trans and not any(p.is_constant and p.has_bigram for p in self.patterns):
            raise ModelFormatError("the model has label transitions but no constant bigram "
                                   "pattern", path=self.source)
        space = FeatureSpace(n_labels=L, u_ptr=u_ptr, u_lab=u_lab, b_ptr=b_ptr,
                             b_prev=(b_code // L).astype(np.int32),
                             b_cur=(b_code % L).astype(np.int32), has_trans=has_trans)
        parts = [u_w, b_w]
        if has_trans:
            parts.append(np.asarray(self.transitions, dtype=np.float64).ravel())
        weights = np.ascontiguousarray(np.concatenate(parts), dtype=np.float64)
        if not np.isfinite(weights).all():
            raise ModelFormatError("the model has weights that are not finite", path=self.source)
        widths = featurizer.n_commands[pattern_of[keep]]
        starts = np.concatenate([[0], np.cumsum(featurizer.n_commands[pattern_of])])
        take = np.concatenate([np.arange(starts[i], starts[i] + w)
                               for i, w in zip(keep, widths, strict=True)]) \
            if len(keep) else np.zeros(0, dtype=np.int64)
        featurizer.vocab = ObservationVocab(keys[keep], pattern_of[keep],
                                            values[take.astype(np.int64)])
        return Model(labels=list(self.labels), patterns=self.patterns,
                     n_token_columns=self.n_token_columns, featurizer=featurizer, space=space,
                     weights=weights, info=self.info, model_type=self.model_type)

    def _vocab(self, featurizer: Featurizer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys, pattern and flat value ids of every added observation (tables grow)."""
        n = len(self._obs)
        keys = np.zeros(n, dtype=np.uint64)
        pattern_of = np.array([p for p, _ in self._obs], dtype=np.int32)
        values = np.zeros(int(featurizer.n_commands[pattern_of].sum()) if n else 0,
                          dtype=np.int32)
        starts = np.concatenate([[0], np.cumsum(featurizer.n_commands[pattern_of])]) \
            if n else np.zeros(1, dtype=np.int64)
        for p in range(len(self.patterns)):
            ids = np.flatnonzero(pattern_of == p)
            if not len(ids):
                continue
            width = int(featurizer.n_commands[p])
            rows = np.zeros((len(ids), width), dtype=np.int32)
            for j, t in enumerate(featurizer.command_transform[p]):
                column = [self._obs[i][1][j] for i in ids]
                rows[:, j] = featurizer.tables[t].lookup(column, grow=True)
            keys[ids] = tuple_keys(p, rows)
            if width:
                values[starts[ids][:, None] + np.arange(width)] = rows
        return keys, pattern_of, values


def _variants(p: int, values: tuple[str, ...], value_map: ValueMap | None
              ) -> Iterator[tuple[tuple[str, ...], int]]:
    """The crfkit value tuples one foreign reading stands for, each with its rank.

    ``value_map`` gives, per value, its crfkit spellings, the preferred first
    (a Wapiti ``_x-1`` is the padding ``_B-1`` first, a token ``_x-1`` next);
    a tuple's rank counts its values that are not the preferred spelling.
    """
    if value_map is None:
        yield values, 0
        return
    options = [value_map(p, j, v) for j, v in enumerate(values)]
    yield from _product(options)


def _product(options: list[list[str]]) -> Iterator[tuple[tuple[str, ...], int]]:
    if not options:
        yield (), 0
        return
    for k, first in enumerate(options[0]):
        for rest, rank in _product(options[1:]):
            yield (first,) + rest, rank + (k > 0)


def _first_of_each_key(keys: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Per distinct key, the observation of lowest rank (then the first), in input order."""
    order = np.lexsort((np.arange(len(keys)), rank, keys))
    first = np.ones(len(order), dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    return np.sort(order[first])


def _sparse(blocks: list[np.ndarray | None], width: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR (ptr, column, value) of the non-zero weights of each block (None: no weights)."""
    present = np.array([b is not None for b in blocks], dtype=bool)
    counts = np.zeros(len(blocks), dtype=np.int64)
    if not present.any():
        return (np.zeros(len(blocks) + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.float64))
    rows = np.stack([b for b in blocks if b is not None]).astype(np.float64)
    if rows.shape[1] != width:
        raise AssertionError("weight block of the wrong width")
    nonzero = rows != 0.0
    counts[present] = nonzero.sum(axis=1)
    ptr = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, np.nonzero(nonzero)[1].astype(np.int32), rows[nonzero]
