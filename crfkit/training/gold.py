"""Gold labels that are label sets (``?``, ``A|B``: crfkit.io.label_sets) for training.

A token with a set has no one gold label (id -1) but a row of allowed labels; only a
structure that sums over the allowed paths (``Structure.label_sets``) trains from them.
The labels of a model are those that occur alone somewhere (and the initial model's): a
set naming any other is an error at its line, most likely a typo.
"""

from __future__ import annotations

import numpy as np

from crfkit.errors import InputError
from crfkit.features.columns import TokenColumns
from crfkit.io.label_sets import is_partial, members


def first_label_set(gold: list[str], ids: np.ndarray) -> int | None:
    """The index of the first token whose gold label is a set (None: every token has one
    label); ``gold``: the label column's distinct values, ``ids``: each token's."""
    partial = np.array([is_partial(g) for g in gold], dtype=bool)
    if not partial.any():
        return None
    return int(np.flatnonzero(partial[ids])[0])


def partial_gold(columns: TokenColumns, label_column: int, known: list[str], *,
                 source: str, label_sets: bool
                 ) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """(labels, gold ids with -1 for sets, allowed (n_tokens, L)) of a label column with
    sets, None if it has none. ``known``: the initial model's labels, first."""
    gold, ids = columns.distinct[label_column], columns.ids[label_column]
    first = first_label_set(gold, ids)
    if first is None:
        return None
    if not label_sets:
        raise InputError(f"the label {gold[ids[first]]!r} is a label set, which this model "
                         f"structure does not train from (a plain crf and --latent K do)",
                         path=source, line=columns.line_of(first))
    partial = np.array([is_partial(g) for g in gold], dtype=bool)
    seen = set(known)
    labels = list(known) + [g for g in gold if not is_partial(g) and g not in seen]
    index = {label: i for i, label in enumerate(labels)}
    allowed_of = np.zeros((len(gold), len(labels)), dtype=bool)
    for i, g in enumerate(gold):
        allowed_of[i] = _allowed(g, index, len(labels), columns, ids, i, source)
    y = np.array([-1 if p else index[g] for g, p in zip(gold, partial, strict=True)],
                 dtype=np.int32)
    return labels, y[ids], allowed_of[ids]


def _allowed(label: str, index: dict[str, int], L: int, columns: TokenColumns,
             ids: np.ndarray, i: int, source: str) -> np.ndarray:
    """The allowed-label row of one distinct gold value."""
    row = np.zeros(L, dtype=bool)
    try:
        names = members(label)
    except ValueError as err:
        raise InputError(str(err), path=source,
                         line=columns.line_of(int(np.argmax(ids == i)))) from None
    if names is None:
        row[:] = True
        return row
    for name in names:
        if name not in index:
            raise InputError(f"the label set {label!r} names {name!r}, a label no token of "
                             f"the training data has alone", path=source,
                             line=columns.line_of(int(np.argmax(ids == i))))
        row[index[name]] = True
    return row


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
