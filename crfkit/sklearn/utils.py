"""sklearn-crfsuite's ``utils`` module (``from crfkit.sklearn.utils import flatten``)."""

from __future__ import annotations

from collections.abc import Iterable


def flatten(y: Iterable[Iterable]) -> list:
    """All items of all sequences, in order (labels of every token, say)."""
    return [item for seq in y for item in seq]
