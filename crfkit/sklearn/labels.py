"""Partial labels in ``y``: a token whose label is not known exactly.

An element of a label sequence may be ``None`` (any label: the token was not
annotated) or a set, frozenset, list or tuple of labels (one of these: a dictionary
match of several types, an annotator's doubt); training sums over every labelling they
allow (docs/guides/partial-labels.md). They become the label column's notation
(:func:`crfkit.io.label_sets.spell`: ``?``, ``A|B``), so a Python ``y`` and a training
file that say the same thing give the same model.
"""

from __future__ import annotations

from collections.abc import Iterable

from crfkit.io.label_sets import spell

_SETS = (set, frozenset, list, tuple)


def label_strings(y: Iterable[Iterable[object]]) -> list[list[object]]:
    """``y`` with each ``None`` or collection of labels written as its label string;
    other elements are kept as they are (a non-string label is refused later, as
    before)."""
    return [[spell(label) if label is None or isinstance(label, _SETS) else label
             for label in seq] for seq in y]
