"""``CRF.training_log_``: what training reported, in sklearn-crfsuite's schema.

sklearn-crfsuite hands over python-crfsuite's log parser: ``iterations`` (one
dict per iteration with ``num``, ``loss``, ``time``, ``feature_norm``,
``active_features`` and ``scores``), ``last_iteration`` and
``training_seconds``; with held-out data each iteration also has CRFsuite's
evaluation (per-label :class:`LabelScore`, macro ``avg_precision`` /
``avg_recall`` / ``avg_f1``, ``item_accuracy`` and ``instance_accuracy``).
Code reading those keys reads the same keys here. Each row also keeps
crfkit's own report values (``objective``, ``gradient_norm``,
``token_error``, ``devel_error``, ``devel_f1`` ...: :func:`crfkit.training.train.log_row`).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from crfkit.io.label_sets import is_partial

LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")


@dataclass
class TrainingLog:
    """python-crfsuite's ``TrainLogParser`` attributes, filled from crfkit's training."""

    iterations: list[dict] = field(default_factory=list)
    stop_reason: str = ""
    featgen_num_features: int | None = None
    training_seconds: float | None = None

    @property
    def last_iteration(self) -> dict | None:
        return self.iterations[-1] if self.iterations else None


def add_schema(row: dict, weights: np.ndarray, started: float) -> None:
    """Add sklearn-crfsuite's keys to one of crfkit's log rows (weights: the iteration's;
    ``started``: the previous row's ``seconds``, which count from the start of training,
    where CRFsuite's ``time`` is the iteration's own)."""
    row["num"] = row["iteration"]
    row["loss"] = row["objective"]
    row["time"] = row["seconds"] - started
    row["scores"] = {}
    from crfkit.vectors import dot  # serial: numpy's BLAS threads spin after each call

    row["feature_norm"] = float(np.sqrt(dot(weights, weights)))
    row["active_features"] = int(np.count_nonzero(weights))


def holdout_scores(gold: list[list[str]], pred: list[list[str]],
                   labels: list[str]) -> dict:
    """CRFsuite's holdout evaluation of one iteration, under sklearn-crfsuite's keys, plus
    crfkit's ``devel_error`` (token error, %) and ``devel_f1`` (conlleval chunk F1, %).

    Tokens whose gold label is partial (``?``, ``A|B``) are left out of every score; a
    sequence is right when its other tokens are."""
    from crfkit.evaluation.scoring import evaluate

    pairs = [[(g, p) for g, p in zip(gs, ps, strict=True) if not is_partial(g)]
             for gs, ps in zip(gold, pred, strict=True)]
    flat_gold = [g for seq in pairs for g, _ in seq]
    flat_pred = [p for seq in pairs for _, p in seq]
    scores = {label: _label_score(label, flat_gold, flat_pred) for label in labels}
    seen = [s for s in scores.values() if s.ref > 0]  # CRFsuite averages over these
    right = sum(g == p for g, p in zip(flat_gold, flat_pred, strict=True))
    whole = sum(all(g == p for g, p in seq) for seq in pairs)
    item = Fraction(right, max(1, len(flat_gold)))
    instance = Fraction(whole, max(1, len(gold)))
    return {"scores": scores,
            "avg_precision": _mean([s.precision for s in seen]),
            "avg_recall": _mean([s.recall for s in seen]),
            "avg_f1": _mean([s.f1 for s in seen]),
            "item_accuracy": item, "item_accuracy_float": float(item),
            "instance_accuracy": instance, "instance_accuracy_float": float(instance),
            "devel_error": 100.0 * (1.0 - float(item)),
            "devel_f1": float(evaluate(gold, pred).f1)}


def _label_score(label: str, gold: list[str], pred: list[str]) -> LabelScore:
    ref = sum(g == label for g in gold)
    model = sum(p == label for p in pred)
    if ref == 0:  # CRFsuite prints no figures for a label the held-out data lacks
        return LabelScore(0, 0, 0, None, None, None)
    match = sum(g == p == label for g, p in zip(gold, pred, strict=True))
    precision = match / model if model else 0.0
    recall = match / ref
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return LabelScore(match, model, ref, precision, recall, f1)


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0
