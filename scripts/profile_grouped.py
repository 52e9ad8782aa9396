"""Where one evaluation of the grouped forward-backward goes, part by part, on one thread.

    python scripts/profile_grouped.py [--train FILE] [--pattern FILE] [--rounds 5]

(defaults: the Brown corpus beside the repository and ``patterns/pos.pat``). The loss
kernel is one compiled function, so its parts cannot be timed from inside: this script
compiles a driver that runs the same calls over every group of the corpus
(:func:`crfkit.kernels.grouped.grouped_block`'s loop) but stops after a given part, and
times each stopping point on one thread (the fastest of ``--rounds``, the points
alternated within each round). The differences
between consecutive points are the parts: the tokens' unigram factors, loading the
group's slots, the forward pass, the backward pass, the label-pair sums, unloading the
slots, the unigram expectations, and the error counts. For the three label-pair passes
it prints the floating-point work (2 x tokens x the padded labels squared, each) and its
rate. Then the whole objective on one thread, for what lies outside the kernel.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.features.patterns import read_patterns
from crfkit.io.reader import read_sequences
from crfkit.kernels import grouped
from crfkit.kernels.gradient import posterior_errors, unigram_expectations
from crfkit.kernels.lattice import longest_sequence, unigram_factors
from crfkit.kernels.objective import Objective
from crfkit.training.train import encode_training

ROOT = Path(__file__).resolve().parents[1]
BROWN = ROOT / ".." / "shared" / "data" / "brown" / "train.txt"
PARTS = ("unigram factors", "load slots", "forward", "backward", "label-pair sums",
         "unload slots", "unigram expectations", "error counts")
PAIR_PASSES = {"forward", "backward", "label-pair sums"}


@njit(**{**JIT, "cache": False})
def run_parts(last, space, data, L, s0, s1, exp_trans, expW, expWd, Gd, G):
    """grouped_block's work for sequences s0..s1-1, up to part ``last`` (index in PARTS)."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    u_ptr, u_lab, trans_offset = space[0], space[1], space[6]
    Tmax = longest_sequence(seq_ptr, s0, s1)
    gw = grouped.group_work(Tmax, L, exp_trans)
    expu, alpha, beta = np.empty((Tmax, L)), np.empty((Tmax, L)), np.empty((Tmax, L))
    errors = 0
    for w0 in range(s0, s1, grouped.WINDOW):
        order = grouped.by_length(seq_ptr, w0, min(w0 + grouped.WINDOW, s1))
        for g0 in range(0, order.size, grouped.GROUP):
            seqs = order[g0:g0 + grouped.GROUP]
            n = seqs.size
            Tg = seq_ptr[seqs[n - 1] + 1] - seq_ptr[seqs[n - 1]]
            for k in range(n):
                t0, T = seq_ptr[seqs[k]], seq_ptr[seqs[k] + 1] - seq_ptr[seqs[k]]
                unigram_factors(expW, tok_ptr, tok_obs, u_ptr, u_lab, t0, T, expu, expWd)
                if last >= 1:
                    grouped.load_slot(gw, k, expu, T, Tg, L)
            if last >= 2:
                grouped.group_forward(gw, n, Tg, L)
            if last >= 3:
                grouped.group_backward(gw, n, Tg, L)
            if last >= 4:
                grouped.group_pair_expectations(G, trans_offset, gw, n, L)
            for k in range(n if last >= 5 else 0):
                t0, T = seq_ptr[seqs[k]], seq_ptr[seqs[k] + 1] - seq_ptr[seqs[k]]
                grouped.unload_slot(gw, k, alpha, beta, L)
                if last >= 6:
                    unigram_expectations(G, tok_ptr, tok_obs, None, u_ptr, u_lab, t0, T, L,
                                         alpha, beta, Gd)
                if last >= 7:
                    errors += posterior_errors(alpha, labels, t0, T)
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, default=BROWN)
    parser.add_argument("--pattern", type=Path, default=ROOT / "patterns" / "pos.pat")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    numba.set_num_threads(1)
    corpus = encode_training(read_patterns(args.pattern), list(read_sequences(args.train)))
    space, data = corpus.space, corpus.data
    objective = Objective(space, data, corpus.empirical, 1.0)
    w = np.random.default_rng(0).normal(scale=0.3, size=space.n_weights)
    _, exp_trans, _, _, _, expW, expWd = objective.shared(w)
    if len(expW) == 0:
        sys.exit("the weights are too large for the factored scores")
    L, n_seqs = space.n_labels, data.n_seqs
    Gd, G = np.zeros((objective.n_dense, L)), np.zeros(space.n_weights)
    arrays = (objective.space_arrays, objective.data_arrays, L)
    flops = 2.0 * data.n_tokens * grouped.padded(L) ** 2
    print(f"{args.train.name}: {n_seqs} sequences, {data.n_tokens} tokens, {L} labels; "
          f"one thread", file=sys.stderr)
    run_parts(len(PARTS) - 1, *arrays, 0, min(n_seqs, 50), exp_trans, expW, expWd, Gd, G)
    best = np.full(len(PARTS), np.inf)
    for _ in range(args.rounds):  # the stopping points alternated: the machine drifts
        for last in range(len(PARTS)):
            start = time.perf_counter()
            run_parts(last, *arrays, 0, n_seqs, exp_trans, expW, expWd, Gd, G)
            best[last] = min(best[last], time.perf_counter() - start)
    before = 0.0
    for part, upto in zip(PARTS, best, strict=True):
        rate = (f"   {flops / 1e9:.1f} GFLOP, {flops / 1e9 / (upto - before):.1f} GFLOP/s"
                if part in PAIR_PASSES else "")
        print(f"{part:22s} {upto - before:7.3f} s{rate}", file=sys.stderr)
        before = upto
    g = np.empty_like(w)
    objective(w, g)
    best = np.inf
    for _ in range(args.rounds):
        start = time.perf_counter()
        objective(w, g)
        best = min(best, time.perf_counter() - start)
    print(f"{'kernel parts in all':22s} {before:7.3f} s\n{'the whole objective':22s} "
          f"{best:7.3f} s (one thread)", file=sys.stderr)


if __name__ == "__main__":
    main()
