"""Choosing the regularisation strength: a warm-started path scored by devel F1 or by folds.

Choosing the prior is the costly part of training a CRF (Sutton & McCallum):
one retrains over a grid of strengths. ``crfkit tune`` makes that one command
and keeps its cost near a few trainings:

* **The path.** Strengths are visited from the strongest to the weakest
  (:func:`strength_path`; a grid of ``rho1`` x ``rho2`` in snake order, so
  that consecutive points differ in one coordinate). Each point starts
  L-BFGS from the weights of the point before it (*warm start*): strong
  regularisation converges in few iterations, and each next optimum is
  near the last one. The objective is strictly convex with ``rho2 > 0``, so
  a warm start changes the cost, not the optimum (the tests check that it
  reaches the cold start's objective).
* **The feature set.** After the strengths, the likely unsupported features
  (:mod:`crfkit.training.likely_features`, Sutton & McCallum) at each threshold of
  ``TuneOptions.likely``: every fold finds them where ``train
  --likely-features`` would (at its weights after ``--likely-after``
  iterations from zero, those of the path's first, cold point) and trains
  on from its weights at the best point so far, at that strength, the new
  features at zero. On CoNLL-2000 no L2 strength of the observed features
  alone reached CRF++'s test F1, and all features (``--all-features``, as
  CRF++) are 16 times as many; the likely ones are a fraction of those. They
  win only if their cross-validated F1 is higher, like any point.
* **The score.** With a development set (``-d``), the chunk F1 of the
  development set under each point's weights. Otherwise K-fold cross
  validation on the training set: the sequences are dealt into K folds by
  a seeded permutation (:func:`make_folds`), each fold's complement is
  encoded as a training corpus of its own (its own vocabulary and cut-off,
  as a training on that data would have), and the F1 of a point is the
  chunk F1 of all K held-out predictions pooled (conlleval over the whole
  training set, each sequence labelled by the model that did not see it).
  The best point has the highest F1; a tie goes to the stronger strength.
* **The model.** With ``-d``, the best point's weights (trained on all the
  training data), trained on from there to the final stopping rule (``-e``;
  the points stop at the looser ``--path-stopeps``). With folds, one more
  training on all the data at the best strength, warm-started from a fold's
  weights at that strength (a model of 4/5 of the data is close to the full
  one; L2 keeps the optimum unique, so
  the start changes only the iterations); a likely-feature point is trained
  as ``train --likely-features`` from fold 1's model there, its likely
  features found again on all the data. Its settings go in the model
  (``crfkit info``: ``tune``).
* **Parallel.** The K folds are independent: fold paths run on ``jobs``
  threads at once, each with its share of the cores (the kernels release the
  GIL). A fold's next point is queued when its point is done, behind the
  other folds' current points, so folds advance together and a point's row
  is printed as soon as its last fold is done.
* **Ctrl-C** stops at the next iteration of every fold; the points already
  scored are kept, and the model is made from the best of them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np

from crfkit.errors import UsageError
from crfkit.evaluation.conlleval import evaluate
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence as Sentence
from crfkit.kernels import blocks
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.blocks import set_thread_count
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import INTERRUPTED, Iteration
from crfkit.progress import Progress
from crfkit.space import FeatureSpace
from crfkit.structures.base import DecodeRequest, Setting, Structure
from crfkit.training.corpus import Corpus, DevelSet, encode_devel, encode_training, model_patterns
from crfkit.training.jitcache import announce_compile
from crfkit.training.monitor import split_tags
from crfkit.training.train import (
    ALGORITHMS,
    Problem,
    TrainOptions,
    log_row,
    recorded_options,
    resolve,
)

__all__ = ["DEFAULT_LIKELY", "DEFAULT_RHO2_PATH", "Strength", "TuneOptions", "TuneResult",
           "chosen_options", "likely_thresholds", "make_folds", "parse_likely", "parse_strengths",
           "strength_path", "tune", "tune_summary"]

DEFAULT_RHO2_PATH = (0.5, 0.25, 0.125)
"""The L2 strengths tried by default: powers of two from half train's default (1)
through CRF++'s tuned ``-c 4`` (0.25) to one step beyond. On CoNLL-2000 the
cross-validated F1 rose toward the weak end and rho2 = 2 never won, while its
cold start was the path's most expensive point."""


