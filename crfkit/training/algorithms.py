"""The training algorithms: one table (``-a list`` prints it), one runner each.

A runner gets the :class:`~crfkit.training.train_options.Problem` and reaches the
structure's objective or epochs through the interface (:mod:`crfkit.structures.base`), so
an algorithm trains every structure that provides what it calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crfkit.errors import UsageError
from crfkit.kernels.aside import compile_meanwhile
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import (
    Iteration,
    IterationHook,
    Result,
    arow,
    bcd,
    l2sgd,
    lbfgs,
    linesearch,
    mira,
    pa,
    perceptron,
    rprop,
    sgd,
)
from crfkit.training import optimiser_state
from crfkit.training.train_options import ALGORITHM_TERMS, Problem, calibration


def make_objective(problem: Problem) -> Callable[[np.ndarray, np.ndarray], float]:
    """The smooth objective (negative log-likelihood + L2) of the problem's structure and
    model type, or the one the problem brings (a cluster's)."""
    if problem.objective is not None:
        return problem.objective
    return problem.structure.objective(problem.corpus, problem.rho2,
                                       MODEL_TYPES[problem.model_type].normalisation,
                                       problem.options.structure)


def _run_lbfgs(problem: Problem, hook: IterationHook) -> Result:
    objective = make_objective(problem)
    o = problem.options
    compile_meanwhile(lbfgs.kernels_ahead(o.rho1))  # on a first run (crfkit.kernels.aside)
    result = lbfgs.minimize(_clipped(objective, o.clip), problem.corpus.x0, l1=o.rho1,
                            history=o.history, maxiter=o.maxiter, stop_eps=o.stopeps,
                            stop_window=o.stopwin, l1_gtol=o.l1_gtol,
                            on_iteration=_with_errors(hook, objective),
                            max_linesearch=o.max_linesearch or (
                                lbfgs.MAX_LINESEARCH if o.linesearch is None
                                else linesearch.DEFAULT_MAX_TRIALS),
                            linesearch=o.linesearch and linesearch.canonical(o.linesearch),
                            state=_restored(problem),
                            keep_state=problem.options.save_state is not None)
    problem.notes.extend(problem.structure.notes(objective))
    return _saved(problem, result)


def _run_rprop(problem: Problem, hook: IterationHook) -> Result:
    objective = make_objective(problem)
    o = problem.options
    result = rprop.minimize(_clipped(objective, o.clip), problem.corpus.x0, variant=o.algo,
                            l1=o.rho1, cutoff=o.rprop_cutoff,
                            steps=rprop.Steps(o.stpmin, o.stpmax, o.stpinc, o.stpdec),
                            maxiter=o.maxiter, stop_eps=o.stopeps, stop_window=o.stopwin,
                            on_iteration=_with_errors(hook, objective),
                            state=_restored(problem))
    problem.notes.extend(problem.structure.notes(objective))
    return _saved(problem, result)


def _with_errors(hook: IterationHook, objective: Callable) -> IterationHook:
    """The hook, told the training errors the objective counted during its evaluation."""
    def with_errors(info: Iteration) -> str | None:
        info.token_errors = objective.token_errors  # type: ignore[attr-defined]
        info.sequence_errors = objective.sequence_errors  # type: ignore[attr-defined]
        return hook(info)

    return with_errors


def _clipped(objective: Callable[[np.ndarray, np.ndarray], float], clip: bool
             ) -> Callable[[np.ndarray, np.ndarray], float]:
    """``--clip`` (Wapiti's): the gradient set to 0 where the weight is 0, so a weight at zero
    stays there; the L2 term's gradient is 0 there too, so it is the whole gradient."""
    if not clip:
        return objective

    def clipped(x: np.ndarray, g: np.ndarray) -> float:
        f = objective(x, g)
        g[x == 0.0] = 0.0
        return f

    return clipped


def _restored(problem: Problem) -> dict | None:
    path = problem.options.restore_state
    return None if path is None else optimiser_state.load(path, problem)


def _saved(problem: Problem, result: Result) -> Result:
    if problem.options.save_state is not None and result.state is not None:
        optimiser_state.save(problem.options.save_state, result.state, problem)
    result.state = None  # the history's memory goes with it
    return result


def _run_sgd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("sgd", c)
    if o.eta0 is None:  # calibrated here, so that the model records the rate it trained with
        o.eta0 = sgd.calibrate(epochs, c.x0, c.data.n_seqs, o.rho1, o.alpha, o.seed)
    return sgd.minimize(epochs, c.x0, c.data.n_seqs, rho1=o.rho1,
                        eta0=o.eta0, alpha=o.alpha, maxiter=o.maxiter, seed=o.seed,
                        stop_eps=o.stopeps, stop_window=o.stopwin, on_iteration=hook)


def _run_perceptron(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)
    return perceptron.minimize(epochs.ap, c.x0, c.data.n_seqs, maxiter=o.maxiter or 100,
                               seed=o.seed, stop_eps=o.stopeps, on_iteration=hook,
                               drawn=o.rand_drawn)


def _run_l2sgd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)
    return l2sgd.minimize(epochs.l2sgd, c.x0, c.data.n_seqs, rho2=problem.rho2,
                          maxiter=o.maxiter or 1000, seed=o.seed, stop_eps=o.stopeps,
                          stop_window=o.stopwin, on_iteration=hook,
                          calibration=calibration(o), drawn=o.rand_drawn)


def _run_pa(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)

    def epoch(W: np.ndarray, U: np.ndarray, order: np.ndarray, seen: int):
        return epochs.pa(W, U, order, seen, o.pa_type, o.pa_c, o.error_sensitive)

    return _crfsuite_online(pa.minimize, epoch, problem, hook, averaging=o.averaging)


