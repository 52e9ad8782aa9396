"""Training, top to bottom: sequences -> features -> arrays -> optimiser -> model."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from crfkit.errors import InputError, UsageError
from crfkit.features import Featurizer, token_lists
from crfkit.model import Model
from crfkit.objective import Objective
from crfkit.optim import lbfgs
from crfkit.patterns import Pattern, check_columns
from crfkit.progress import Progress
from crfkit.reader import Sequence
from crfkit.space import Dataset, FeatureSpace


@dataclass
class TrainOptions:
    """Training settings; defaults live here and nowhere else."""

    rho2: float = 1.0
    maxiter: int = 0
    stopeps: float = 1e-5
    stopwin: int = 10
    history: int = 6
    cutoff: int = 1
    nthread: int = 0

    def validate(self) -> None:
        if self.rho2 < 0:
            raise UsageError(f"-2/--rho2 must be >= 0, got {self.rho2}")
        if self.maxiter < 0:
            raise UsageError(f"-i/--maxiter must be >= 0, got {self.maxiter}")
        if self.stopeps < 0:
            raise UsageError(f"-e/--stopeps must be >= 0, got {self.stopeps}")
        if self.stopwin < 1:
            raise UsageError(f"-w/--stopwin must be >= 1, got {self.stopwin}")
        if self.cutoff < 1:
            raise UsageError(f"-f/--cutoff must be >= 1, got {self.cutoff}")
        if self.nthread < 0:
            raise UsageError(f"-t/--nthread must be >= 0, got {self.nthread}")
        if self.history < 1:
            raise UsageError(f"--history must be >= 1, got {self.history}")


@dataclass
class Corpus:
    """A labelled training corpus encoded for the kernels."""

    featurizer: Featurizer
    space: FeatureSpace
    data: Dataset
    empirical: np.ndarray
    labels: list[str]
    n_token_columns: int


def encode_training(patterns: list[Pattern], sequences: list[Sequence], *, cutoff: int = 1,
                    source: str = "<input>") -> Corpus:
    """Build the vocabulary, feature space and arrays of a training corpus."""
    if not sequences:
        raise InputError("training data is empty (no sequences)", path=source)
    n_columns = len(sequences[0].rows[0])
    if n_columns < 2:
        raise InputError(f"training data needs token columns and a label column, found "
                         f"{n_columns} column", path=source, line=sequences[0].lines[0])
    for seq in sequences:
        if len(seq.rows[0]) != n_columns:
            raise InputError(f"expected {n_columns} columns, found {len(seq.rows[0])}",
                             path=source, line=seq.lines[0])
    n_token_columns = n_columns - 1
    check_columns(patterns, n_token_columns, label_column=True)

    gold = [row[-1] for seq in sequences for row in seq.rows]
    labels = list(dict.fromkeys(gold))
    label_index = {label: i for i, label in enumerate(labels)}
    y = np.fromiter(map(label_index.__getitem__, gold), dtype=np.int32, count=len(gold))

    featurizer = Featurizer(patterns)
    pos, components = featurizer.components(sequences, grow=True)
    obs = featurizer.build_vocab(components, cutoff=cutoff)
    listed = [patterns[p] for p in featurizer.listed]
    unigram = np.array([p.has_unigram for p in listed], dtype=bool)
    bigram = np.array([p.has_bigram and not p.is_constant for p in listed], dtype=bool)
    has_trans = any(p.is_constant and p.has_bigram for p in patterns)
    space, empirical = FeatureSpace.from_training(
        obs, unigram, bigram, pos.index == 0, y, len(featurizer.vocab), len(labels), has_trans)
    # Keep only the columns whose kind has features: bigram-only columns at the
    # first token of a sequence simply find no features there.
    tok_ptr, tok_obs = token_lists(obs)
    data = Dataset(seq_ptr=pos.seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs, labels=y)
    return Corpus(featurizer, space, data, empirical, labels, n_token_columns)


def train(patterns: list[Pattern], sequences: Iterable[Sequence],
          options: TrainOptions | None = None, *, progress: Progress | None = None,
          source: str = "<input>") -> Model:
    """Train a CRF by L-BFGS on the L2-regularised negative log-likelihood."""
    options = options or TrainOptions()
    options.validate()
    progress = progress or Progress(quiet=True)
    _set_threads(options.nthread)
    started = time.perf_counter()
    sequences = list(sequences)
    corpus = encode_training(patterns, sequences, cutoff=options.cutoff, source=source)
    space, data = corpus.space, corpus.data
    progress.message(
        f"* {data.n_seqs} sequences, {data.n_tokens} tokens, {len(corpus.labels)} labels, "
        f"{len(corpus.featurizer.vocab)} observations, {space.n_weights} features "
        f"({time.perf_counter() - started:.2f}s to encode)")

    objective = Objective(space, data, corpus.empirical, options.rho2)

    def report(it: int, f: float, seconds: float) -> None:
        progress.iteration(it, f, objective.token_errors / max(1, data.n_tokens),
                           objective.sequence_errors / max(1, data.n_seqs), seconds)

    result = lbfgs.minimize(objective, np.zeros(space.n_weights), history=options.history,
                            maxiter=options.maxiter, stop_eps=options.stopeps,
                            stop_window=options.stopwin, on_iteration=report)
    elapsed = time.perf_counter() - started
    progress.message(f"* stopped after {result.iterations} iterations: {result.reason} "
                     f"({elapsed:.1f}s)")
    info = {
        "algorithm": "l-bfgs",
        "options": asdict(options),
        "iterations": result.iterations,
        "objective": result.f,
        "stop_reason": result.reason,
        "train_seconds": round(elapsed, 3),
        "sequences": data.n_seqs,
        "tokens": data.n_tokens,
    }
    return Model(labels=corpus.labels, patterns=patterns, n_token_columns=corpus.n_token_columns,
                 featurizer=corpus.featurizer, space=space, weights=result.x, info=info)


def _set_threads(n: int) -> None:
    import numba

    numba.set_num_threads(n if n > 0 else numba.config.NUMBA_NUM_THREADS)
