"""SGD-L1 and the averaged perceptron on a cluster: one epoch per block, then averaging.

*Not the sequential algorithms.* Each epoch, every block of the corpus's
fixed partition (the blocks L-BFGS sums) runs its own epoch of the
algorithm from the current weights, over its own sequences in an order
drawn from ``(seed, epoch, block)``; the new weights are the blocks'
weights averaged, each weighted by its share of the sequences, summed in
block order (McDonald et al.'s iterative parameter mixing). The perceptron
also averages each block's averaged weights, and the model is the mean of
those over the epochs. The result depends on the data, the options and the
seed, never on the number of workers. SGD's cumulative L1 penalty starts
afresh in every block-epoch, with the learning rate of the sequential
schedule at that epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from crfkit.dask import worker
from crfkit.dask.cluster import NoWorkers, Watch
from crfkit.errors import CrfkitError
from crfkit.kernels.epochs import PerceptronEpochs, SgdEpochs
from crfkit.optim import IterationHook, Result, Stop, StopRule, run_epochs, sgd
from crfkit.optim.lbfgs import l1_norm


@dataclass
class Mixed:
    """Block results mixed so far (in block order)."""

    w: np.ndarray
    avg: np.ndarray | None
    loss: float
    token_errors: int
    sequence_errors: int
    overflowed: bool


def epoch_task(part: worker.Part, w: np.ndarray, algo: str, params: dict, epoch: int,
               n_total: int) -> list[tuple]:
    """One epoch of every block of the part from ``w``; per block (share, W, average,
    loss, token errors, sequence errors, overflowed)."""
    worker.use_worker_threads()
    data, ptr = part.data, part.objective.block_ptr
    epochs = (SgdEpochs if algo == "sgd-l1" else PerceptronEpochs)(part.objective.space, data)
    results = []
    for b in range(len(ptr) - 1):
        lo, hi = int(ptr[b]), int(ptr[b + 1])
        rng = np.random.default_rng([params["seed"], epoch, part.first_block + b])
        order = (lo + rng.permutation(hi - lo)).astype(np.int64)
        W = w.copy()
        share = (hi - lo) / n_total
        if algo == "sgd-l1":
            q, state = np.zeros(W.size), np.zeros(1)
            loss, te, se, over = epochs(W, order, (epoch - 1) * (hi - lo), params["eta0"],
                                        params["alpha"], params["rho1"], q, state)
            results.append((share, W, None, loss, te, se, over))
        else:
            U = np.zeros(W.size)
            te, se = epochs(W, U, order, 0)
            avg = W - U / max(hi - lo, 1)
            results.append((share, W, avg, 0.0, te, se, False))
    return results


def mix_task(previous: Mixed | None, blocks: list[tuple]) -> Mixed:
    """Add the part's blocks, weighted by their shares, in block order."""
    for share, W, avg, loss, te, se, over in blocks:
        if previous is None:
            previous = Mixed(share * W, None if avg is None else share * avg, loss, te, se,
                             over)
            continue
        previous = Mixed(previous.w + share * W,
                         None if avg is None else previous.avg + share * avg,
                         previous.loss + loss, previous.token_errors + te,
                         previous.sequence_errors + se, previous.overflowed or over)
    return previous


def averaged_runner(client: Any, dist: Any) -> Callable[[Any, IterationHook], Result]:
    """The ``run`` of :func:`crfkit.training.train.fit` for sgd-l1 and ap on the cluster."""
    watch = Watch(client)
    n_total = dist.corpus.data.n_seqs

    def run(problem: Any, hook: IterationHook) -> Result:
        o = problem.options
        eta0 = sgd.UNCALIBRATED_ETA0 if o.eta0 is None else o.eta0
        params = {"seed": o.seed, "eta0": eta0, "alpha": o.alpha, "rho1": o.rho1}
        W = problem.corpus.x0.copy()
        model = W.copy() if o.algo == "ap" else W  # what is reported and returned
        done = [0]

        def epoch(order: np.ndarray, seen: int) -> tuple[float, int, int]:
            def step() -> Mixed:
                w_future = watch.scatter(W)
                mixed = None
                for part in dist.parts:
                    blocks = client.submit(epoch_task, part, w_future, o.algo, params,
                                           done[0] + 1, n_total, pure=False)
                    mixed = client.submit(mix_task, mixed, blocks, pure=False)
                return watch.result(mixed)

            try:
                result = dist.recovering(step)
            except NoWorkers as err:
                raise Stop(str(err)) from None
            if result.overflowed:
                raise CrfkitError("SGD diverged (the weights overflowed): use a smaller --eta0")
            W[:] = result.w
            done[0] += 1
            if o.algo == "ap":
                np.add(model, (result.avg - model) / done[0], out=model)
                return float(result.token_errors), result.token_errors, result.sequence_errors
            return (result.loss + o.rho1 * l1_norm(W), result.token_errors,
                    result.sequence_errors)

        rule = (sgd.ProgressStop if o.algo == "sgd-l1" else StopRule)(o.stopeps, o.stopwin)

        def stop(f: float) -> str | None:
            if o.algo == "ap" and f == 0:
                return "no training error (the data are separable)"
            return rule(f)

        return run_epochs(epoch, model, n_total, stop, maxiter=o.maxiter, seed=o.seed,
                          on_iteration=hook)

    return run
