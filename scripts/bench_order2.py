#!/usr/bin/env python3
"""The cost of a second-order objective evaluation against a first-order one.

Usage::

    python scripts/bench_order2.py [--train FILE] [--pattern FILE] [--evaluations N]

Both objectives (the linear chain's and ``--order 2``'s, same pattern file) are built
in this process and evaluated alternately ``N`` times at the same random weights on
one thread; the figure is the fewest CPU seconds of each (its process CPU time), which
a busy machine disturbs far less than wall time or a whole training's iteration log.
Defaults: CoNLL-2000's training file beside the repository, ``patterns/chunking.pat``,
8 evaluations.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRAIN = REPO_ROOT.parent / "shared" / "data" / "conll2000" / "train.txt"


def objectives(train: Path, pattern: Path) -> dict:
    """name -> (objective, weights, gradient buffer) of the chain and of order 2."""
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.structures import named
    from crfkit.training.corpus import encode_training

    sequences = list(read_sequences(str(train)))
    patterns = read_patterns(pattern)
    built = {}
    for name in ("chain", "order2"):
        structure = named(name)
        corpus = encode_training(structure.patterns(patterns, None), sequences,
                                 structure=structure)
        objective = structure.objective(corpus, 1.0, 0, {})
        w = np.random.default_rng(0).normal(0.0, 0.1, corpus.space.n_weights)
        built[name] = (objective, w, np.empty_like(w))
        objective(w, built[name][2])  # compiles and touches the buffers
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--pattern", type=Path, default=REPO_ROOT / "patterns" / "chunking.pat")
    parser.add_argument("--evaluations", type=int, default=8)
    args = parser.parse_args()
    from crfkit.kernels.blocks import set_thread_count

    set_thread_count(1)
    built = objectives(args.train, args.pattern)
    seconds: dict[str, list[float]] = {name: [] for name in built}
    for _ in range(args.evaluations):
        for name, (objective, w, g) in built.items():
            start = time.process_time()
            objective(w, g)
            seconds[name].append(time.process_time() - start)
    for name, values in seconds.items():
        print(f"{name:7s} fewest CPU s per evaluation {min(values):.3f}")
    print(f"order 2 / chain: {min(seconds['order2']) / min(seconds['chain']):.2f}")


if __name__ == "__main__":
    main()
