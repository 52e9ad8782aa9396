"""Gold labels that are label sets (``?``, ``A|B``: crfkit.io.label_sets) for training.

A token with a set has no one gold label (id -1) but a row of allowed labels; only a
structure that sums over the allowed paths (``Structure.label_sets``) trains from them.
The labels of a model are those that occur alone somewhere (and the initial model's): a
set naming any other is an error at its line, most likely a typo.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numpy as np

from crfkit.errors import InputError
from crfkit.io.label_sets import is_partial, members
from crfkit.io.reader import Sequence


def partial_gold(gold: list[str], ids: np.ndarray, known: list[str], *, lengths: np.ndarray,
                 rows: Seq[Sequence] | None, source: str, label_sets: bool
                 ) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """(labels, gold ids with -1 for sets, allowed (n_tokens, L)) of a label column with
    sets (``gold``: its distinct values, ``ids``: each token's), None if it has none.
    ``known``: the initial model's labels, first; ``rows`` give the error lines."""
    partial = np.array([is_partial(g) for g in gold], dtype=bool)
    if not partial.any():
        return None
    first = int(np.flatnonzero(partial[ids])[0])
    if not label_sets:
        raise InputError(f"the label {gold[ids[first]]!r} is a label set: train with "
                         f"--latent K to sum over the labels it allows (--latent 1: a plain "
                         f"crf)", path=source, line=_line(rows, lengths, first))
    seen = set(known)
    labels = list(known) + [g for g in gold if not is_partial(g) and g not in seen]
    index = {label: i for i, label in enumerate(labels)}
    allowed_of = np.zeros((len(gold), len(labels)), dtype=bool)
    for i, g in enumerate(gold):
        allowed_of[i] = _allowed(g, index, len(labels), rows, lengths, ids, i, source)
    y = np.array([-1 if p else index[g] for g, p in zip(gold, partial, strict=True)],
                 dtype=np.int32)
    return labels, y[ids], allowed_of[ids]


def _allowed(label: str, index: dict[str, int], L: int, rows, lengths, ids, i: int,
             source: str) -> np.ndarray:
    """The allowed-label row of one distinct gold value."""
    row = np.zeros(L, dtype=bool)
    try:
        names = members(label)
    except ValueError as err:
        raise InputError(str(err), path=source,
                         line=_line(rows, lengths, int(np.argmax(ids == i)))) from None
    if names is None:
        row[:] = True
        return row
    for name in names:
        if name not in index:
            raise InputError(f"the label set {label!r} names {name!r}, a label no token of "
                             f"the training data has alone", path=source,
                             line=_line(rows, lengths, int(np.argmax(ids == i))))
        row[index[name]] = True
    return row


def _line(rows: Seq[Sequence] | None, lengths: np.ndarray, token: int) -> int | None:
    """The line of a token (None when the corpus came without its rows)."""
    if rows is None:
        return None
    ends = np.cumsum(lengths)
    s = int(np.searchsorted(ends, token, side="right"))
    return rows[s].lines[token - int(ends[s] - lengths[s])]


def feature_tokens(obs: np.ndarray, first: np.ndarray, y: np.ndarray,
                   allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tokens whose (observation, label) pairs become features: each token with one
    label; a set ``A|B`` once per member (as a sequence start: it says nothing of its
    neighbours' labels); ``?`` not at all (its observations keep the features other tokens
    give them: every label would make the space dense for nothing the data says)."""
    if allowed is None:
        return obs, first, y
    sets = np.flatnonzero((y < 0) & (allowed.sum(axis=1) < allowed.shape[1]))
    tok, lab = np.nonzero(allowed[sets])
    keep = y >= 0
    return (np.concatenate([obs[keep], obs[sets[tok]]]),
            np.concatenate([first[keep], np.ones(len(tok), dtype=bool)]),
            np.concatenate([y[keep], lab.astype(y.dtype)]))
