"""Gold labels that are label sets (``?``, ``A|B``: crfkit.io.label_sets) for training.

A token with a set has no one gold label (id -1) but a row of allowed labels; only a
structure that sums over the allowed paths (``Structure.label_sets``) trains from them.
The labels of a model are those that occur alone somewhere (and the initial model's), then
those that only sets name: such a label gets the features of its set tokens
(:func:`feature_tokens`), so it has weights and labelling can give it (an annotation
that marks one chunk type names the others only in the complement sets of the tokens
outside it). Since it may as well be a typo, training names it (:func:`set_only_labels`).
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
    named = [_members(g, columns, ids, i, source) if p else (g,)
             for i, (g, p) in enumerate(zip(gold, partial, strict=True))]
    seen = set(known)
    labels = list(known) + [g for g, p in zip(gold, partial, strict=True)
                            if not p and g not in seen]
    seen.update(labels)
    labels += list(dict.fromkeys(n for names in named if names is not None for n in names
                                 if n not in seen))
    index = {label: i for i, label in enumerate(labels)}
    allowed_of = np.zeros((len(gold), len(labels)), dtype=bool)
    for i, names in enumerate(named):
        if names is None:
            allowed_of[i] = True
        else:
            allowed_of[i, [index[n] for n in names]] = True
    y = np.array([-1 if p else index[g] for g, p in zip(gold, partial, strict=True)],
                 dtype=np.int32)
    return labels, y[ids], allowed_of[ids]


def _members(label: str, columns: TokenColumns, ids: np.ndarray, i: int,
             source: str) -> tuple[str, ...] | None:
    """The labels one distinct gold value allows (None: every label), a malformed set an
    error at its first line."""
    try:
        return members(label)
    except ValueError as err:
        raise InputError(str(err), path=source,
                         line=columns.line_of(int(np.argmax(ids == i)))) from None


def set_only_labels(labels: list[str], y: np.ndarray, n_known: int) -> list[str]:
    """The labels past the first ``n_known`` (an initial model's) that no token has alone:
    only label sets name them."""
    alone = np.zeros(len(labels), dtype=bool)
    alone[y[y >= 0]] = True
    return [label for i, label in enumerate(labels) if i >= n_known and not alone[i]]


def set_only_warning(labels: list[str], y: np.ndarray, n_known: int) -> str | None:
    """The line that names the labels only label sets name (None: there are none)."""
    only = set_only_labels(labels, y, n_known)
    if not only:
        return None
    shown = ", ".join(map(repr, only[:5])) + (f" and {len(only) - 5} more" if len(only) > 5
                                               else "")
    return (f"only label sets name {shown} (no token has it alone: a typo?); a label of the "
            f"model all the same")


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