DEFAULT_LIKELY = (0.01,)
"""The likely-feature thresholds scored by default at the best observed strength."""


@dataclass(frozen=True)
class Strength:
    """One point of the path: the L1 and L2 strengths, and the feature set (``likely``:
    0 for the features observed in training, else the threshold of the likely
    unsupported features added to them, :mod:`crfkit.training.likely_features`)."""

    rho1: float
    rho2: float
    likely: float = 0.0

    def __str__(self) -> str:
        text = f"rho1={self.rho1:g} rho2={self.rho2:g}"
        return text + (f" likely={self.likely:g}" if self.likely else "")


def parse_strengths(text: str, option: str) -> list[float]:
    """``2,1,0.5`` (a list) or ``2:0.125:5`` (5 log-spaced values from 2 to 0.125).

    Raises UsageError naming ``option`` for anything else or a negative value.
    """
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            first, last, count = float(parts[0]), float(parts[1]), int(parts[2])
            if count < 1 or first <= 0 or last <= 0:
                raise ValueError
            if count == 1:
                return [first]
            ratio = math.log(last / first) / (count - 1)
            return [float(f"{first * math.exp(ratio * i):.6g}") for i in range(count)]
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError(f"{option}: expected a list like '2,1,0.5' or a log-spaced range "
                         f"FROM:TO:COUNT like '2:0.125:5', got {text!r}") from None
    for v in values:
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"{option}: strengths must be finite and >= 0, got {v:g}")
    return values


def parse_likely(text: str) -> tuple[float, ...]:
    """``0.1,0.01`` (thresholds in (0, 1]) or ``none`` (no likely features)."""
    if text.strip().lower() == "none":
        return ()
    values = parse_strengths(text, "--likely")
    for v in values:
        if not 0 < v <= 1:
            raise UsageError(f"--likely: thresholds must be in (0, 1] (or 'none'), got {v:g}")
    return tuple(values)


def strength_path(rho1: Sequence[float] | None, rho2: Sequence[float] | None,
                  default_rho2: float = 1.0) -> list[Strength]:
    """The points to visit, strongest first, each next to the one before it.

    Neither list given: :data:`DEFAULT_RHO2_PATH` with no L1. One given: the
    other is fixed (L1 0, L2 ``default_rho2``). Both: their grid, rows of
    decreasing ``rho1``, each row's ``rho2`` alternately decreasing and
    increasing (snake order, so every step changes one strength).
    """
    if rho1 is None and rho2 is None:
        rho2 = DEFAULT_RHO2_PATH
    ones = sorted(set(rho1 if rho1 is not None else [0.0]), reverse=True)
    twos = sorted(set(rho2 if rho2 is not None else [default_rho2]), reverse=True)
    path = []
    for row, r1 in enumerate(ones):
        for r2 in (twos if row % 2 == 0 else twos[::-1]):
            path.append(Strength(r1, r2))
    return path


def make_folds(n_sequences: int, k: int, seed: int) -> list[np.ndarray]:
    """Deal sequence indices into ``k`` folds (sorted index arrays) by a seeded shuffle.

    Whole sequences, never tokens: a fold's tokens are not seen in training
    through their neighbours. Sizes differ by at most one; the same
    ``(n_sequences, k, seed)`` always gives the same folds.
    """
    if k < 2:
        raise UsageError(f"--folds must be >= 2, got {k}")
    if n_sequences < k:
        raise UsageError(f"--folds {k}: the training data has only {n_sequences} "
                         f"sequence(s), fewer than the folds")
    order = np.random.default_rng(seed).permutation(n_sequences)
    return [np.sort(order[i::k]) for i in range(k)]


@dataclass
class TuneOptions:
    """Settings of the search; the training settings are a :class:`TrainOptions`."""

    folds: int = 5
    seed: int = 0
    likely: tuple[float, ...] = DEFAULT_LIKELY  # likely-feature thresholds tried at the best
    jobs: int = 0  # fold paths trained at once; 0: one per core (at most the folds)
    warm_start: bool = True
    path_stopeps: float | None = 5e-4  # -e of the path points (None: the final one's, -e)


