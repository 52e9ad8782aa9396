"""Metrics over label sequences, as sklearn-crfsuite names them, plus conlleval's chunk F1.

The ``flat_*`` metrics flatten the sequences and call scikit-learn's metric of
the same name (keyword arguments pass through); :func:`sequence_accuracy_score`
counts whole sequences; :func:`chunk_f1_score` is crfkit's conlleval
(:mod:`crfkit.evaluation.scoring`) as a fraction, the score NER and chunking papers
report. :data:`scorers` holds them as ``make_scorer`` objects for
``GridSearchCV(scoring=...)`` and ``cross_val_score``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sklearn import metrics
from sklearn.metrics import make_scorer

from crfkit.sklearn.utils import flatten


def flat_accuracy_score(y_true, y_pred) -> float:
    """Token accuracy."""
    return float(metrics.accuracy_score(flatten(y_true), flatten(y_pred)))


def flat_precision_score(y_true, y_pred, **kwargs) -> float:
    """Token precision (``average=``, ``labels=`` ... as scikit-learn's)."""
    return metrics.precision_score(flatten(y_true), flatten(y_pred), **kwargs)


def flat_recall_score(y_true, y_pred, **kwargs) -> float:
    """Token recall (``average=``, ``labels=`` ... as scikit-learn's)."""
    return metrics.recall_score(flatten(y_true), flatten(y_pred), **kwargs)


def flat_f1_score(y_true, y_pred, **kwargs) -> float:
    """Token F1 (``average=``, ``labels=`` ... as scikit-learn's)."""
    return metrics.f1_score(flatten(y_true), flatten(y_pred), **kwargs)


def flat_fbeta_score(y_true, y_pred, beta: float, **kwargs) -> float:
    """Token F-beta."""
    return metrics.fbeta_score(flatten(y_true), flatten(y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """scikit-learn's per-label report over the tokens."""
    return metrics.classification_report(flatten(y_true), flatten(y_pred), labels=labels,
                                         **kwargs)


def sequence_accuracy_score(y_true, y_pred) -> float:
    """The fraction of sequences labelled entirely right."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} gold sequences but {len(y_pred)} predicted")
    if not y_true:
        return 0.0
    right = sum(list(a) == list(b) for a, b in zip(y_true, y_pred, strict=True))
    return right / len(y_true)


def chunk_f1_score(y_true: Sequence[Sequence[str]], y_pred: Sequence[Sequence[str]], *,
                   outside: str = "O", scheme: str | None = None) -> float:
    """conlleval's chunk (entity) F1 over IOB-style tags, as a fraction in [0, 1]."""
    return conlleval_report(y_true, y_pred, outside=outside, scheme=scheme).f1 / 100.0


def conlleval_report(y_true, y_pred, *, outside: str = "O", scheme: str | None = None):
    """crfkit's full conlleval report (:class:`crfkit.evaluation.counts.EvalReport`)."""
    from crfkit.evaluation.scoring import evaluate

    return evaluate([list(s) for s in y_true], [list(s) for s in y_pred], outside=outside,
                    scheme=scheme)


scorers = {
    "flat_accuracy": make_scorer(flat_accuracy_score),
    "sequence_accuracy": make_scorer(sequence_accuracy_score),
    "chunk_f1": make_scorer(chunk_f1_score),
}
flat_accuracy = scorers["flat_accuracy"]
sequence_accuracy = scorers["sequence_accuracy"]
chunk_f1 = scorers["chunk_f1"]
