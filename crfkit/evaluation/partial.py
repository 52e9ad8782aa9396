"""Scoring against partially labelled gold: what a ``?`` or ``A|B`` gold tag means to
``crfkit eval`` (``--partial``), to devel scoring during training and to the Python API.

A partial gold tag (notation: :mod:`crfkit.io.label_sets`) does not say which label is
right, so the scorer has to be told what to do with its token:

* ``skip`` (the default): the token is left out and acts as a sentence break in both
  columns. Token accuracy counts only fully labelled tokens; chunks are scored, with
  conlleval's rules, within the stretches of fully labelled tokens between partial ones.
  A chunk interrupted by a partial token counts as its pieces, on the gold side and on
  the predicted side alike, so a prediction that agrees with every known label scores
  100. Nothing is guessed about the unknown tokens, which is what "skip" should mean:
  the score measures the labels the annotation states, and no more.
* ``count``: the token is scored, and it is right when the prediction is one of the
  labels the gold allows (``?`` allows every label). For chunks the gold is completed in
  the prediction's favour: a partial gold tag takes the predicted tag when it allows it,
  else its first listed label (the token is wrong whichever member it takes). This is
  the score of the best labelling the annotation allows, an upper bound on the score
  against any full annotation consistent with it; with many ``?`` tokens it is
  optimistic (every chunk predicted over ``?`` tokens counts as correct), so it suits
  annotations with few and narrow sets.
* ``literal``: ``?`` and ``A|B`` are ordinary tags, read exactly as conlleval reads them
  (``A|B`` is a tag whose type is what follows its first hyphen).

Files without partial gold tags score the same in all three modes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crfkit.io.label_sets import is_partial, members

MODES = ("skip", "count", "literal")
"""The values of ``--partial``; the first is the default."""


class PartialTagError(ValueError):
    """A malformed label set in the gold column (``A||B``), at ``index`` in the tag list."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class ResolvedTags:
    """Gold and predicted tags with no partial gold tag left, and how many there were."""

    gold: Sequence[str | None]
    pred: Sequence[str | None]
    partial_tokens: int


def resolve_partial(gold: Sequence[str | None], pred: Sequence[str | None],
                    mode: str = "skip") -> ResolvedTags:
    """The tags conlleval's rules score under ``mode`` (see the module docstring).

    ``None`` is a sentence break, as in :func:`crfkit.evaluation.scoring.evaluate_tags`.
    A gold column without partial tags is returned as it is, at the cost of one set.
    """
    if mode not in MODES:
        raise ValueError(f"unknown partial-label mode {mode!r} (expected one of "
                         f"{', '.join(MODES)})")
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold tags but {len(pred)} predicted tags")
    partial = {tag for tag in set(gold) if tag is not None and is_partial(tag)}
    if mode == "literal" or not partial:
        return ResolvedTags(gold, pred, 0)
    allowed = {tag: _members(tag, gold) for tag in partial}
    new_gold: list[str | None] = list(gold)
    new_pred: list[str | None] = list(pred)
    n = 0
    for i, tag in enumerate(gold):
        if tag not in allowed:
            continue
        n += 1
        if mode == "skip":
            new_gold[i] = new_pred[i] = None
            continue
        labels = allowed[tag]
        guess = pred[i]
        new_gold[i] = guess if labels is None or guess in labels else labels[0]
    return ResolvedTags(new_gold, new_pred, n)


def _members(tag: str, gold: Sequence[str | None]) -> tuple[str, ...] | None:
    """The labels a partial gold tag allows; a malformed set names its first position."""
    try:
        return members(tag)
    except ValueError as err:
        raise PartialTagError(f"gold {err}", list(gold).index(tag)) from None