def _crfsuite_online(minimize: Callable[..., Result], epoch: Callable, problem: Problem,
                     hook: IterationHook, **settings: object) -> Result:
    """The run CRFsuite's pa and arow share: 100 epochs by default, its shuffle, its stop."""
    o, c = problem.options, problem.corpus
    return minimize(epoch, c.x0, c.data.n_seqs, maxiter=o.maxiter or 100, seed=o.seed,
                    stop_eps=o.stopeps, on_iteration=hook, drawn=o.rand_drawn, **settings)


def _run_arow(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)

    def epoch(W: np.ndarray, S: np.ndarray, order: np.ndarray):
        return epochs.arow(W, S, order, o.gamma)

    return _crfsuite_online(arow.minimize, epoch, problem, hook, variance=o.variance)


def _run_mira(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("mira", c)
    return mira.minimize(epochs.epoch, c.x0, c.data.n_seqs, C=o.mira_c,
                         shrinking_size=o.shrinking_size, maxiter=o.maxiter, on_iteration=hook)


def _run_bcd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    descent = problem.structure.coordinate_blocks(c)
    if descent is None or problem.objective is not None:
        raise UsageError(f"-a bcd trains a linear chain here, not a {problem.structure.title}")
    return bcd.minimize(descent, make_objective(problem), c.x0, rho1=o.rho1, rho2=problem.rho2,
                        kappa=o.kappa, maxiter=o.maxiter, stop_eps=o.stopeps,
                        stop_window=o.stopwin, on_iteration=hook)


@dataclass(frozen=True)
class Algorithm:
    run: Callable[[Problem, IterationHook], Result]
    help: str
    types: tuple[str, ...]  # what it trains and which penalties it has: its Terms
    l1: bool
    l2: bool


def _algorithms(helps: dict[str, tuple[Callable[[Problem, IterationHook], Result], str]]
                ) -> dict[str, Algorithm]:
    """The runners and their help, with the terms TrainOptions checks them by."""
    terms = ALGORITHM_TERMS
    return {name: Algorithm(run, text, terms[name].types, terms[name].l1, terms[name].l2)
            for name, (run, text) in helps.items()}


ALGORITHMS: dict[str, Algorithm] = _algorithms({
    "l-bfgs": (_run_lbfgs, "quasi-Newton on the whole corpus (default); becomes OWL-QN when "
               "-1/--rho1 > 0, so L1 weights reach exact zeros"),
    "sgd-l1": (_run_sgd, "stochastic gradient, one sequence at a time, with Tsuruoka's "
               "cumulative L1 penalty (-1 0.3 by default); --eta0/--alpha set the decaying "
               "rate (eta0 calibrated on a sample unless given), --seed the order; stops when "
               "the last -o epochs lowered the objective by less than -e of its fall since the "
               "first; -i counts epochs"),
    "ap": (_run_perceptron, "averaged perceptron (CRFsuite's ap): Viterbi on each sequence, "
           "update when wrong, average the weights; no regularisation; -i counts epochs "
           "(default 100), -e stops when the mean ratio of wrong labels per sequence falls "
           "below it (default 0: never)"),
    "l2sgd": (_run_l2sgd, "stochastic gradient with an L2 penalty (CRFsuite's l2sgd): rate "
              "1/(lam (t0 + t)), eta0 calibrated on a sample; -i counts epochs (default 1000)"),
    "pa": (_run_pa, "passive-aggressive (CRFsuite's pa): Viterbi, then the smallest step that "
           "scores the gold path above; --pa-type, --pa-c; -i counts epochs (default 100), -e "
           "stops when the mean loss falls below it (default 0: never)"),
    "arow": (_run_arow, "adaptive regularisation of weight vectors (CRFsuite's arow): a variance "
             "per weight; --variance, --gamma; -i counts epochs (default 100), -e stops when "
             "the mean loss is at most it (default 0: an epoch without error)"),
    "mira": (_run_mira, "single-best MIRA (CRF++'s -a MIRA): Viterbi in file order, then the "
             "smallest step that scores the gold path above by its errors, each sequence's "
             "steps capped by --cost/--mira-c C; -H shrinking; stops after two epochs without "
             "KKT violation (-i: at most that many epochs, default no limit)"),
    **{name: (_run_rprop, text) for name, text in (
        ("rprop", "resilient propagation (Wapiti's rprop, the same as rprop+): a step per "
         "weight that grows while its gradient keeps its sign and shrinks when it flips "
         "(--stpmin/--stpmax/--stpinc/--stpdec), one evaluation per iteration; L1 by "
         "OWL-QN's pseudo-gradient, or --rprop-cutoff"),
        ("rprop+", "rprop with weight backtracking: a weight whose gradient flips sign "
         "goes back to its previous value"),
        ("rprop-", "rprop without weight backtracking"))},
    "bcd": (_run_bcd, "blockwise coordinate descent for the elastic net (Wapiti's bcd): one "
            "observation's weights at a time, each moved to the minimiser of a curvature "
            "bound plus -1/-2 (--kappa scales the bound), so L1 weights reach exact zeros; "
            "stops on the objective as l-bfgs"),
})


def describe(table: dict[str, str]) -> str:
    """A ``name  description`` listing (what ``-a list`` / ``-T list`` print)."""
    width = max(map(len, table))
    return "\n".join(f"{name:<{width}}  {text}" for name, text in table.items())


def algorithm_list() -> str:
    return describe({name: a.help for name, a in ALGORITHMS.items()})


def type_list() -> str:
    return describe({name: t.help for name, t in MODEL_TYPES.items()})


def structure_list() -> str:
    """The registered structures (``--structure list``), a test's toy included."""
    from crfkit.structures import structures

    return describe({c.name: c.title for c in structures()})