@dataclass
class FoldPoint:
    """One fold trained at one strength."""

    x: np.ndarray
    objective: float
    iterations: int
    seconds: float
    reason: str
    gold: list[list[str]]
    pred: list[list[str]]
    log: list[dict]


@dataclass
class PointResult:
    """One strength scored: pooled F1 over the folds (or the devel F1) and costs."""

    strength: Strength
    f1: float
    fold_f1: list[float]
    iterations: int  # summed over the folds
    seconds: float  # training time summed over the folds
    nonzero: float  # non-zero weights, mean over the folds
    objective: list[float]
    reasons: list[str]
    logs: list[list[dict]] = field(default_factory=list, repr=False)  # per fold
    features: float = 0.0  # weights of the feature space, mean over the folds

    def as_dict(self) -> dict:
        return {"rho1": self.strength.rho1, "rho2": self.strength.rho2,
                "likely": self.strength.likely or None, "f1": self.f1,
                "fold_f1": self.fold_f1, "iterations": self.iterations,
                "seconds": self.seconds, "nonzero": self.nonzero, "features": self.features,
                "objective": self.objective}


@dataclass
class TuneResult:
    """What :func:`tune` returns: the scored points, the best one and its model."""

    points: list[PointResult]
    best: PointResult | None
    model: Model | None
    interrupted: bool
    mode: str  # "folds" or "devel"
    seconds: float
    final_log: list[dict] = field(default_factory=list)
    final: dict = field(default_factory=dict)


@dataclass
class _Fold:
    """A training corpus and the held-out sequences that score it."""

    corpus: Corpus
    heldout: DevelSet
    gold: list[list[str]]
    structure: Structure
    grown: dict[float, Corpus] = field(default_factory=dict)  # likely threshold: its corpus
    early_x: np.ndarray | None = None  # the weights after --likely-after iterations from zero

    def corpus_for(self, strength: Strength, start: np.ndarray | None) -> Corpus:
        """The corpus of the point's feature set, starting from ``start`` (None: zeros).

        The first likely point of a threshold grows a copy of the observed corpus
        with the likely features at ``early_x`` (as ``train --likely-features``
        finds them: after ``--likely-after`` iterations from zero, those of the
        path's first, cold point), or at ``start`` if the path never got that
        far; it starts from ``start`` (observed weights), the new features at
        zero. The next points of that threshold reuse it.
        """
        if not strength.likely:
            return self.corpus if start is None else replace(self.corpus, x0=start)
        grown = self.grown.get(strength.likely)
        if grown is not None and start is not None and len(start) == grown.space.n_weights:
            return replace(grown, x0=start)
        if start is None or len(start) != self.corpus.space.n_weights:
            raise UsageError(f"the likely features of {strength} are found from the weights "
                             f"of an observed-feature point: none precedes it on the path")
        from crfkit.training.likely_features import add_likely_features

        grown = replace(self.corpus)
        found_at = self.early_x if self.early_x is not None else start
        add_likely_features(grown, found_at, strength.likely)
        grown.x0 = _relayout(start, self.corpus.space, grown.space)
        self.grown[strength.likely] = grown
        return grown


def _relayout(x: np.ndarray, old: FeatureSpace, new: FeatureSpace) -> np.ndarray:
    """Weights ``x`` of ``old`` at their place in ``new``, a superset (zeros elsewhere)."""
    (old_u, old_b), (new_u, new_b) = old.keys(), new.keys()
    out = np.zeros(new.n_weights)
    out[np.searchsorted(new_u, old_u)] = x[:old.n_u]
    out[new.n_u + np.searchsorted(new_b, old_b)] = x[old.n_u:old.trans_offset]
    out[new.trans_offset:] = x[old.trans_offset:]
    return out


def _encode_fold(patterns: list[Pattern], train: list[Sentence], heldout: list[Sentence],
                 options: TrainOptions, model_type: str, source: str,
                 heldout_source: str, structure: Structure) -> _Fold:
    corpus = encode_training(patterns, train, cutoff=options.cutoff, source=source,
                             model_type=model_type, all_features=options.all_features,
                             all_labels=options.all_labels, structure=structure)
    dev = encode_devel(corpus, heldout, heldout_source)
    names = np.array(dev.label_names, dtype=object)
    return _Fold(corpus, dev, split_tags(names[dev.data.labels], dev.data.seq_ptr), structure)


