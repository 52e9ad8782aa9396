"""Training, top to bottom: sequences -> features -> arrays -> optimiser -> model.

Choices are tables, Wapiti-style (``--algo list`` / ``--type list`` print them):
:data:`ALGORITHMS` (:mod:`crfkit.training.algorithms`) maps an algorithm name to its
runner and the model types it can train; :data:`crfkit.model.types.MODEL_TYPES` holds the
model types. The model structure (linear chain, second order, skip chain...) is chosen by
the registry (:func:`crfkit.structures.choose`) and seen only through its interface
(:class:`crfkit.structures.base.Structure`): this module names none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import numpy as np

from crfkit.config import N_BLOCKS
from crfkit.errors import UsageError
from crfkit.features.columns import TokenColumns, collect_columns, columns_of
from crfkit.features.patterns import Pattern
from crfkit.features.strings import StringTable
from crfkit.io.reader import Sequence
from crfkit.kernels.blocks import set_thread_count
from crfkit.model.model import Model, compact
from crfkit.model.types import DEFAULT_TYPE, MODEL_TYPES
from crfkit.optim import INTERRUPTED, IterationHook, Result
from crfkit.progress import Progress
from crfkit.structures import choose, for_label_sets, named
from crfkit.structures.base import Choice, Setting, Structure
from crfkit.training.algorithms import (
    ALGORITHMS,
    algorithm_list,
    make_objective,
    structure_list,
    type_list,
)
from crfkit.training.corpus import (
    Corpus,
    DevelSet,
    encode_devel,
    encode_training,
    model_patterns,
    split_documents,
    training_columns,
)
from crfkit.training.gold import first_label_set, set_only_warning
from crfkit.training.jitcache import announce_compile
from crfkit.training.memory import (
    Estimate,
    MemoryBudget,
    array_bytes,
    available_memory,
    check,
    estimate_training,
    format_size,
    process_memory,
    seen_costs,
)
from crfkit.training.monitor import Monitor, log_row
from crfkit.training.train_options import (
    DEFAULT_RHO2,
    Problem,
    TrainOptions,
    recorded_options,
    train_options_from,
)

__all__ = ["ALGORITHMS", "DEFAULT_RHO2", "MODEL_TYPES", "Monitor", "Problem", "TrainOptions",
           "algorithm_list", "encode_training", "fit", "log_row", "make_objective",
           "recorded_options", "structure_list", "train", "train_options_from", "type_list"]


# --- the driver ------------------------------------------------------------------------------
def train(patterns: list[Pattern] | None, sequences: Iterable[Sequence],
          options: TrainOptions | None = None, *, progress: Progress | None = None,
          source: str = "<input>", devel: Iterable[Sequence] | None = None,
          devel_source: str = "<devel>", init: Model | None = None,
          log: list[dict] | None = None) -> Model:
    """Train a model (structure, type and algorithm from ``options``) and return it.

    ``devel``: a labelled development corpus scored after every iteration;
    the returned weights are those of its best F1. ``init``: a model to
    continue from (same patterns; new labels and observations are added).
    ``patterns`` may be None with ``init`` (the model's are used). ``log``: a
    list that receives one row per iteration (:func:`log_row`), for reports.
    """
    options = options or TrainOptions()
    options.validate()
    if options.likely is not None and (devel is not None or init is not None):
        raise UsageError("--likely-features cannot be combined with -d/--devel or -m/--model")
    structure, model_type = resolve(options, init, patterns, devel=devel is not None)
    progress = progress or Progress(quiet=True)
    given_patterns, patterns = patterns, _resolve_patterns(patterns, model_type, init,
                                                           structure, progress)
    started = time.perf_counter()
    read = _read(patterns, sequences, structure, source, progress)
    columns = read if isinstance(read, TokenColumns) else columns_of(read[0], [-1])
    stand_in = for_label_sets_in(structure, columns, source, options, model_type, progress,
                                 devel=devel is not None)
    if stand_in is not structure:  # label sets: the plain crf over them, unasked
        structure = stand_in
        patterns = _resolve_patterns(given_patterns, model_type, init, structure, progress)
    announce_compile(progress, options.algo, model_type, devel is not None, structure,
                     n_tokens=columns.n_tokens)
    set_thread_count(options.nthread)
    budget = _budget(options, devel=devel is not None)
    corpus = _encode(patterns, read, options, model_type=model_type, init=init,
                     budget=budget, source=source, progress=progress, structure=structure)
    del read, columns  # the token columns' ids (16 MB on Brown) are not needed to train
    if corpus.allowed is not None:
        _name_set_only_labels(corpus, init, progress)
    space, data = corpus.space, corpus.data
    dev_set = None if devel is None else encode_devel(corpus, list(devel), devel_source)
    if dev_set is not None:
        for warning in dev_set.warnings:
            progress.warning(warning)
    if init is None:  # the keys were hashed here (an initial model's came from its file)
        corpus.featurizer.vocab.drop_keys(corpus.featurizer.n_commands)
    dense_option = ("--all-features" if options.all_features
                    else "--all-labels" if options.all_labels else None)
    estimate = _check_memory(corpus, budget, dense_option, structure)
    progress.message(
        f"* {structure.heading(model_type)}, {options.algo}: {data.n_seqs} sequences, "
        f"{data.n_tokens} tokens, "
        f"{len(corpus.labels)} labels, {len(corpus.featurizer.vocab)} observations, "
        f"{space.n_weights} features ({time.perf_counter() - started:.2f}s to encode), "
        f"about {format_size(estimate.total_bytes)} of memory at the peak")
    return fit(Problem(model_type, corpus, options, structure), patterns, progress=progress,
               dev_set=dev_set, init=init, started=started, log=log)


def resolve(options: TrainOptions, init: Model | None, patterns: list[Pattern] | None, *,
            devel: bool = False, command: str = "train") -> tuple[Structure, str]:
    """The structure (the registry's choice) and the model type of a training: ``-T``, else
    the type the structure implies (its row in MODEL_TYPES), else the initial model's, else
    crf; what either cannot train refused in one line."""
    structure = choose(Choice(options.model_type, patterns, options.structure,
                              init=None if init is None else structure_of(init).name))
    if init is None:
        model_type = options.model_type or next(
            (name for name, t in MODEL_TYPES.items() if t.structure == structure.name),
            DEFAULT_TYPE)
    elif options.model_type is not None and options.model_type != init.model_type:
        raise UsageError(f"the initial model is a {init.model_type}: it cannot continue as a "
                         f"{options.model_type} (drop -T/--type)")
    elif init.model_type not in ALGORITHMS[options.algo].types:
        raise UsageError(f"-a {options.algo} cannot train the initial model's type "
                         f"({init.model_type}); use -a l-bfgs")
    else:
        model_type = init.model_type
    if model_type not in ALGORITHMS[options.algo].types:
        raise UsageError(f"-a {options.algo} cannot train a {model_type} model (it trains "
                         f"{', '.join(ALGORITHMS[options.algo].types)}); use -a l-bfgs")
    structure.refuse(_setting(options, model_type, command, devel, init=init))
    return structure, model_type


def _setting(options: TrainOptions, model_type: str, command: str, devel: bool,
             label_sets: tuple[str, int | None] | None = None,
             init: Model | None = None) -> Setting:
    """What the structure of a training may refuse."""
    return Setting(command, options.algo, model_type, options.structure, devel=devel,
                   likely=options.likely is not None, all_features=options.all_features,
                   all_labels=options.all_labels, label_sets=label_sets, init=init)


def for_label_sets_in(structure: Structure, columns: TokenColumns, source: str,
                      options: TrainOptions, model_type: str, progress: Progress, *,
                      command: str = "train", devel: bool = False) -> Structure:
    """The structure that trains on ``columns`` (the training data, its label column last):
    the one chosen, unless the data has label sets (``?``, ``A|B``) and another trains in
    its place (the registry's :func:`~crfkit.structures.for_label_sets`, said on
    ``progress``); the one that trains them refuses what it cannot, at the first label
    set's line. A structure that cannot train from them refuses them when the corpus is
    encoded. The one decision of ``train`` and ``tune``."""
    label = columns.n_columns - 1
    first = None if label < 0 else first_label_set(columns.distinct[label],
                                                   columns.ids[label])
    stand_in = None if first is None else for_label_sets(structure)
    if stand_in is None:
        return structure
    stand_in.refuse(_setting(options, model_type, command, devel,
                             label_sets=(source, columns.line_of(first))))
    if stand_in is not structure:
        progress.message("* label sets (? and A|B) in the training data: training sums over "
                         "the labellings they allow")
    return stand_in


def structure_of(model: Model) -> Structure:
    """The structure of a loaded model (``Model.structure``; the chain before it had one)."""
    return getattr(model, "structure", None) or named("chain")


def fit(problem: Problem, patterns: list[Pattern], *, progress: Progress,
        dev_set: DevelSet | None = None, init: Model | None = None, started: float = 0.0,
        run: Callable[[Problem, IterationHook], Result] | None = None,
        log: list[dict] | None = None) -> Model:
    """Run the problem's algorithm (or ``run``) and make the model: the second half of
    :func:`train`, shared with :mod:`crfkit.dask` (whose corpus stays on the workers).
    ``log`` as for :func:`train`."""
    options, corpus, model_type = problem.options, problem.corpus, problem.model_type
    space = corpus.space
    monitor = Monitor(progress, corpus.data, model_type=model_type, corpus=corpus,
                      devel=dev_set, patience=options.devel_patience, log=log,
                      structure=problem.structure, error_window=options.error_window,
                      error_eps=options.error_eps)
    result = _optimise(problem, monitor, progress, run)
    space = corpus.space  # likely features enlarge it
    for note in problem.notes:
        progress.warning(note)
    weights = result.x
    _say_stopped(progress, result, options, time.perf_counter() - started)
    info = _info(problem, result, devel=dev_set is not None)
    if init is not None:
        info["initial_model"] = dict(init.info)
    info.update(problem.structure.training_info(corpus, options.structure))
    if monitor.best_x is not None:
        weights = _devel_outcome(monitor, options, weights, info, progress)
    model = Model(labels=corpus.labels, patterns=patterns,
                  n_token_columns=corpus.n_token_columns, featurizer=corpus.featurizer,
                  space=space, weights=weights, info=info, model_type=model_type)
    model.structure = problem.structure  # its save() marks the file
    if options.compact:
        model = compact(model)
        progress.message(f"* compacted: {model.space.n_obs} of {space.n_obs} observations, "
                         f"{model.space.n_weights} of {space.n_weights} features kept")
    return model


def _say_stopped(progress: Progress, result: Result, options: TrainOptions,
                 elapsed: float) -> None:
    if result.reason == INTERRUPTED:
        progress.message(f"* interrupted after {result.iterations} iterations: keeping the "
                         f"model trained so far")
        return
    weights = result.x
    sparsity = (f", {np.count_nonzero(weights):,} of {weights.size:,} weights non-zero"
                if options.rho1 > 0 else "")
    progress.message(f"* stopped after {result.iterations} iterations: {result.reason} "
                     f"({elapsed:.1f}s){sparsity}")


def _info(problem: Problem, result: Result, *, devel: bool) -> dict:
    """The model's ``info``: how it was trained and how training ended."""
    data = problem.corpus.data
    return {
        "algorithm": problem.options.algo,
        "options": recorded_options(problem.options, problem.model_type, devel=devel,
                                    structure=problem.structure),
        "iterations": result.iterations,
        "objective": result.f,
        "stop_reason": result.reason,
        "sequences": data.n_seqs,
        "tokens": data.n_tokens,
        "nonzero_weights": int(np.count_nonzero(result.x)),
    }


def _optimise(problem: Problem, monitor: Monitor, progress: Progress,
              run: Callable[[Problem, IterationHook], Result] | None = None) -> Result:
    """Run the algorithm, or ``run``, as the structure runs it (in two phases around the
    likely features, if asked)."""
    run = run or ALGORITHMS[problem.options.algo].run
    if problem.options.likely is None:
        return problem.structure.optimise(problem, monitor, run, progress)
    from crfkit.training.likely_features import run_with_likely_features

    return run_with_likely_features(problem, monitor, run, progress)


def _name_set_only_labels(corpus: Corpus, init: Model | None, progress: Progress) -> None:
    """Warn of the labels that only label sets name (a typo, or an annotation that names a
    label only in sets)."""
    warning = set_only_warning(corpus.labels, corpus.data.labels,
                               0 if init is None else len(init.labels))
    if warning is not None:
        progress.warning(warning)


def _read(patterns: list[Pattern], sequences: Iterable[Sequence], structure: Structure,
          source: str, progress: Progress) -> TokenColumns | tuple[list[Sequence], list[int]]:
    """The training corpus as interned columns (the common case: no row outlives its
    chunk), or its sequences and document starts for a structure that needs the rows."""
    if not structure.needs_rows and not any(p.value for p in patterns):
        progress.status("* reading, extracting and counting features")
        return collect_columns((s for s in sequences if isinstance(s, Sequence)),
                               training_columns(patterns), source=source)
    return split_documents(sequences)  # -DOCSTART- items mark documents


def _encode(patterns: list[Pattern], read: TokenColumns | tuple[list[Sequence], list[int]],
            options: TrainOptions, *, model_type: str, init: Model | None,
            budget: MemoryBudget, source: str, progress: Progress,
            structure: Structure) -> Corpus:
    """The training corpus encoded for the kernels, its rows freed (or never all held)."""
    settings = {"cutoff": options.cutoff, "source": source, "model_type": model_type,
                "init": init, "all_features": options.all_features,
                "all_labels": options.all_labels, "budget": budget, "structure": structure}
    if isinstance(read, TokenColumns):
        corpus = encode_training(patterns, read, **settings)
        structure.attach(corpus, [], [], options.structure, init, progress)  # rows gone
        return corpus
    training, starts = read
    progress.status(f"* extracting and counting features of {len(training):,} sequences")
    corpus = encode_training(patterns, training, **settings)
    structure.attach(corpus, training, starts, options.structure, init, progress)
    # The corpus's rows are no longer needed, but the string tables hold some of
    # their strings, and those few would pin most of the rows' memory pages.
    # Park the tables as single blocks while the rows are freed, then rebuild.
    tables = [table.packed() for table in corpus.featurizer.tables]
    labels = StringTable(corpus.labels).packed()
    corpus.featurizer.tables, corpus.labels = [], []
    del training
    corpus.featurizer.tables = [StringTable.unpack(t) for t in tables]
    corpus.labels = StringTable.unpack(labels).strings
    return corpus


def _devel_outcome(monitor: Monitor, options: TrainOptions, weights: np.ndarray, info: dict,
                   progress: Progress) -> np.ndarray:
    """Record the last and best development F1, say which weights are kept, return them."""
    info["devel_best"] = {"iteration": monitor.best_iteration, "f1": monitor.best_f1}
    info["devel_last"] = {"iteration": monitor.last_iteration, "f1": monitor.last_f1}
    keep_best = options.keep_best_devel or options.devel_patience > 0
    if keep_best:
        weights = monitor.best_x
        info["nonzero_weights"] = int(np.count_nonzero(weights))
    kept = monitor.best_iteration if keep_best else monitor.last_iteration
    progress.message(f"* development F1 {monitor.last_f1:.2f} at the last iteration "
                     f"({monitor.last_iteration}), best {monitor.best_f1:.2f} at iteration "
                     f"{monitor.best_iteration}: keeping the weights of iteration {kept}")
    return weights


def _budget(options: TrainOptions, *, devel: bool = False) -> MemoryBudget:
    """The memory limit, and what the algorithm allocates per weight (memory.py).

    l-bfgs: 2 x (history + 1) rows for its pairs, x and g (optim.lbfgs._History), the
    direction (and the pseudo-gradient with L1), the exponentiated weights
    (Objective.factors), and a gradient row per thread; the returned weights take the
    direction's memory, unless the optimiser's state is saved (a copy then);
    rprop: x, x', the steps, g, g', the exponentiated weights and the returned ones;
    sgd-l1 and ap three vectors each. A development set adds the best weights and their next copy.
    Call after the thread count is set, before the corpus is read.
    """
    import numba

    limit = options.max_memory if options.max_memory is not None else available_memory()
    if options.algo == "l-bfgs":
        vectors = (4 + 2 * options.history + (1 if options.rho1 > 0 else 0)
                   + (1 if options.save_state is not None else 0))
        rows = min(numba.get_num_threads(), N_BLOCKS)
    elif options.algo.startswith("rprop"):  # x, its previous value, steps, g, previous g
        vectors, rows = 7, min(numba.get_num_threads(), N_BLOCKS)
    elif options.algo == "bcd":  # x, its kept copy, g, the factors, the returned weights
        vectors, rows = 5, min(numba.get_num_threads(), N_BLOCKS)
    else:
        vectors, rows = 3, 0
    return MemoryBudget(limit, vectors + (2 if devel else 0), rows, process_memory()[1])


def _check_memory(corpus: Corpus, budget: MemoryBudget, dense_option: str | None,
                  structure: Structure) -> Estimate:
    """Refuse, before the optimiser allocates, if training would exceed the limit.

    Runs on the exact feature space (the combinations seen, or those
    ``dense_option`` asked for), once the corpus rows are freed; the structure adds
    its features and buffers (:meth:`Structure.memory`).
    """
    f = corpus.featurizer
    part = structure.memory(corpus, budget.vectors, budget.gradient_rows)
    costs = seen_costs(f.patterns, f.listed, f.vocab.pattern, corpus.space,
                       part.per_observation) + part.costs
    held = array_bytes(corpus.data, corpus.space, f.vocab, corpus)
    estimate = estimate_training(costs, len(corpus.labels), corpus.space.has_trans, budget,
                                 data_bytes=held)
    estimate.total_bytes += part.extra_bytes
    check(estimate, budget.limit, dense_option=dense_option, n_labels=len(corpus.labels))
    return estimate


def _resolve_patterns(patterns: list[Pattern] | None, model_type: str, init: Model | None,
                      structure: Structure, progress: Progress | None = None) -> list[Pattern]:
    if patterns is None:
        if init is None:
            raise UsageError("no patterns: give a pattern file (-p) or an initial model (-m)")
        return init.patterns
    patterns = model_patterns(structure.patterns(patterns, progress), model_type)
    if init is not None and [p.text for p in patterns] != [p.text for p in init.patterns]:
        raise UsageError("the pattern file differs from the initial model's patterns "
                         "(omit -p to use the model's)")
    if init is not None and [p.regex_mode for p in patterns] != \
            [p.regex_mode for p in init.patterns]:
        raise UsageError(f"the initial model's regexes use the {_mode_of(init.patterns)} "
                         f"regex mode: give --regex {_mode_of(init.patterns)} (or omit -p)")
    return patterns


def _mode_of(patterns: list[Pattern]) -> str:
    return "wapiti" if any(p.regex_mode == "wapiti" for p in patterns) else "crfkit"
