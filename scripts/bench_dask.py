"""Where the time of a distributed L-BFGS evaluation goes, and a projection to more machines.

    python scripts/bench_dask.py [--corpus FILE] [--patterns FILE] [--workers 1 2 4]

For each worker count, a LocalCluster (one thread per worker process) holds
the corpus in parts (crfkit.dask.training) and the objective is evaluated
``--evals`` times at fixed weights. Reported per evaluation:

* bytes sent: the weights to each worker, a running sum across each part
  boundary and the sum back to the driver (8 bytes per weight each);
* broadcast: putting the weights on the workers (``scatter`` with
  ``broadcast=True``, measured on its own);
* compute: the slowest part's block rows (on the worker);
* reduce: the rest of the evaluation's wall time: the chain of sums in block
  order, its transfers, task scheduling and the result's trip back.

The projection table scales the measured components to ``--scale`` times
the corpus (CoNLL-2000 x 100 = 21M tokens) on M machines of ``--cores``
cores each: compute grows with the tokens and is split over at most
``N_BLOCKS`` (16) blocks, the unit of parallel work that keeps the model
identical to one process; the weight vector grows as ``scale ** growth``
(Heaps-like vocabulary growth, an assumption); transfers use
``--bandwidth`` and ``--latency`` per hop. Timings on a shared machine are
noisy: run it with ``nice`` and say so.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def measure(workers: int, patterns: list, corpus: str, evals: int) -> dict:
    from distributed import Client, LocalCluster

    from crfkit.dask.shards import plan_shards
    from crfkit.dask.training import ClusterObjective, distribute

    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0",
                      host="127.0.0.1", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        shards = plan_shards([corpus], max(1 << 18, Path(corpus).stat().st_size // 8))
        dist = distribute(client, patterns, shards, model_type="crf", cutoff=1)
        objective = ClusterObjective(client, dist.parts, dist.corpus.empirical, 1.0, 0,
                                     workers)
        w = 0.01 * np.random.default_rng(0).standard_normal(dist.corpus.space.n_weights)
        g = np.empty_like(w)
        objective(w, g)  # warm-up: kernels compiled or loaded on every worker
        objective.timing = type(objective.timing)()
        broadcast = []
        for _ in range(evals):
            objective(w, g)
            started = time.perf_counter()
            future = client.scatter(w, broadcast=True, hash=False)
            broadcast.append(time.perf_counter() - started)
            del future
        t = objective.timing
        total, compute = float(np.median(t.total)), float(np.median(t.compute))
        bcast = float(np.median(broadcast))
        return {"workers": workers, "parts": len(dist.parts), "n_weights": w.size,
                "tokens": dist.corpus.data.n_tokens, "bytes": t.bytes_sent[-1],
                "total": total, "compute": compute, "broadcast": bcast,
                "reduce": max(0.0, total - compute - bcast)}


def single(patterns: list, corpus: str, evals: int) -> float:
    """Seconds per evaluation of the whole corpus on one thread (no Dask)."""
    from crfkit.io.reader import read_sequences
    from crfkit.kernels.blocks import set_thread_count
    from crfkit.kernels.objective import Objective
    from crfkit.training.corpus import encode_training

    set_thread_count(1)
    c = encode_training(patterns, list(read_sequences(corpus)))
    objective = Objective(c.space, c.data, c.empirical, 1.0)
    w = 0.01 * np.random.default_rng(0).standard_normal(c.space.n_weights)
    g = np.empty_like(w)
    objective(w, g)
    times = []
    for _ in range(evals):
        started = time.perf_counter()
        objective(w, g)
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def projection(one_thread: float, n_weights: int, args: argparse.Namespace) -> list[str]:
    """Projected seconds per evaluation for ``args.scale`` x the corpus on 8..64 machines."""
    from crfkit.config import N_BLOCKS

    weights = n_weights * args.scale ** args.growth
    vector = 8 * weights / args.bandwidth
    per_block = one_thread * args.scale / N_BLOCKS
    lines = ["| machines | cores busy | compute | broadcast | reduce | iteration |",
             "|---|---|---|---|---|---|"]
    for machines in (8, 16, 32, 64):
        parts = min(machines, N_BLOCKS)
        busy = min(machines * args.cores, N_BLOCKS)
        compute = per_block * math.ceil(N_BLOCKS / busy)
        broadcast = math.ceil(math.log2(machines + 1)) * (vector + args.latency)
        reduce = parts * (vector + args.latency) + vector
        lines.append(f"| {machines} | {busy} | {compute:.2f} s | {broadcast:.2f} s | "
                     f"{reduce:.2f} s | {compute + broadcast + reduce:.2f} s |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared/data/conll2000/train.txt"))
    parser.add_argument("--patterns", default=str(ROOT / "patterns/chunking.pat"))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--evals", type=int, default=5)
    parser.add_argument("--scale", type=float, default=100.0)
    parser.add_argument("--growth", type=float, default=0.5,
                        help="weights grow as scale**growth (default 0.5)")
    parser.add_argument("--cores", type=int, default=2, help="cores per machine")
    parser.add_argument("--bandwidth", type=float, default=125e6, help="bytes/s (1 Gbit/s)")
    parser.add_argument("--latency", type=float, default=1e-3, help="seconds per hop")
    args = parser.parse_args()

    from crfkit.features.patterns import read_patterns

    patterns = read_patterns(args.patterns)
    one = single(patterns, args.corpus, args.evals)
    print(f"single process, 1 thread: {one:.3f} s per evaluation")
    print("| workers | parts | MB sent | wall | compute | broadcast | reduce |")
    print("|---|---|---|---|---|---|---|")
    n_weights = 0
    for workers in args.workers:
        r = measure(workers, patterns, args.corpus, args.evals)
        n_weights = r["n_weights"]
        print(f"| {workers} | {r['parts']} | {r['bytes'] / 1e6:.1f} | {r['total']:.3f} s | "
              f"{r['compute']:.3f} s | {r['broadcast']:.3f} s | {r['reduce']:.3f} s |",
              flush=True)
    print(f"\nprojection, corpus x {args.scale:g}, {args.cores} cores per machine, "
          f"{n_weights} x {args.scale:g}^{args.growth:g} weights, "
          f"{args.bandwidth / 1e6:g} MB/s, {args.latency * 1e3:g} ms per hop:")
    print("\n".join(projection(one, n_weights, args)))


if __name__ == "__main__":
    main()