def _train_point(fold: _Fold, strength: Strength, start: np.ndarray | None,
                 options: TrainOptions, model_type: str, stop: threading.Event,
                 threads: int, on_iteration: Callable[[str], None] | None = None) -> FoldPoint:
    """Train one fold at one strength from ``start`` (None: zeros) and label its held-out part."""
    if threads:
        set_thread_count(threads)  # Numba's thread count is per calling thread
    corpus = fold.corpus_for(strength, start)
    point_options = replace(options, rho1=strength.rho1, rho2=strength.rho2)

    log: list[dict] = []
    n_tokens, n_seqs = max(1, corpus.data.n_tokens), max(1, corpus.data.n_seqs)

    def hook(info: Iteration) -> str | None:
        if start is None and info.it == options.likely_after and fold.early_x is None:
            fold.early_x = info.x.copy()  # where train --likely-features would look
        log.append(log_row(info, max(info.token_errors, 0) / n_tokens,
                           max(info.sequence_errors, 0) / n_seqs, None))
        if on_iteration is not None:  # the table's next row can be minutes away
            on_iteration(f"* {strength}: iteration {info.it}, objective {info.f:.6g}")
        return INTERRUPTED if stop.is_set() else None

    began = time.perf_counter()
    result = ALGORITHMS["l-bfgs"].run(Problem(model_type, corpus, point_options,
                                              fold.structure), hook)
    seconds = time.perf_counter() - began
    heldout = fold.heldout
    weights = Weights(corpus.space, result.x, MODEL_TYPES[model_type].normalisation)
    ids = fold.structure.decode(weights, heldout.data, DecodeRequest()).paths[:, 0]
    names = np.array(heldout.label_names, dtype=object)
    return FoldPoint(result.x, result.f, result.iterations, seconds, result.reason,
                     fold.gold, split_tags(names[ids], heldout.data.seq_ptr), log)


def _score(strength: Strength, points: list[FoldPoint]) -> PointResult:
    gold = [s for p in points for s in p.gold]
    pred = [s for p in points for s in p.pred]
    return PointResult(
        strength, evaluate(gold, pred).f1, [evaluate(p.gold, p.pred).f1 for p in points],
        sum(p.iterations for p in points), sum(p.seconds for p in points),
        float(np.mean([np.count_nonzero(p.x) for p in points])), [p.objective for p in points],
        [p.reason for p in points], [p.log for p in points],
        features=float(np.mean([len(p.x) for p in points])))


@dataclass
class _PathState:
    """What the path keeps while it runs: scored points, the best one, its fold weights."""

    points: list[PointResult] = field(default_factory=list)
    best: PointResult | None = None
    best_x: list[np.ndarray] = field(default_factory=list)
    interrupted: bool = False


def _run_path(folds: list[_Fold], path: list[Strength], options: TrainOptions, model_type: str,
              *, jobs: int, threads: int, warm: bool,
              on_point: Callable[[PointResult], None], state: _PathState | None = None,
              starts: Sequence[np.ndarray] | None = None,
              on_iteration: Callable[[str], None] | None = None) -> _PathState:
    """Train every fold along the path (module docstring: Parallel, Ctrl-C); the
    points join ``state`` (a new one if None); the first point of fold k starts
    from ``starts[k]`` (None: zeros)."""
    k_folds = len(folds)
    stop = threading.Event()
    state = state if state is not None else _PathState()
    last_x: list[np.ndarray | None] = list(starts) if starts is not None else [None] * k_folds
    finished: dict[int, dict[int, FoldPoint]] = {}
    failure: BaseException | None = None
    with _sigint_sets(stop, state), ThreadPoolExecutor(jobs, "crfkit-tune") as pool:
        pending: dict[Future, tuple[int, int]] = {}

        def submit(k: int, i: int) -> None:
            start = last_x[k] if warm or (starts is not None and i == 0) else None
            future = pool.submit(_train_point, folds[k], path[i], start, options, model_type,
                                 stop, threads, on_iteration)
            pending[future] = (k, i)

        try:
            for k in range(k_folds):
                submit(k, 0)
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    k, i = pending.pop(future)
                    try:
                        point = future.result()
                    except Exception as err:  # the others stop at their next iteration
                        stop.set()
                        failure = failure or err
                        continue
                    if point.reason == INTERRUPTED:
                        continue
                    last_x[k] = point.x
                    finished.setdefault(i, {})[k] = point
                    if len(finished[i]) == k_folds:
                        by_fold = finished.pop(i)
                        _point_done(state, path[i], [by_fold[j] for j in range(k_folds)],
                                    on_point)
                    if i + 1 < len(path) and not stop.is_set():
                        submit(k, i + 1)
        except BaseException:
            stop.set()  # the running folds end at their next iteration, then the pool closes
            raise
    if failure is not None:
        raise failure
    return state


