"""Training, top to bottom: sequences -> features -> arrays -> optimiser -> model.

Choices are tables, Wapiti-style (``--algo list`` / ``--type list`` print them):

* :data:`ALGORITHMS` maps an algorithm name to its runner and the model
  types it can train;
* :data:`crfkit.model.types.MODEL_TYPES` holds the model types: their help,
  normalisation (which the objective and the decoder take) and whether the
  online trainers can train them.

The :class:`Monitor` sits between the optimiser and the user: it prints one
progress line per iteration, labels the development set (``-d``) with the
current weights and keeps the best weights seen on it. The development set
does not end training by default: chunk F1 early in L-BFGS is noisy and
plateaus long before the optimum (CoNLL-2002 Spanish NER, patterns/ner.pat:
a 10-iteration devel patience stopped at iteration 72 with test F1 74.68;
the objective's own rule runs to 401 iterations and 79.83). Nor are the
best-development weights kept by default: on the same run the best devel F1
came at iteration 149, and those weights scored 79.36 on the test set
against 79.83 for the converged ones. So by default ``-d`` only reports
(the model is the one trained without it, bit for bit);
``--keep-best-devel`` keeps the weights of the best devel F1, and
``--devel-patience N`` stops on it and keeps them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from crfkit.config import N_BLOCKS
from crfkit.errors import UsageError
from crfkit.evaluation.scoring import evaluate
from crfkit.features.columns import collect_columns
from crfkit.features.patterns import Pattern
from crfkit.features.strings import StringTable
from crfkit.io.reader import Sequence
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.blocks import set_thread_count
from crfkit.kernels.crfsuite_epochs import OnlineEpochs
from crfkit.kernels.epochs import SgdEpochs
from crfkit.kernels.objective import Objective
from crfkit.model.model import Model, compact
from crfkit.model.types import DEFAULT_TYPE, MODEL_TYPES, model_type
from crfkit.optim import (
    INTERRUPTED,
    Iteration,
    IterationHook,
    Result,
    arow,
    l2sgd,
    lbfgs,
    pa,
    perceptron,
    sgd,
)
from crfkit.optim.optimality import L1_GTOL
from crfkit.progress import Progress
from crfkit.space import Dataset
from crfkit.structures.order2.pair_decoder import decode_any
from crfkit.structures.skipchain.documents import attach_skip_edges, resolve_skip_type, skip_bytes
from crfkit.structures.skipchain.graph import SkipOptions, split_documents
from crfkit.training.corpus import (
    Corpus,
    DevelSet,
    encode_devel,
    encode_training,
    model_patterns,
    training_columns,
)
from crfkit.training.jitcache import announce_compile
from crfkit.training.memory import (
    Estimate,
    MemoryBudget,
    PatternCost,
    array_bytes,
    available_memory,
    check,
    estimate_training,
    format_size,
    process_memory,
    seen_costs,
)

__all__ = ["ALGORITHMS", "MODEL_TYPES", "TrainOptions", "encode_training", "train"]

DEFAULT_RHO2 = 1.0

# Defaults that depend on the algorithm: sgd-l1's own (crfkit.optim.sgd: an L1 term,
# and a stopping rule suited to its epochs); CRFsuite's epsilon 0 for its ap, pa and
# arow (run every epoch asked for); every other one has these.
GENERAL_DEFAULTS = {"rho1": 0.0, "stopeps": 1e-5, "stopwin": 10}
ALGORITHM_DEFAULTS = {"sgd-l1": {"rho1": sgd.DEFAULT_RHO1, "stopeps": sgd.DEFAULT_STOP_EPS,
                                 "stopwin": sgd.DEFAULT_STOP_WINDOW},
                      **{name: {"stopeps": 0.0} for name in ("ap", "pa", "arow")}}


@dataclass
class TrainOptions:
    """Training settings; defaults live here and nowhere else.

    ``rho2=None`` means the default L2 strength for algorithms that use one
    (:data:`DEFAULT_RHO2`); ``model_type=None`` means ``crf``, or the type of
    the initial model when training continues from one.
    """

    algo: str = "l-bfgs"
    model_type: str | None = None
    order: int | None = None  # label order; None: 1, or the initial model's
    likely: float | None = None  # --likely-features threshold; None: off
    likely_after: int = 20  # iterations before the likely features are added
    # rho1, stopeps, stopwin: None means the algorithm's default (ALGORITHM_DEFAULTS),
    # filled in when the options are made
    rho1: float | None = None  # type: ignore[assignment]
    rho2: float | None = None
    maxiter: int = 0
    stopeps: float | None = None  # type: ignore[assignment]
    stopwin: int | None = None  # type: ignore[assignment]
    l1_gtol: float = L1_GTOL  # with -1: also stop on the pseudo-gradient (optim/optimality.py)
    history: int = 6
    max_linesearch: int | None = None  # l-bfgs: trial steps per line search; None: its own
    cutoff: int = 1
    nthread: int = 0
    eta0: float | None = None  # sgd-l1; None: calibrated on a sample (optim.sgd.calibrate)
    alpha: float = 0.8  # sgd-l1's rate decay per epoch
    seed: int = 0
    devel_patience: int = 0  # iterations without a better devel F1 before stopping; 0: never
    keep_best_devel: bool = False  # the weights of the best devel F1, not the last ones
    compact: bool = False
    all_features: bool = False
    all_labels: bool = False  # every observation x label; label pairs as seen
    max_memory: int | None = None  # bytes; None: what the machine has available
    skip: SkipOptions = field(default_factory=SkipOptions)  # skip-chain models only
    pa_type: int = 1  # pa: 0 PA, 1 PA-I, 2 PA-II
    pa_c: float = 1.0  # pa: aggressiveness C (PA-I, PA-II)
    error_sensitive: bool = True  # pa: margin sqrt(errors) instead of 1
    averaging: bool = True  # pa: average the weights
    variance: float = 1.0  # arow: initial variance of every weight
    gamma: float = 1.0  # arow: loss / change trade-off

    def __post_init__(self) -> None:
        defaults = {**GENERAL_DEFAULTS, **ALGORITHM_DEFAULTS.get(self.algo, {})}
        for key, value in defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, value)

    def validate(self) -> None:
        self.skip.validate()
        if self.algo not in ALGORITHMS:
            raise UsageError(f"unknown algorithm {self.algo!r} (expected one of "
                             f"{', '.join(ALGORITHMS)}; '-a list' describes them)")
        if self.model_type is not None:
            model_type(self.model_type)  # one error line for an unknown type
        if not self.rho1 >= 0:
            raise UsageError(f"-1/--rho1 must be >= 0, got {self.rho1}")
        if self.rho2 is not None and not self.rho2 >= 0:
            raise UsageError(f"-2/--rho2 must be >= 0, got {self.rho2}")
        if self.maxiter < 0:
            raise UsageError(f"-i/--maxiter must be >= 0, got {self.maxiter}")
        if not self.stopeps >= 0:
            raise UsageError(f"-e/--stopeps must be >= 0, got {self.stopeps}")
        if self.stopwin < 1:
            raise UsageError(f"-o/--stopwin must be >= 1, got {self.stopwin}")
        if not self.l1_gtol >= 0:
            raise UsageError(f"--l1-gtol must be >= 0, got {self.l1_gtol}")
        if self.devel_patience < 0:
            raise UsageError(f"--devel-patience must be >= 0, got {self.devel_patience}")
        if self.cutoff < 1:
            raise UsageError(f"-f/--cutoff must be >= 1, got {self.cutoff}")
        if self.nthread < 0:
            raise UsageError(f"-t/--nthread must be >= 0, got {self.nthread}")
        if self.max_memory is not None and self.max_memory <= 0:
            raise UsageError(f"--max-memory must be > 0, got {self.max_memory}")
        if self.history < 1:
            raise UsageError(f"--history must be >= 1, got {self.history}")
        if self.max_linesearch is not None and self.max_linesearch < 1:
            raise UsageError(f"max_linesearch must be >= 1, got {self.max_linesearch}")
        if self.eta0 is not None and not (self.eta0 > 0 and np.isfinite(self.eta0)):
            raise UsageError(f"--eta0 must be > 0, got {self.eta0}")
        if not 0 < self.alpha <= 1:
            raise UsageError(f"--alpha must be in (0, 1], got {self.alpha}")
        if self.pa_type not in (0, 1, 2):
            raise UsageError(f"--pa-type must be 0, 1 or 2, got {self.pa_type}")
        for name, value in (("--pa-c", self.pa_c), ("--variance", self.variance),
                            ("--gamma", self.gamma)):
            if not (value > 0 and np.isfinite(value)):
                raise UsageError(f"{name} must be > 0, got {value}")
        if self.algo == "l2sgd" and self.rho2 is not None and not self.rho2 > 0:
            raise UsageError("-a l2sgd needs -2/--rho2 > 0")
        self._validate_extensions()
        algo = ALGORITHMS[self.algo]
        if self.model_type is not None and self.model_type not in algo.types:
            raise UsageError(f"-a {self.algo} cannot train a {self.model_type} model (it "
                             f"trains {', '.join(algo.types)}); use -a l-bfgs")
        if self.rho1 > 0 and not algo.l1:
            raise UsageError(f"-a {self.algo} has no L1 term: drop -1/--rho1")
        if self.rho2 is not None and not algo.l2:
            raise UsageError(f"-a {self.algo} has no L2 term: drop -2/--rho2")


    def _validate_extensions(self) -> None:
        """Second order (``--order``) and likely features: what they can be combined with."""
        if self.order is not None and self.order not in (1, 2):
            raise UsageError(f"--order must be 1 or 2, got {self.order}")
        if self.order == 2:
            if 2 not in MODEL_TYPES[self.model_type or DEFAULT_TYPE].orders:
                raise UsageError(f"a {self.model_type} model has no second order: --order 2 "
                                 f"trains a crf (drop -T/--type)")
            if self.algo not in ("l-bfgs", "sgd-l1"):
                raise UsageError(f"-a {self.algo} cannot train a second-order model; "
                                 f"use -a l-bfgs (with -1 for L1) or -a sgd-l1")
        if self.likely is not None:
            if not 0 < self.likely <= 1:
                raise UsageError(f"--likely-features must be in (0, 1], got {self.likely}")
            if self.likely_after < 1:
                raise UsageError(f"--likely-after must be >= 1, got {self.likely_after}")
            if self.order == 2 or self.algo != "l-bfgs" or self.all_features \
                    or self.all_labels or self.model_type not in (None, "crf"):
                raise UsageError("--likely-features trains a first-order crf with -a l-bfgs, "
                                 "without --all-features, --all-labels or --order 2")
        if self.all_features and self.all_labels:
            raise UsageError("--all-labels is part of --all-features: give one of them")


@dataclass
class Problem:
    """What an algorithm needs: the encoded corpus, its model type and the options."""

    model_type: str
    corpus: Corpus
    options: TrainOptions
    notes: list[str] = field(default_factory=list)  # warnings for the progress output
    # The smooth objective to minimise instead of the corpus's own (crfkit.dask: a cluster's)
    objective: Callable[[np.ndarray, np.ndarray], float] | None = None

    @property
    def rho2(self) -> float:
        return DEFAULT_RHO2 if self.options.rho2 is None else self.options.rho2


def make_objective(problem: Problem) -> Objective:
    """The smooth objective (negative log-likelihood + L2) of the problem's model type
    and label order (the space's ``order``)."""
    if problem.objective is not None:
        return problem.objective  # type: ignore[return-value]
    c = problem.corpus
    # A skip-chain corpus without a single edge is a linear chain: the chain's objective
    # trains the same model (bit for bit), faster.
    if MODEL_TYPES[problem.model_type].skip_edges and c.graph.n_edges:
        from crfkit.structures.skipchain.bethe import BeliefPropagation, SkipObjective

        o = problem.options.skip
        return SkipObjective(c.space, c.data, c.empirical, problem.rho2, c.graph.arrays(),
                             c.space.skip_offset,
                             BeliefPropagation(o.bp_maxiter, o.bp_tol, o.bp_damping),
                             edge_blocks=c.graph.blocks())
    if c.space.order == 2:
        from crfkit.structures.order2.pair_objective import Objective2

        return Objective2(c.space, c.data, c.empirical, problem.rho2,
                          MODEL_TYPES[problem.model_type].normalisation)
    return Objective(c.space, c.data, c.empirical, problem.rho2,
                     MODEL_TYPES[problem.model_type].normalisation, frozen=c.frozen)


# --- algorithms ------------------------------------------------------------------------------
def _run_lbfgs(problem: Problem, hook: IterationHook) -> Result:
    objective = make_objective(problem)
    o = problem.options

    def with_errors(info: Iteration) -> str | None:
        info.token_errors = objective.token_errors
        info.sequence_errors = objective.sequence_errors
        return hook(info)

    result = lbfgs.minimize(objective, problem.corpus.x0, l1=o.rho1, history=o.history,
                            maxiter=o.maxiter, stop_eps=o.stopeps, stop_window=o.stopwin,
                            l1_gtol=o.l1_gtol, on_iteration=with_errors,
                            max_linesearch=o.max_linesearch or lbfgs.MAX_LINESEARCH)
    if getattr(objective, "unconverged", 0):  # skipchain: BP ran out of rounds
        problem.notes.append(f"belief propagation did not converge in {objective.unconverged} "
                             f"documents at the last evaluation (try a larger --bp-damping "
                             f"or --bp-maxiter)")
    return result


def _run_sgd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    if c.space.order == 2:
        from crfkit.structures.order2.pair_epochs import SgdEpochs2

        epochs = SgdEpochs2(c.space, c.data)
    else:
        epochs = SgdEpochs(c.space, c.data)
    if o.eta0 is None:  # calibrated here, so that the model records the rate it trained with
        o.eta0 = sgd.calibrate(epochs, c.x0, c.data.n_seqs, o.rho1, o.alpha, o.seed)
    return sgd.minimize(epochs, c.x0, c.data.n_seqs, rho1=o.rho1,
                        eta0=o.eta0, alpha=o.alpha, maxiter=o.maxiter, seed=o.seed,
                        stop_eps=o.stopeps, stop_window=o.stopwin, on_iteration=hook)


def _run_perceptron(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = OnlineEpochs(c.space, c.data, c.frozen)
    return perceptron.minimize(epochs.ap, c.x0, c.data.n_seqs, maxiter=o.maxiter or 100,
                               seed=o.seed, stop_eps=o.stopeps, on_iteration=hook)


def _run_l2sgd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = OnlineEpochs(c.space, c.data, c.frozen)
    return l2sgd.minimize(epochs.l2sgd, c.x0, c.data.n_seqs, rho2=problem.rho2,
                          maxiter=o.maxiter or 1000, seed=o.seed, stop_eps=o.stopeps,
                          stop_window=o.stopwin, on_iteration=hook)


def _run_pa(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = OnlineEpochs(c.space, c.data, c.frozen)

    def epoch(W: np.ndarray, U: np.ndarray, order: np.ndarray, seen: int):
        return epochs.pa(W, U, order, seen, o.pa_type, o.pa_c, o.error_sensitive)

    return pa.minimize(epoch, c.x0, c.data.n_seqs, averaging=o.averaging,
                       maxiter=o.maxiter or 100, seed=o.seed, stop_eps=o.stopeps,
                       on_iteration=hook)


def _run_arow(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = OnlineEpochs(c.space, c.data, c.frozen)

    def epoch(W: np.ndarray, S: np.ndarray, order: np.ndarray):
        return epochs.arow(W, S, order, o.gamma)

    return arow.minimize(epoch, c.x0, c.data.n_seqs, variance=o.variance,
                         maxiter=o.maxiter or 100, seed=o.seed, stop_eps=o.stopeps,
                         on_iteration=hook)


@dataclass(frozen=True)
class Algorithm:
    run: Callable[[Problem, IterationHook], Result]
    types: tuple[str, ...]
    l1: bool
    l2: bool
    help: str


_ONLINE_TYPES = tuple(name for name, t in MODEL_TYPES.items() if t.online)

ALGORITHMS: dict[str, Algorithm] = {
    "l-bfgs": Algorithm(_run_lbfgs, tuple(MODEL_TYPES), True, True,
                        "quasi-Newton on the whole corpus (default); becomes OWL-QN when "
                        "-1/--rho1 > 0, so L1 weights reach exact zeros"),
    "sgd-l1": Algorithm(_run_sgd, _ONLINE_TYPES, True, False,
                        "stochastic gradient, one sequence at a time, with Tsuruoka's "
                        "cumulative L1 penalty (-1 0.3 by default); --eta0/--alpha set the "
                        "decaying rate (eta0 calibrated on a sample unless given), --seed "
                        "the order; stops when the last -o epochs lowered the objective by "
                        "less than -e of its fall since the first; -i counts epochs"),
    "ap": Algorithm(_run_perceptron, _ONLINE_TYPES, False, False,
                    "averaged perceptron (CRFsuite's ap): Viterbi on each sequence, update "
                    "when wrong, average the weights; no regularisation; -i counts epochs "
                    "(default 100), -e stops when the mean ratio of wrong labels per "
                    "sequence falls below it (default 0: never)"),
    "l2sgd": Algorithm(_run_l2sgd, _ONLINE_TYPES, False, True,
                       "stochastic gradient with an L2 penalty (CRFsuite's l2sgd): rate "
                       "1/(lam (t0 + t)), eta0 calibrated on a sample; -i counts epochs "
                       "(default 1000)"),
    "pa": Algorithm(_run_pa, _ONLINE_TYPES, False, False,
                    "passive-aggressive (CRFsuite's pa): Viterbi, then the smallest step that "
                    "scores the gold path above; --pa-type, --pa-c; -i counts epochs "
                    "(default 100), -e stops when the mean loss falls below it (default 0: "
                    "never)"),
    "arow": Algorithm(_run_arow, _ONLINE_TYPES, False, False,
                      "adaptive regularisation of weight vectors (CRFsuite's arow): a "
                      "variance per weight; --variance, --gamma; -i counts epochs "
                      "(default 100), -e stops when the mean loss is at most it (default "
                      "0: an epoch without error)"),
}


def describe(table: dict[str, str]) -> str:
    """A ``name  description`` listing (what ``-a list`` / ``-T list`` print)."""
    width = max(map(len, table))
    return "\n".join(f"{name:<{width}}  {text}" for name, text in table.items())


def algorithm_list() -> str:
    return describe({name: a.help for name, a in ALGORITHMS.items()})


def type_list() -> str:
    return describe({name: t.help for name, t in MODEL_TYPES.items()})


# --- monitoring ------------------------------------------------------------------------------
class Monitor:
    """Progress line per iteration; development-set scoring and early stopping."""

    def __init__(self, progress: Progress, data: Dataset, *, model_type: str,
                 corpus: Corpus, devel: DevelSet | None = None, patience: int = 0,
                 log: list[dict] | None = None) -> None:
        """``patience``: stop after this many iterations without a better devel F1 (0: never).

        ``log``: a list that gets one row (:func:`log_row`) per iteration, for reports.
        """
        self.progress = progress
        self.log = log
        self.n_tokens = max(1, data.n_tokens)
        self.n_seqs = max(1, data.n_seqs)
        self.model_type = model_type
        self.corpus = corpus
        self.devel = None if devel is None else devel.data
        self.patience = patience
        self.best_f1 = -1.0
        self.best_iteration = 0
        self.best_x: np.ndarray | None = None
        self.last_f1 = -1.0
        self.last_iteration = 0
        if devel is not None:
            # gold ids past the model's labels are devel labels training never saw
            self.names = np.array(devel.label_names, dtype=object)
            self.gold = _split(self.names[devel.data.labels], devel.data.seq_ptr)

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
        token_error = max(info.token_errors, 0) / self.n_tokens
        sequence_error = max(info.sequence_errors, 0) / self.n_seqs
        self.progress.iteration(info.it, info.f, token_error, sequence_error, info.seconds, extra)
        if self.log is not None:
            self.log.append(log_row(info, token_error, sequence_error,
                                    (error, f1) if self.devel is not None else None))
        return stop

    def score(self, x: np.ndarray) -> tuple[float, float]:
        """Token error (%) and chunk F1 of the development set under weights x."""
        devel = self.devel
        weights = Weights(self.corpus.space, x, MODEL_TYPES[self.model_type].normalisation)
        ids = decode_any(weights, devel).paths[:, 0]
        report = evaluate(self.gold, _split(self.names[ids], devel.seq_ptr))
        error = 100.0 * float(np.mean(ids != devel.labels)) if devel.n_tokens else 0.0
        return error, report.f1


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


def _split(tags: np.ndarray, seq_ptr: np.ndarray) -> list[list[str]]:
    return [tags[seq_ptr[s]:seq_ptr[s + 1]].tolist() for s in range(len(seq_ptr) - 1)]


# --- the driver ------------------------------------------------------------------------------
def train(patterns: list[Pattern] | None, sequences: Iterable[Sequence],
          options: TrainOptions | None = None, *, progress: Progress | None = None,
          source: str = "<input>", devel: Iterable[Sequence] | None = None,
          devel_source: str = "<devel>", init: Model | None = None,
          log: list[dict] | None = None) -> Model:
    """Train a model (type and algorithm from ``options``) and return it.

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
    model_type = _resolve_type(options, init, patterns)
    options = replace(options, order=_resolve_order(options, init))
    _check_type(options, model_type, devel=devel is not None)
    progress = progress or Progress(quiet=True)
    patterns = _resolve_patterns(patterns, model_type, init, options.order, progress)
    announce_compile(progress, options.algo, model_type, devel is not None, options.order)
    set_thread_count(options.nthread)
    budget = _budget(options, devel=devel is not None)
    started = time.perf_counter()
    corpus = _encode(patterns, sequences, options, model_type=model_type, init=init,
                     budget=budget, source=source, progress=progress)
    space, data = corpus.space, corpus.data
    dev_set = None if devel is None else encode_devel(corpus, list(devel), devel_source)
    if dev_set is not None:
        for warning in dev_set.warnings:
            progress.warning(warning)
    dense_option = ("--all-features" if options.all_features
                    else "--all-labels" if options.all_labels else None)
    estimate = _check_memory(corpus, budget, dense_option)
    progress.message(
        f"* {structure_name(model_type, space.order)}, {options.algo}: {data.n_seqs} sequences, "
        f"{data.n_tokens} tokens, "
        f"{len(corpus.labels)} labels, {len(corpus.featurizer.vocab)} observations, "
        f"{space.n_weights} features ({time.perf_counter() - started:.2f}s to encode), "
        f"about {format_size(estimate.total_bytes)} of memory at the peak")

    return fit(Problem(model_type, corpus, options), patterns, progress=progress,
               dev_set=dev_set, init=init, started=started, log=log)


def fit(problem: Problem, patterns: list[Pattern], *, progress: Progress,
        dev_set: DevelSet | None = None, init: Model | None = None, started: float = 0.0,
        run: Callable[[Problem, IterationHook], Result] | None = None,
        log: list[dict] | None = None) -> Model:
    """Run the problem's algorithm (or ``run``) and make the model: the second half of
    :func:`train`, shared with :mod:`crfkit.dask` (whose corpus stays on the workers).
    ``log`` as for :func:`train`."""
    options, corpus, model_type = problem.options, problem.corpus, problem.model_type
    space, data = corpus.space, corpus.data
    monitor = Monitor(progress, data, model_type=model_type, corpus=corpus, devel=dev_set,
                      patience=options.devel_patience, log=log)
    result = _optimise(problem, monitor, progress, run)
    space = corpus.space  # likely features enlarge it
    for note in problem.notes:
        progress.warning(note)
    weights = result.x
    elapsed = time.perf_counter() - started
    if result.reason == INTERRUPTED:
        progress.message(f"* interrupted after {result.iterations} iterations: keeping the "
                         f"model trained so far")
    else:
        sparsity = (f", {np.count_nonzero(weights):,} of {weights.size:,} weights non-zero"
                    if options.rho1 > 0 else "")
        progress.message(f"* stopped after {result.iterations} iterations: {result.reason} "
                         f"({elapsed:.1f}s){sparsity}")
    info = {
        "algorithm": options.algo,
        "options": recorded_options(options, model_type, devel=dev_set is not None),
        "iterations": result.iterations,
        "objective": result.f,
        "stop_reason": result.reason,
        "sequences": data.n_seqs,
        "tokens": data.n_tokens,
        "nonzero_weights": int(np.count_nonzero(weights)),
    }
    if init is not None:
        info["initial_model"] = dict(init.info)
    if corpus.graph is not None:
        info["skip"] = {**options.skip.as_dict(), "documents": corpus.graph.n_docs,
                        "edges": corpus.graph.n_edges}
        if corpus.graph.conditions:  # e: patterns: the observations of the blocks' tail
            info["skip"]["conditions"] = corpus.graph.conditions
    if monitor.best_x is not None:
        weights = _devel_outcome(monitor, options, weights, info, progress)
    model = Model(labels=corpus.labels, patterns=patterns,
                  n_token_columns=corpus.n_token_columns, featurizer=corpus.featurizer,
                  space=space, weights=weights, info=info, model_type=model_type)
    if options.compact:
        model = compact(model)
        progress.message(f"* compacted: {model.space.n_obs} of {space.n_obs} observations, "
                         f"{model.space.n_weights} of {space.n_weights} features kept")
    return model


def _optimise(problem: Problem, monitor: Monitor, progress: Progress,
              run: Callable[[Problem, IterationHook], Result] | None = None) -> Result:
    """Run the algorithm, or ``run`` (in two phases around the likely features, if asked)."""
    run = run or ALGORITHMS[problem.options.algo].run
    if problem.options.likely is None:
        return run(problem, monitor)
    from crfkit.training.likely_features import run_with_likely_features

    return run_with_likely_features(problem, monitor, run, progress)


def _encode(patterns: list[Pattern], sequences: Iterable[Sequence], options: TrainOptions, *,
            model_type: str, init: Model | None, budget: MemoryBudget, source: str,
            progress: Progress) -> Corpus:
    """The training corpus encoded for the kernels, its rows freed (or never all held)."""
    if not MODEL_TYPES[model_type].skip_edges and not any(p.value for p in patterns):
        # The common case reads only interned columns: no row outlives its chunk.
        progress.status("* reading, extracting and counting features")
        columns = collect_columns((s for s in sequences if isinstance(s, Sequence)),
                                  training_columns(patterns), source=source)
        return encode_training(patterns, columns, cutoff=options.cutoff, source=source,
                               order=options.order, model_type=model_type, init=init,
                               all_features=options.all_features,
                               all_labels=options.all_labels, budget=budget)
    training, starts = split_documents(sequences)  # -DOCSTART- items mark documents
    progress.status(f"* extracting and counting features of {len(training):,} sequences")
    corpus = encode_training(patterns, training, cutoff=options.cutoff, source=source,
                             order=options.order,
                             model_type=model_type, init=init,
                             all_features=options.all_features,
                             all_labels=options.all_labels, budget=budget)
    if MODEL_TYPES[model_type].skip_edges:
        graph = attach_skip_edges(corpus, training, starts, patterns, options.skip, init)
        progress.message(f"* skip edges: {graph.n_edges} in {graph.n_docs} documents "
                         f"({options.skip.mode}, at most {options.skip.cap} a document)")
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


# Options that only some algorithms read: recorded only for those.
_ALGORITHM_OPTIONS = {"rho1": ("l-bfgs", "sgd-l1"), "rho2": ("l-bfgs", "l2sgd"),
                      "history": ("l-bfgs",), "eta0": ("sgd-l1",), "alpha": ("sgd-l1",),
                      "seed": ("sgd-l1", "ap", "l2sgd", "pa", "arow"),
                      "pa_type": ("pa",), "pa_c": ("pa",), "error_sensitive": ("pa",),
                      "averaging": ("pa",), "variance": ("arow",), "gamma": ("arow",)}


def recorded_options(options: TrainOptions, model_type: str, *, devel: bool) -> dict:
    """The settings the model was trained with, defaults resolved, for ``crfkit info``.

    Nothing that depends on the machine (thread count, memory limit) is
    recorded, so the same command gives a byte-identical file with any -t.
    """
    recorded = asdict(options)
    recorded["model_type"] = model_type
    recorded["rho2"] = DEFAULT_RHO2 if options.rho2 is None else options.rho2
    unused = () if devel else ("devel_patience", "keep_best_devel")
    if not MODEL_TYPES[model_type].skip_edges:
        unused += ("skip",)
    # recorded only when used, so first-order files stay what they were before these options
    unused += ("order",) if (options.order or 1) == 1 else ()
    unused += ("likely", "likely_after") if options.likely is None else ()
    unused += ("all_labels",) if not options.all_labels else ()
    unused += ("max_linesearch",) if options.max_linesearch is None else ()
    # read by OWL-QN only (L2 and other algorithms' files stay what they were)
    unused += ("l1_gtol",) if options.rho1 == 0 or options.algo != "l-bfgs" else ()
    for key in ("nthread", "max_memory", *unused):
        del recorded[key]
    for key, algorithms in _ALGORITHM_OPTIONS.items():
        if options.algo not in algorithms:
            del recorded[key]
    return recorded


def _budget(options: TrainOptions, *, devel: bool = False) -> MemoryBudget:
    """The memory limit, and what the algorithm allocates per weight (memory.py).

    l-bfgs: 2 x (history + 1) rows for its pairs, x and g (optim.lbfgs._History), the
    direction (and the pseudo-gradient with L1), the exponentiated weights
    (Objective.factors), the returned weights, and a gradient row per thread;
    sgd-l1 and ap three vectors each. A development set adds the best weights and their next copy.
    Call after the thread count is set, before the corpus is read.
    """
    import numba

    limit = options.max_memory if options.max_memory is not None else available_memory()
    if options.algo == "l-bfgs":
        vectors = 5 + 2 * options.history + (1 if options.rho1 > 0 else 0)
        rows = min(numba.get_num_threads(), N_BLOCKS)
    else:
        vectors, rows = 3, 0
    return MemoryBudget(limit, vectors + (2 if devel else 0), rows, process_memory()[1])


def _check_memory(corpus: Corpus, budget: MemoryBudget, dense_option: str | None) -> Estimate:
    """Refuse, before the optimiser allocates, if training would exceed the limit.

    Runs on the exact feature space (the combinations seen, or those
    ``dense_option`` asked for), once the corpus rows are freed.
    """
    f = corpus.featurizer
    costs = seen_costs(f.patterns, f.listed, f.vocab.pattern, corpus.space)
    if corpus.space.order == 2 and corpus.space.has_tri:  # the label-trigram block
        owner = next(p for p in f.patterns if p.is_constant and (p.has_trigram or p.has_bigram))
        costs.append(PatternCost(owner, 1, len(corpus.space.tri)))
    held = array_bytes(corpus.data, corpus.space, f.vocab, corpus)
    estimate = estimate_training(costs, len(corpus.labels), corpus.space.has_trans, budget,
                                 data_bytes=held)
    if corpus.graph is not None:  # skip weights (a few) and BP's messages and buffers
        estimate.total_bytes += (8 * (budget.vectors + budget.gradient_rows + 1)
                                 * (corpus.space.n_weights - corpus.space.skip_offset)
                                 + skip_bytes(corpus.graph, corpus.data.seq_ptr,
                                              len(corpus.labels), max(1, budget.gradient_rows)))
    check(estimate, budget.limit, dense_option=dense_option, n_labels=len(corpus.labels))
    return estimate


def _check_type(options: TrainOptions, model_type: str, *, devel: bool) -> None:
    """Refuse what cannot train the type the options or the patterns chose."""
    if model_type not in ALGORITHMS[options.algo].types:
        raise UsageError(f"-a {options.algo} cannot train a {model_type} model (it trains "
                         f"{', '.join(ALGORITHMS[options.algo].types)}); use -a l-bfgs")
    if devel and MODEL_TYPES[model_type].skip_edges:
        raise UsageError(f"-d/--devel is not available for {model_type} models (score the "
                         f"development file with crfkit label -c | crfkit eval)")


def _resolve_type(options: TrainOptions, init: Model | None,
                  patterns: list[Pattern] | None = None) -> str:
    if init is None:
        return resolve_skip_type(options.model_type, patterns) or DEFAULT_TYPE
    if options.model_type is not None and options.model_type != init.model_type:
        raise UsageError(f"the initial model is a {init.model_type}: it cannot continue as a "
                         f"{options.model_type} (drop -T/--type)")
    if init.model_type not in ALGORITHMS[options.algo].types:
        raise UsageError(f"-a {options.algo} cannot train the initial model's type "
                         f"({init.model_type}); use -a l-bfgs")
    return init.model_type


def structure_name(model_type: str, order: int) -> str:
    """The model type for the progress header, with the label order where it has a choice."""
    return f"{model_type} order {order}" if len(MODEL_TYPES[model_type].orders) > 1 else model_type


def _resolve_order(options: TrainOptions, init: Model | None) -> int:
    """The label order: --order, else the initial model's, else 1."""
    init_order = 1 if init is None else init.space.order
    if init is not None and options.order not in (None, init_order):
        raise UsageError(f"the initial model has order {init_order}: it cannot continue with "
                         f"--order {options.order}")
    return options.order or init_order


def _resolve_patterns(patterns: list[Pattern] | None, model_type: str,
                      init: Model | None, order: int = 1,
                      progress: Progress | None = None) -> list[Pattern]:
    if patterns is None:
        if init is None:
            raise UsageError("no patterns: give a pattern file (-p) or an initial model (-m)")
        return init.patterns
    n_trigram = sum(p.has_trigram for p in patterns)
    patterns = model_patterns(patterns, model_type, order)
    if progress and n_trigram and order == 1 and not any(p.has_trigram for p in patterns):
        progress.message(f"* first order: {n_trigram} trigram pattern(s) (t) ignored "
                         f"(--order 2 uses them)")
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
