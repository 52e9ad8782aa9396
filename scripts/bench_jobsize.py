"""Does the size of a job matter? Wapiti's --jobsize against crfkit's fixed blocks.

Wapiti hands its threads jobs of ``--jobsize`` sequences (64 by default), taken as
threads come free. crfkit cuts the corpus into a fixed number of blocks of about
equal token count (``config.N_BLOCKS``, 16), taken the same way
(:func:`crfkit.kernels.blocks.run_blocks`), so that the gradient's sum order, and the
model, do not depend on the thread count. This times one objective evaluation (one
L-BFGS iteration's work) on a corpus cut into blocks of several sizes, the sizes
alternated round after round so that a change of load hits all of them; the CPU
seconds of the process (both threads) are printed too, less sensitive to a loaded
machine than the wall clock.

    python scripts/bench_jobsize.py ../shared/data/conll2000/train.txt -t 2 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train")
    parser.add_argument("-p", "--patterns", default="patterns/chunking.pat")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--blocks", default="4,16,64,140,560",
                        help="numbers of blocks to time (140: Wapiti's 64 sequences a job "
                             "on CoNLL-2000's 8,936 sentences)")
    args = parser.parse_args()

    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.kernels.blocks import partition_blocks, set_thread_count
    from crfkit.kernels.objective import Objective
    from crfkit.training.corpus import encode_training

    set_thread_count(args.threads)
    corpus = encode_training(read_patterns(args.patterns), list(read_sequences(args.train)))
    lengths = corpus.data.lengths
    w = np.zeros(corpus.space.n_weights)
    g = np.empty_like(w)
    objectives = {}
    for n in map(int, args.blocks.split(",")):
        ptr = partition_blocks(lengths, n)
        objectives[n] = Objective(corpus.space, corpus.data, corpus.empirical, 1.0,
                                  block_ptr=ptr)
        objectives[n](w, g)  # compile and touch the memory once
    seconds: dict[int, list[float]] = {n: [] for n in objectives}
    cpu: dict[int, list[float]] = {n: [] for n in objectives}
    for _ in range(args.rounds):
        for n, objective in objectives.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            objective(w, g)
            seconds[n].append(time.perf_counter() - start)
            cpu[n].append(time.process_time() - start_cpu)
    n_seqs = len(lengths)
    print(f"{n_seqs} sequences, {corpus.space.n_weights} weights, -t {args.threads}, "
          f"{args.rounds} rounds")
    print("blocks  sequences/block  median s/evaluation  min    median CPU s")
    for n, times in seconds.items():
        print(f"{n:6d}  {n_seqs / n:15.0f}  {statistics.median(times):19.3f}  "
              f"{min(times):.3f}  {statistics.median(cpu[n]):12.3f}")


if __name__ == "__main__":
    main()
