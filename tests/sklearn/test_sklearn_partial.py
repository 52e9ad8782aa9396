"""crfkit.sklearn with partial labels in ``y``: None and collections of labels become the
label column's notation before training, and held-out scores leave such tokens out."""

from __future__ import annotations

from fractions import Fraction

import pytest

from crfkit.sklearn import CRF
from crfkit.sklearn import attrs as sklearn_attrs
from crfkit.sklearn.labels import label_strings
from crfkit.sklearn.trainlog import holdout_scores


def test_none_and_label_collections_become_the_notation():
    y = [["B-NP", None, {"I-NP", "B-VP"}], [("O",), ["B-PP", "B-NP"], frozenset({"O"})]]
    assert label_strings(y) == [["B-NP", "?", "B-VP|I-NP"], ["O", "B-NP|B-PP", "O"]]
    assert label_strings([[1, "x"]]) == [[1, "x"]]  # refused later, as before


def test_fit_hands_the_strings_to_training(monkeypatch):
    seen = {}

    def capture(y, labels, lengths, *, grow):
        seen["y"] = [list(s) for s in y]
        raise RuntimeError("captured")

    monkeypatch.setattr(sklearn_attrs, "label_ids", capture)
    with pytest.raises(RuntimeError, match="captured"):
        CRF(max_iterations=1).fit([[{"w": "a"}, {"w": "b"}]], [[None, {"N", "V"}]])
    assert seen["y"] == [["?", "N|V"]]


def test_training_sums_over_label_sets():
    crf = CRF(max_iterations=3).fit([[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "c"}]],
                                    [["N", None], ["V", {"N", "V"}]])
    assert sorted(crf.classes_) == ["N", "V"]  # None and the set are no labels of their own


def test_holdout_scores_leave_partial_gold_tokens_out():
    gold = [["D", "?", "V"], ["N|V", "N"], ["?"]]
    pred = [["D", "N", "N"], ["V", "N"], ["D"]]
    scores = holdout_scores(gold, pred, ["D", "N", "V"])
    # scored tokens: D/D, V/N, N/N: 2 of 3 right; sequences: first wrong (V/N),
    # second right (N/N), third has no scored token: right
    assert scores["item_accuracy"] == Fraction(2, 3)
    assert scores["instance_accuracy"] == Fraction(2, 3)
    assert scores["scores"]["N"][:3] == (1, 2, 1)  # match, model, ref
    assert scores["scores"]["V"][:3] == (0, 0, 1)
