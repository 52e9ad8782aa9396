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
from crfkit.model.types import MODEL_TYPES
from crfkit.optim import (
    Iteration,
    IterationHook,
    Result,
    arow,
    bcd,
    l2sgd,
    lbfgs,
    pa,
    perceptron,
    sgd,
)
from crfkit.training.train_options import ALGORITHM_TERMS, Problem


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

    def with_errors(info: Iteration) -> str | None:
        info.token_errors = objective.token_errors  # type: ignore[attr-defined]
        info.sequence_errors = objective.sequence_errors  # type: ignore[attr-defined]
        return hook(info)

    result = lbfgs.minimize(objective, problem.corpus.x0, l1=o.rho1, history=o.history,
                            maxiter=o.maxiter, stop_eps=o.stopeps, stop_window=o.stopwin,
                            l1_gtol=o.l1_gtol, on_iteration=with_errors,
                            max_linesearch=o.max_linesearch or lbfgs.MAX_LINESEARCH)
    problem.notes.extend(problem.structure.notes(objective))
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
                               seed=o.seed, stop_eps=o.stopeps, on_iteration=hook)


def _run_l2sgd(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)
    return l2sgd.minimize(epochs.l2sgd, c.x0, c.data.n_seqs, rho2=problem.rho2,
                          maxiter=o.maxiter or 1000, seed=o.seed, stop_eps=o.stopeps,
                          stop_window=o.stopwin, on_iteration=hook)


def _run_pa(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)

    def epoch(W: np.ndarray, U: np.ndarray, order: np.ndarray, seen: int):
        return epochs.pa(W, U, order, seen, o.pa_type, o.pa_c, o.error_sensitive)

    return pa.minimize(epoch, c.x0, c.data.n_seqs, averaging=o.averaging,
                       maxiter=o.maxiter or 100, seed=o.seed, stop_eps=o.stopeps,
                       on_iteration=hook)


def _run_arow(problem: Problem, hook: IterationHook) -> Result:
    o, c = problem.options, problem.corpus
    epochs = problem.structure.epochs("online", c)

    def epoch(W: np.ndarray, S: np.ndarray, order: np.ndarray):
        return epochs.arow(W, S, order, o.gamma)

    return arow.minimize(epoch, c.x0, c.data.n_seqs, variance=o.variance,
                         maxiter=o.maxiter or 100, seed=o.seed, stop_eps=o.stopeps,
                         on_iteration=hook)


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
