"""Choosing the regularisation strength: a warm-started path scored by devel F1 or by folds.

Strengths are visited from the strongest to the weakest, each point starting L-BFGS from
the weights of the point before it (a warm start changes the cost, not the optimum: the
objective is strictly convex with ``rho2 > 0``); then the likely unsupported features
(:mod:`crfkit.training.likely_features`) at the best point. A point is scored by the chunk
F1 of the development set (``-d``) or of K folds pooled; the folds run on threads at once.
The model is the best point's (with folds: one more training on all the data from a
fold's weights). Ctrl-C keeps the points already scored. The manual describes the search
and the measurements behind its defaults.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

import numpy as np

from crfkit import config
from crfkit.errors import UsageError
from crfkit.evaluation.scoring import evaluate
from crfkit.features.columns import columns_of
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence as Sentence
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.blocks import set_thread_count
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import INTERRUPTED, Iteration
from crfkit.progress import Progress
from crfkit.structures.base import DecodeRequest, Setting, Structure
from crfkit.training.corpus import Corpus, encode_training, model_patterns
from crfkit.training.jitcache import announce_compile
from crfkit.training.monitor import TrainingErrors, split_tags
from crfkit.training.train import (
    ALGORITHMS,
    Problem,
    TrainOptions,
    for_label_sets_in,
    log_row,
    recorded_options,
    resolve,
)
from crfkit.training.tune_folds import Fold, encode_folds
from crfkit.training.tune_path import (
    DEFAULT_LIKELY,
    DEFAULT_RHO2_PATH,
    TABLE_HEADER,
    FoldPoint,
    PointResult,
    Strength,
    TuneOptions,
    TuneResult,
    chosen_options,
    edge_warning,
    make_folds,
    parse_likely,
    parse_strengths,
    strength_path,
    table_row,
    tune_info,
    tune_summary,
)

__all__ = ["DEFAULT_LIKELY", "DEFAULT_RHO2_PATH", "Strength", "TuneOptions", "TuneResult",
           "chosen_options", "likely_thresholds", "make_folds", "parse_likely", "parse_strengths",
           "refuse_likely", "strength_path", "tune", "tune_summary"]

def _train_point(fold: Fold, strength: Strength, start: np.ndarray | None,
                 options: TrainOptions, model_type: str, stop: threading.Event,
                 threads: int, on_iteration: Callable[[str], None] | None = None) -> FoldPoint:
    """Train one fold at one strength from ``start`` (None: zeros) and label its held-out part."""
    if threads:
        set_thread_count(threads)  # Numba's thread count is per calling thread
    corpus = fold.corpus_for(strength, start)
    point_options = replace(options, rho1=strength.rho1, rho2=strength.rho2)

    log: list[dict] = []
    errors = TrainingErrors(corpus.data, corpus, model_type, fold.structure)

    def hook(info: Iteration) -> str | None:
        if start is None and info.it == options.likely_after and fold.early_x is None:
            fold.early_x = info.x.copy()  # where train --likely-features would look
        log.append(log_row(info, *errors.rates(info), None))
        if on_iteration is not None:  # the table's next row can be minutes away
            on_iteration(f"* {strength}: iteration {info.it}, objective {info.f:.6g}")
        return INTERRUPTED if stop.is_set() else None

    began = time.perf_counter()
    problem = Problem(model_type, corpus, point_options, fold.structure)
    run = ALGORITHMS["l-bfgs"].run
    # a cold start as train's (a latent model's structured start); a warm one goes on
    result = (run(problem, hook) if start is not None
              else fold.structure.optimise(problem, hook, run, None))
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


def _run_path(folds: list[Fold], path: list[Strength], options: TrainOptions, model_type: str,
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
    asked = replace(options, likely=max(t.likely)) if t.likely else options  # as train's
    structure = for_label_sets_in(structure, columns_of(sequences, [-1]), source, asked,
                                  model_type, progress, command="tune", devel=True)
    thresholds = likely_thresholds(t, options, structure, model_type)  # refused before work
    patterns = model_patterns(structure.patterns(patterns, None), model_type)
    announce_compile(progress, "l-bfgs", model_type, True, structure)
    folds, mode = encode_folds(patterns, sequences, options, t, (model_type, structure), devel,
                          source, devel_source, progress)
    cores = options.nthread or config.cores()
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
    if state.best is not None and thresholds and not state.interrupted:
        progress.message(f"* likely features at the best point so far ({state.best.strength}),"
                         f" found as train --likely-features finds them: threshold(s) "
                         f"{', '.join(f'{p:g}' for p in thresholds)}")
        _likely_phase(folds, state, thresholds, path_options, model_type, jobs=jobs,
                      threads=threads, on_point=show)
    result = TuneResult(state.points, state.best, None, state.interrupted, mode, 0.0)
    if state.best is not None:
        _best_model(result, state, folds, (patterns, sequences), options, path_options,
                    (model_type, structure), t, source, progress)
        result.model.info["tune"] = tune_info(result, t, len(path) + len(thresholds))
    result.seconds = time.perf_counter() - began
    return result


def _best_model(result: TuneResult, state: _PathState, folds: list[Fold],
                inputs: tuple[list[Pattern], list[Sentence]], options: TrainOptions,
                path_options: TrainOptions, kind: tuple[str, Structure], t: TuneOptions,
                source: str, progress: Progress) -> None:
    """``result.model``: the best point's (``-d``: its weights, trained on to -e), or with
    folds one more training on all the data at its strength."""
    patterns, sequences = inputs
    progress.message(f"* best: {state.best.strength} (F1 {state.best.f1:.2f})"
                     + (" -- interrupted: the best of the points scored" if
                        state.interrupted else ""))
    first_fold = folds[0]
    folds.clear()  # the fold corpora are not needed any more: free them before the last training
    if result.mode == "devel":
        chosen = state.best.strength
        corpus = first_fold.grown[chosen.likely] if chosen.likely else first_fold.corpus
        x = state.best_x[0]
        if path_options.stopeps != options.stopeps:
            x = _converge(replace(corpus, x0=x), chosen_options(options, chosen), kind,
                          state, result, progress)
        result.model = _model_of(corpus, patterns, kind, x, chosen_options(options, chosen),
                                 state.best, result.final)
    else:
        set_thread_count(options.nthread)
        result.model = _final_training(patterns, sequences, options, state, first_fold,
                                       kind[0], t.warm_start, result, progress, source)


def refuse_likely(options: TrainOptions, patterns: list[Pattern] | None) -> None:
    """An explicit ``--likely`` list for a structure without likely features: one line
    before any work (the default list is dropped for it instead: :func:`likely_thresholds`)."""
    structure, model_type = resolve(options, None, patterns, devel=True, command="tune")
    structure.refuse(Setting("tune", "l-bfgs", model_type, options.structure, likely=True))


def likely_thresholds(t: TuneOptions, options: TrainOptions, structure: Structure,
                      model_type: str = "crf") -> tuple[float, ...]:
    """The likely-feature thresholds to score: none with ``--all-features`` (every
    unsupported feature is in already), ``--all-labels``, or a structure that refuses
    likely features (train refuses those mixes). The default list is dropped quietly for
    such a structure; a list the user gave is refused in one line, as train refuses it:
    label sets in the data choose their structure only once the data is read."""
    if options.all_features or options.all_labels:
        return ()
    asked = DEFAULT_LIKELY if t.likely is None else tuple(t.likely)
    if not asked:
        return ()
    try:
        structure.refuse(Setting("tune", "l-bfgs", model_type, options.structure, likely=True))
    except UsageError:
        if t.likely is None:
            return ()
        raise
    return asked


def _likely_phase(folds: list[Fold], state: _PathState, thresholds: Sequence[float],
                  options: TrainOptions, model_type: str, *, jobs: int, threads: int,
                  on_point: Callable[[PointResult], None]) -> None:
    """Score each threshold's likely features at the best observed strength.

    Every fold finds its likely features as ``train --likely-features`` does
    (:meth:`Fold.corpus_for`) and continues from its weights at that point,
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


def _converge(corpus: Corpus, options: TrainOptions, kind: tuple[str, Structure],
              state: _PathState, result: TuneResult, progress: Progress) -> np.ndarray:
    """The ``-d`` mode's model: the best point's weights (stopped by --path-stopeps) trained
    on to the final stopping rule (-e), so that the model is as converged as ``info`` says.
    Ctrl-C keeps the weights reached."""
    stop = threading.Event()

    errors = TrainingErrors(corpus.data, corpus, kind[0], kind[1])

    def hook(info: Iteration) -> str | None:
        result.final_log.append(log_row(info, *errors.rates(info), None))
        return INTERRUPTED if stop.is_set() else None

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
    model = Model(labels=corpus.labels, patterns=patterns,
                  n_token_columns=corpus.n_token_columns, featurizer=corpus.featurizer,
                  space=corpus.space, weights=x, info=info, model_type=model_type)
    model.structure = structure  # its save() marks the file
    return model


def _final_training(patterns: list[Pattern], sequences: list[Sentence], options: TrainOptions,
                    state: _PathState, fold: Fold, model_type: str, warm: bool,
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
        init.structure = fold.structure  # the final training continues the same structure
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
