"""What sits between the optimiser and the user: one progress line per iteration, the
development set's score and the early stop on it.

The development set does not end training by default, nor are the best-development
weights kept: ``-d`` only reports (the model is the one trained without it, bit for bit);
``--keep-best-devel`` keeps the weights of the best devel F1, and ``--devel-patience N``
stops on it and keeps them (the manual gives the measurements behind these defaults).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit.evaluation.scoring import evaluate
from crfkit.io.label_sets import is_partial
from crfkit.kernels.bestpath import Weights
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import Iteration
from crfkit.progress import Progress
from crfkit.space import Dataset
from crfkit.structures import named
from crfkit.structures.base import Corpus, DecodeRequest, Structure
from crfkit.training.corpus import DevelSet


class Monitor:
    """Progress line per iteration; development-set scoring and early stopping."""

    def __init__(self, progress: Progress, data: Dataset, *, model_type: str,
                 corpus: Corpus, devel: DevelSet | None = None, patience: int = 0,
                 log: list[dict] | None = None, structure: Structure | None = None,
                 error_window: int = 0, error_eps: float = 0.02) -> None:
        """``patience``: stop after this many iterations without a better devel F1 (0: never).

        ``log``: a list that gets one row (:func:`log_row`) per iteration, for reports.
        ``structure``: what decodes the development set (None: the linear chain).
        ``error_window``: stop once the token error (devel's, else training's) has moved
        less than ``error_eps`` percentage points over that many iterations (Wapiti's -w).
        """
        self.progress = progress
        self.log = log
        # Wapiti's -w watches the best paths of the weights just reached; the errors an
        # algorithm counts on its way (posterior decoding, at the point it evaluated) lag
        self.errors = TrainingErrors(data, corpus, model_type, structure,
                                     decoded=error_window > 0 and devel is None)
        self.devel = None if devel is None else devel.data
        self.patience = patience
        self.stable = StableError(error_window, error_eps)
        self.best_f1 = -1.0
        self.best_iteration = 0
        self.best_x: np.ndarray | None = None
        self.last_f1 = -1.0
        self.last_iteration = 0
        if devel is not None:
            # gold ids past the model's labels are devel labels training never saw
            self.names = np.array(devel.label_names, dtype=object)
            self.gold = split_tags(self.names[devel.data.labels], devel.data.seq_ptr)
            # partial gold labels (? or A|B) say too little to score: left out
            self.known = ~np.array([is_partial(n) for n in devel.label_names],
                                   dtype=bool)[devel.data.labels]

    def __call__(self, info: Iteration) -> str | None:
        extra = ""
        stop = None
        if self.devel is not None:
            error, f1 = self.score(info.x)
            extra = f" dev-err={error:6.2f}% dev-F1={f1:6.2f}"
            self.last_f1, self.last_iteration = f1, info.it
            if f1 > self.best_f1:
                self.best_f1, self.best_iteration = f1, info.it
                self.best_x = info.x.copy()
            elif self.patience and info.it - self.best_iteration >= self.patience:
                stop = (f"no development F1 improvement for {self.patience} iterations "
                        f"(best {self.best_f1:.2f} at iteration {self.best_iteration})")
        token_error, sequence_error = self.errors.rates(info)
        stop = stop or self.stable(error if self.devel is not None else 100.0 * token_error)
        self.progress.iteration(info.it, info.f, token_error, sequence_error, info.seconds, extra)
        if self.log is not None:
            self.log.append(log_row(info, token_error, sequence_error,
                                    (error, f1) if self.devel is not None else None))
        return stop

    def score(self, x: np.ndarray) -> tuple[float, float]:
        """Token error (%) and chunk F1 of the development set under weights x; tokens
        with a partial gold label are left out of both (:mod:`crfkit.evaluation.partial`)."""
        devel = self.devel
        ids = self.errors.decode(x, devel)
        report = evaluate(self.gold, split_tags(self.names[ids], devel.seq_ptr),
                          partial="skip")
        errors = counted_errors(ids, devel.labels, self.known, devel.seq_ptr)
        error = 100.0 * errors.tokens / errors.counted if errors.counted else 0.0
        return error, report.f1


class TrainingErrors:
    """The training error rates of each iteration, as the progress line and the logs of
    ``train`` and ``tune`` show them: the errors the algorithm counted, else (a latent
    objective, label sets, ``-w``) those of decoding the training sequences as ``label``
    does, at the tokens with one gold label (:func:`counted_errors`)."""

    def __init__(self, data: Dataset, corpus: Corpus, model_type: str,
                 structure: Structure | None = None, *, decoded: bool = False) -> None:
        """``structure``: what decodes (None: the linear chain). ``decoded``: always the
        errors of decoding at the iteration's weights, never the algorithm's own."""
        self.data, self.corpus, self.model_type = data, corpus, model_type
        self.decoded = decoded
        self.structure = structure or named("chain")
        # training tokens with one gold label (a label set is -1): those errors count on
        self.counted = data.labels >= 0 if len(data.labels) == data.n_tokens else None
        self.n_tokens = max(1, data.n_tokens if self.counted is None
                            else int(np.count_nonzero(self.counted)))
        self.n_seqs = max(1, data.n_seqs)

    def rates(self, info: Iteration) -> tuple[float, float]:
        """The token and sequence error rates (fractions) of an iteration."""
        tokens, sequences = self.counts(info)
        return tokens / self.n_tokens, sequences / self.n_seqs

    def counts(self, info: Iteration) -> tuple[int, int]:
        """The training token and sequence errors of an iteration (class docstring)."""
        counted_by_algorithm = info.token_errors >= 0 and not self.decoded
        if counted_by_algorithm or self.counted is None or not self.data.n_tokens:
            return max(info.token_errors, 0), max(info.sequence_errors, 0)
        data = self.data
        errors = counted_errors(self.decode(info.x, data), data.labels, self.counted,
                                data.seq_ptr)
        return errors.tokens, errors.sequences

    def decode(self, x: np.ndarray, data: Dataset) -> np.ndarray:
        """The best label path of every sequence of ``data`` under weights x, flat."""
        weights = Weights(self.corpus.space, x, MODEL_TYPES[self.model_type].normalisation)
        return self.structure.decode(weights, data, DecodeRequest()).paths[:, 0]


@dataclass(frozen=True)
class CountedErrors:
    """Errors at the counted tokens (one gold label each): a sequence is wrong when one of
    its counted tokens is; ``counted`` is how many tokens were counted."""

    tokens: int
    sequences: int
    counted: int


def counted_errors(predicted: np.ndarray, gold: np.ndarray, counted: np.ndarray,
                   seq_ptr: np.ndarray) -> CountedErrors:
    """The errors of a flat prediction against flat gold ids where ``counted`` is True (the
    one rule of training and development scoring: a partial gold label is left out)."""
    wrong = (predicted != gold) & counted
    sequence_of = np.repeat(np.arange(len(seq_ptr) - 1), np.diff(seq_ptr))
    return CountedErrors(int(wrong.sum()), len(np.unique(sequence_of[wrong])),
                         int(np.count_nonzero(counted)))


class StableError:
    """Wapiti's stopping rule on the token error: stable over a window of iterations."""

    def __init__(self, window: int, eps: float) -> None:
        self.window, self.eps = window, eps
        self.errors: list[float] = []

    def __call__(self, error: float) -> str | None:
        """The reason to stop after an iteration whose token error (%) is ``error``."""
        if self.window <= 0:
            return None
        self.errors = (self.errors + [error])[-self.window:]
        if len(self.errors) == self.window and max(self.errors) - min(self.errors) < self.eps:
            return (f"the token error moved less than {self.eps:g} points over "
                    f"{self.window} iterations (-w)")
        return None


def log_row(info: Iteration, token_error: float, sequence_error: float,
            devel: tuple[float, float] | None) -> dict:
    """One iteration as the report logs it: the values of its progress line, unrounded.

    Errors are percentages as printed; devel values are None without a devel set.
    """
    return {"iteration": info.it, "objective": float(info.f), "gradient_norm": info.gnorm,
            "token_error": 100.0 * token_error, "sequence_error": 100.0 * sequence_error,
            "seconds": float(info.seconds),
            "devel_error": None if devel is None else float(devel[0]),
            "devel_f1": None if devel is None else float(devel[1])}


def split_tags(tags: np.ndarray, seq_ptr: np.ndarray) -> list[list[str]]:
    """A flat array of tags cut into sequences (conlleval's input)."""
    return [tags[seq_ptr[s]:seq_ptr[s + 1]].tolist() for s in range(len(seq_ptr) - 1)]