def _point_done(state: _PathState, strength: Strength, points: list[FoldPoint],
                on_point: Callable[[PointResult], None]) -> None:
    result = _score(strength, points)
    state.points.append(result)
    if state.best is None or result.f1 > state.best.f1:  # a tie keeps the stronger (earlier)
        state.best = result
        state.best_x = [p.x for p in points]
    on_point(result)


class _sigint_sets:
    """While active (in the main thread), Ctrl-C sets ``stop`` instead of raising."""

    def __init__(self, stop: threading.Event, state: _PathState) -> None:
        self.stop, self.state, self.previous = stop, state, None

    def __enter__(self) -> None:
        import signal

        def handler(signum, frame) -> None:
            self.stop.set()
            self.state.interrupted = True

        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, handler)

    def __exit__(self, *exc) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def tune(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
         path: list[Strength], tune_options: TuneOptions | None = None, *,
         devel: list[Sentence] | None = None, progress: Progress | None = None,
         source: str = "<input>", devel_source: str = "<devel>") -> TuneResult:
    """Score every strength of ``path`` and make the model of the best (module docstring).

    ``options`` holds the training settings (l-bfgs; its rho1/rho2 are
    replaced by the path's); with ``devel`` the score is its F1, else
    ``tune_options.folds``-fold cross-validation. The table goes to ``progress``.
    """
    began = time.perf_counter()
    t = tune_options or TuneOptions()
    _validate(options, t, path)
    progress = progress or Progress(quiet=True)
    structure, model_type = resolve(options, None, patterns, devel=True, command="tune")
    patterns = model_patterns(structure.patterns(patterns, None), model_type)
    announce_compile(progress, "l-bfgs", model_type, True, structure)
    folds, mode = _encode(patterns, sequences, options, t, (model_type, structure), devel,
                          source, devel_source, progress)
    cores = options.nthread or blocks.cores()
    jobs = 1 if mode == "devel" else max(1, min(t.jobs or cores, len(folds)))
    threads = max(1, cores // jobs)
    what = (f"the development set ({devel_source})" if mode == "devel" else
            f"{len(folds)}-fold cross-validation (seed {t.seed}, {jobs} fold(s) at a time)")
    progress.message(f"* scoring {len(path)} strength(s) by chunk F1 on {what}; "
                     f"warm starts {'on' if t.warm_start else 'off'}")
    progress.message(TABLE_HEADER)
    path_options = replace(options, stopeps=t.path_stopeps if t.path_stopeps is not None
                           else options.stopeps)

    def show(point: PointResult) -> None:
        progress.message(table_row(point))

    state = _run_path(folds, path, path_options, model_type, jobs=jobs, threads=threads,
                      warm=t.warm_start, on_point=show, on_iteration=progress.status)
    warning = edge_warning(path, state.best.strength) if state.best is not None else None
    if warning and not state.interrupted:
        progress.message(f"* warning: {warning}")
    thresholds = likely_thresholds(t, options, structure, model_type)
    if state.best is not None and thresholds and not state.interrupted:
        progress.message(f"* likely features at the best point so far ({state.best.strength}),"
                         f" found as train --likely-features finds them: threshold(s) "
                         f"{', '.join(f'{p:g}' for p in thresholds)}")
        _likely_phase(folds, state, thresholds, path_options, model_type, jobs=jobs,
                      threads=threads, on_point=show)
    result = TuneResult(state.points, state.best, None, state.interrupted, mode, 0.0)
    if state.best is None:
        result.seconds = time.perf_counter() - began
        return result
    progress.message(f"* best: {state.best.strength} (F1 {state.best.f1:.2f})"
                     + (" -- interrupted: the best of the points scored" if
                        state.interrupted else ""))
    first_fold = folds[0]
    folds.clear()  # the fold corpora are not needed any more: free them before the last training
    if mode == "devel":
        chosen = state.best.strength
        corpus = first_fold.grown[chosen.likely] if chosen.likely else first_fold.corpus
        x = state.best_x[0]
        if path_options.stopeps != options.stopeps:
            x = _converge(replace(corpus, x0=x), chosen_options(options, chosen),
                          (model_type, structure), state, result, progress)
        result.model = _model_of(corpus, patterns, (model_type, structure), x,
                                 chosen_options(options, chosen), state.best, result.final)
    else:
        set_thread_count(options.nthread)
        result.model = _final_training(patterns, sequences, options, state, first_fold,
                                       model_type, t.warm_start, result, progress, source)
    result.model.info["tune"] = tune_info(result, t, len(path) + len(thresholds))
    result.seconds = time.perf_counter() - began
    return result


def edge_warning(path: Sequence[Strength], best: Strength) -> str | None:
    """When the best strength is the strongest or weakest the grid tried (in a coordinate
    with several values): the F1 may still rise beyond it, the search should extend."""
    for name, option in (("rho1", "--rho1"), ("rho2", "--rho2")):
        values = sorted({getattr(s, name) for s in path})
        value = getattr(best, name)
        if len(values) < 2 or values[0] < value < values[-1]:
            continue
        side, beyond = ("weakest", "below") if value == values[0] else ("strongest", "above")
        return (f"the best {name}={value:g} is the {side} the grid tried: a strength "
                f"{beyond} it may score higher (extend {option} {beyond} {value:g})")
    return None


def likely_thresholds(t: TuneOptions, options: TrainOptions, structure: Structure,
                      model_type: str = "crf") -> tuple[float, ...]:
    """The likely-feature thresholds to score: none with ``--all-features`` (every
    unsupported feature is in already), ``--all-labels``, or a structure that refuses
    likely features (train refuses those mixes)."""
    if options.all_features or options.all_labels:
        return ()
    try:
        structure.refuse(Setting("tune", "l-bfgs", model_type, options.structure, likely=True))
    except UsageError:
        return ()
    return tuple(t.likely)


def _likely_phase(folds: list[_Fold], state: _PathState, thresholds: Sequence[float],
                  options: TrainOptions, model_type: str, *, jobs: int, threads: int,
                  on_point: Callable[[PointResult], None]) -> None:
    """Score each threshold's likely features at the best observed strength.

    Every fold finds its likely features as ``train --likely-features`` does
    (:meth:`_Fold.corpus_for`) and continues from its weights at that point,
    the new features at zero (so the point is always warm-started).
    """
    observed, starts = state.best, list(state.best_x)
    assert observed is not None
    for threshold in thresholds:
        if state.interrupted:
            return
        _run_path(folds, [replace(observed.strength, likely=threshold)], options, model_type,
                  jobs=jobs, threads=threads, warm=True, on_point=on_point, state=state,
                  starts=starts)


def chosen_options(options: TrainOptions, strength: Strength) -> TrainOptions:
    """The training settings of a path point."""
    return replace(options, rho1=strength.rho1, rho2=strength.rho2,
                   likely=strength.likely or None)


TABLE_HEADER = (f"  {'rho1':>8} {'rho2':>8} {'likely':>6} {'iterations':>10} {'seconds':>9} "
                f"{'F1':>7} {'sd':>6} {'non-zero':>10}")


def table_row(point: PointResult) -> str:
    """One row of the table ``tune`` prints: iterations and seconds summed over the folds,
    F1 pooled over them, ``sd`` the standard deviation of the folds' own F1; ``likely``
    the threshold of the likely features added (``-``: the observed features only)."""
    sd = f"{np.std(point.fold_f1, ddof=1):6.2f}" if len(point.fold_f1) > 1 else f"{'-':>6}"
    s = point.strength
    likely = f"{s.likely:>6g}" if s.likely else f"{'-':>6}"
    return (f"  {s.rho1:>8g} {s.rho2:>8g} {likely} {point.iterations:>10d} "
            f"{point.seconds:>9.1f} {point.f1:>7.2f} {sd} {point.nonzero:>10,.0f}")


def tune_info(result: TuneResult, t: TuneOptions, n_path: int) -> dict:
    """What the model records about the search (``crfkit info`` prints it on one line)."""
    best = result.best
    assert best is not None
    criterion = ("chunk F1 of the development set" if result.mode == "devel" else
                 f"chunk F1 of {t.folds} folds pooled (seed {t.seed})")
    scores = " ".join(f"{p.strength.rho1:g}/{p.strength.rho2:g}/{p.strength.likely:g}:"
                      f"{p.f1:.2f}" for p in result.points)
    return {"criterion": criterion, "chosen_rho1": best.strength.rho1,
            "chosen_rho2": best.strength.rho2, "chosen_likely": best.strength.likely or None,
            "f1": round(best.f1, 4), "scored": f"{len(result.points)} of {n_path}",
            "rho1/rho2/likely:F1": scores, "warm_start": t.warm_start,
            "path_stopeps": t.path_stopeps,
            "interrupted": result.interrupted}


def _validate(options: TrainOptions, t: TuneOptions, path: list[Strength]) -> None:
    options.validate()
    if options.algo != "l-bfgs":
        raise UsageError(f"tune trains with l-bfgs (its -1/-2 strengths are what it tunes), "
                         f"not -a {options.algo}")
    if not path:
        raise UsageError("no strengths to try")
    if t.jobs < 0:
        raise UsageError(f"-j/--jobs must be >= 0, got {t.jobs}")
    if t.path_stopeps is not None and not t.path_stopeps >= 0:
        raise UsageError(f"--path-stopeps must be >= 0, got {t.path_stopeps}")


def _encode(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
            t: TuneOptions, kind: tuple[str, Structure], devel: list[Sentence] | None,
            source: str, devel_source: str, progress: Progress) -> tuple[list[_Fold], str]:
    """The corpora to train: the whole set (with ``devel``), else one per fold (``kind``:
    the model type and structure)."""
    model_type, structure = kind
    if not sequences:
        raise UsageError("training data is empty (no sequences)")
    if devel is not None:
        fold = _encode_fold(patterns, sequences, devel, options, model_type, source,
                            devel_source, structure)
        for warning in fold.heldout.warnings:
            progress.warning(warning)
        return [fold], "devel"
    folds = []
    for held in make_folds(len(sequences), t.folds, t.seed):
        keep = np.ones(len(sequences), dtype=bool)
        keep[held] = False
        progress.status(f"* encoding fold {len(folds) + 1} of {t.folds}")
        folds.append(_encode_fold(patterns, [sequences[i] for i in np.flatnonzero(keep)],
                                  [sequences[i] for i in held], options, model_type,
                                  source, source, structure))
    progress.clear_status()
    return folds, "folds"


def _converge(corpus: Corpus, options: TrainOptions, kind: tuple[str, Structure],
              state: _PathState, result: TuneResult, progress: Progress) -> np.ndarray:
    """The ``-d`` mode's model: the best point's weights (stopped by --path-stopeps) trained
    on to the final stopping rule (-e), so that the model is as converged as ``info`` says.
    Ctrl-C keeps the weights reached."""
    stop = threading.Event()

    def hook(info: Iteration) -> str | None:
        result.final_log.append(log_row(info, max(info.token_errors, 0) / n_tokens,
                                        max(info.sequence_errors, 0) / n_seqs, None))
        return INTERRUPTED if stop.is_set() else None

    n_tokens, n_seqs = max(1, corpus.data.n_tokens), max(1, corpus.data.n_seqs)
    progress.message(f"* training on to -e {options.stopeps:g} from the best point's weights")
    began = time.perf_counter()
    with _sigint_sets(stop, state):
        trained = ALGORITHMS["l-bfgs"].run(Problem(kind[0], corpus, options, kind[1]), hook)
    seconds = time.perf_counter() - began
    result.final = {"iterations": trained.iterations, "seconds": seconds,
                    "stop_reason": trained.reason, "objective": trained.f}
    result.interrupted = result.interrupted or trained.reason == INTERRUPTED
    progress.message(f"* stopped after {trained.iterations} more iterations: "
                     f"{trained.reason} ({seconds:.1f}s)")
    return trained.x


def _model_of(corpus: Corpus, patterns: list[Pattern], kind: tuple[str, Structure],
              x: np.ndarray, options: TrainOptions, best: PointResult,
              final: dict | None = None) -> Model:
    """The model of a path point trained on the whole training set (the ``-d`` mode);
    ``final``: the training on from it to -e (:func:`_converge`), if any."""
    model_type, structure = kind
    recorded = recorded_options(options, model_type, devel=False, structure=structure)
    if options.likely is not None:  # added at the converged weights of the observed point
        recorded.pop("likely_after", None)
    final = final or {}
    info = {"algorithm": "l-bfgs", "options": recorded,
            "iterations": best.iterations + final.get("iterations", 0),
            "objective": final.get("objective", best.objective[0]),
            "stop_reason": final.get("stop_reason", best.reasons[0]),
            "sequences": corpus.data.n_seqs,
            "tokens": corpus.data.n_tokens, "nonzero_weights": int(np.count_nonzero(x))}
    return Model(labels=corpus.labels, patterns=patterns, n_token_columns=corpus.n_token_columns,
                 featurizer=corpus.featurizer, space=corpus.space, weights=x, info=info,
                 model_type=model_type)


def _final_training(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
                    state: _PathState, fold: _Fold, model_type: str, warm: bool,
                    result: TuneResult, progress: Progress, source: str) -> Model:
    """Train on all the data at the best strength, from a fold's weights there if ``warm``."""
    from crfkit.training.train import train

    best = state.best
    assert best is not None
    chosen = best.strength
    init = None
    if warm or chosen.likely:
        c = fold.grown[chosen.likely] if chosen.likely else fold.corpus
        init = Model(labels=c.labels, patterns=patterns, n_token_columns=c.n_token_columns,
                     featurizer=c.featurizer, space=c.space, weights=state.best_x[0],
                     model_type=model_type)
    progress.message(f"* training on all {len(sequences)} sequences at {chosen}"
                     + (", starting from fold 1's weights" if init is not None else ""))
    began = time.perf_counter()
    if chosen.likely:
        assert init is not None
        model = _train_likely(patterns, sequences, chosen_options(options, chosen), init,
                              (model_type, fold.structure), source, result.final_log)
    else:
        model = train(patterns, sequences, chosen_options(options, chosen),
                      progress=Progress(quiet=True), source=source, init=init,
                      log=result.final_log)
    model.info.pop("initial_model", None)
    seconds = time.perf_counter() - began
    result.final = {"iterations": model.info["iterations"], "seconds": seconds,
                    "stop_reason": model.info["stop_reason"]}
    if model.info["stop_reason"] == INTERRUPTED:
        result.interrupted = True
    progress.message(f"* stopped after {model.info['iterations']} iterations: "
                     f"{model.info['stop_reason']} ({seconds:.1f}s)")
    return model


def _train_likely(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
                  init: Model, kind: tuple[str, Structure], source: str,
                  log: list[dict]) -> Model:
    """``crfkit train --likely-features P`` on all the data, from ``init`` (fold 1's
    model at the chosen point, its likely features included): ``--likely-after``
    iterations, the likely features of all the data added, then on to convergence.
    (``train`` refuses ``-m`` with ``--likely-features``; tune's final model is the
    one place that combines them, from a model of the same patterns and data.)"""
    from crfkit.training.train import fit

    began = time.perf_counter()
    model_type, structure = kind
    corpus = encode_training(patterns, sequences, cutoff=options.cutoff, source=source,
                             model_type=model_type, init=init, structure=structure)
    return fit(Problem(model_type, corpus, options, structure), patterns,
               progress=Progress(quiet=True), started=began, log=log)


def tune_summary(result: TuneResult, t: TuneOptions, model_file: str | None) -> dict:
    """The JSON summary (``tune --json``; also the report's ``report.json``)."""
    return {
        "format": "crfkit-tune/1",
        "mode": result.mode,
        "folds": t.folds if result.mode == "folds" else None,
        "seed": t.seed if result.mode == "folds" else None,
        "warm_start": t.warm_start,
        "points": [p.as_dict() for p in result.points],
        "best": None if result.best is None else result.best.as_dict(),
        "final_training": result.final or None,
        "model": model_file,
        "interrupted": result.interrupted,
        "seconds": result.seconds,
    }
