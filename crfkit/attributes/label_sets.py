"""Attribute training from label sets (``?``, ``A|B``: :mod:`crfkit.io.label_sets`).

The objective is the column training's: the probability of every label sequence the
sets allow, summed (the structure that trains the chain's model from label sets, found in
the registry). What CRFsuite's feature rules need a gold label for is read from the sets,
as the column training reads them (:func:`crfkit.training.gold.feature_tokens`): a token
with a set ``A|B`` makes the (attribute, label) features of its attributes with ``A`` and
with ``B``, a ``?`` token none; a label pair exists when two neighbouring tokens allow it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit.errors import InputError
from crfkit.features.columns import TokenColumns
from crfkit.space import Dataset
from crfkit.training.gold import first_label_set, partial_gold


@dataclass
class LabelSets:
    """The gold of an attribute corpus with label sets: its labels (those some token has
    alone, first seen first), the gold ids (-1: a set), the labels each token allows."""

    labels: list[str]
    y: np.ndarray
    allowed: np.ndarray
    where: tuple[str, int | None]  # the first label set's file and line


def label_sets(data: Dataset, names: list[str], first_lines: np.ndarray | None,
               path: str) -> LabelSets | None:
    """The label sets of a corpus whose gold ids (``data.labels``) name ``names``; None
    when every token has one label. ``first_lines``: each sequence's line (None: none)."""
    columns = TokenColumns(data.lengths.astype(np.int64), {0: data.labels.astype(np.int64)},
                           {0: list(names)}, 1, first_lines=first_lines)
    first = first_label_set(names, data.labels)
    if first is None:
        return None
    where = (path, columns.line_of(first))
    if data.tok_val is not None:
        raise InputError("label sets (? and A|B) train on attributes of value 1 only (no "
                         "real values)", path=where[0], line=where[1])
    labels, y, allowed = partial_gold(columns, 0, [], source=path, label_sets=True)
    return LabelSets(labels, y, allowed, where)


def feature_data(data: Dataset, sets: LabelSets) -> Dataset:
    """The tokens whose (attribute, label) pairs become features, each its own sequence
    with one label (module docstring): the attribute space is counted on it."""
    y, allowed = sets.y, sets.allowed
    single = np.flatnonzero(y >= 0)
    narrowed = np.flatnonzero((y < 0) & (allowed.sum(axis=1) < allowed.shape[1]))
    set_token, member = np.nonzero(allowed[narrowed])
    source = np.concatenate([single, narrowed[set_token]])
    counts = np.diff(data.tok_ptr)[source]
    tok_ptr = np.zeros(len(source) + 1, dtype=data.tok_ptr.dtype)
    np.cumsum(counts, out=tok_ptr[1:])
    occurrence = np.repeat(data.tok_ptr[source] - tok_ptr[:-1], counts) + np.arange(
        tok_ptr[-1])
    return Dataset(np.arange(len(source) + 1, dtype=data.seq_ptr.dtype), tok_ptr,
                   data.tok_obs[occurrence],
                   np.concatenate([y[single], member]).astype(np.int32),
                   zero_occ=_copied_zeros(data.zero_occ, source))


def _copied_zeros(zero_occ: np.ndarray | None, source: np.ndarray) -> np.ndarray | None:
    """The value-0 occurrences of every copy of their token (``source``: each new token's
    original)."""
    if zero_occ is None:
        return None
    order = np.argsort(source, kind="stable")
    lo = np.searchsorted(source[order], zero_occ[:, 0], side="left")
    hi = np.searchsorted(source[order], zero_occ[:, 0], side="right")
    copies = hi - lo
    step = np.arange(copies.sum()) - np.repeat(np.cumsum(copies) - copies, copies)
    tokens = order[np.repeat(lo, copies) + step]
    return np.stack([tokens, np.repeat(zero_occ[:, 1], copies)], axis=1).astype(
        zero_occ.dtype)


def pair_counts(data: Dataset, allowed: np.ndarray) -> np.ndarray:
    """(L, L): how many neighbouring token pairs of a sequence allow each label pair (a
    fully labelled corpus: how often each pair occurs)."""
    inside = np.ones(data.n_tokens, dtype=bool)
    inside[data.seq_ptr[1:] - 1] = False  # a sequence's last token has no next one
    left = np.flatnonzero(inside)
    A = allowed.astype(np.float64)
    return A[left].T @ A[left + 1]
