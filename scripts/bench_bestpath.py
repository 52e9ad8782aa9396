"""CPU time of the plain best path's two decoders, and of loading the fused one.

``python scripts/bench_bestpath.py MODEL FILE`` encodes the first ``--batches``
batches of FILE as ``crfkit label`` does (column blocks), then decodes them with
the numpy labeller (:mod:`crfkit.kernels.bestpath`) and the fused compiled kernel
(:mod:`crfkit.kernels.fusedpath`) in turn, ``--rounds`` times, and prints each
one's fastest round in CPU microseconds per token (CPU time, as the machine is
shared). It then starts fresh interpreters that import Numba and load the fused
kernel from its cache, and prints the fastest one's CPU seconds: the fixed cost
the fused kernel must repay (:data:`crfkit.labelling.label.FUSED_DECODING_BYTES`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from itertools import chain

import numpy as np

LOAD = """
import sys, time
sys.modules.setdefault("scipy.linalg.cython_blas", None)  # as crfkit's CLI does
from crfkit.model.model import Model
model = Model.load(sys.argv[1])
start = time.process_time()
from crfkit.kernels.fusedpath import load_kernel
load_kernel(model)
print(time.process_time() - start)
"""


def encoded_batches(model, path: str, limit: int) -> list:
    """The first ``limit`` batches of ``path``, encoded as the column-block labeller does."""
    from crfkit.io.columnar import read_token_blocks
    from crfkit.labelling.columnar import _block_batches, _BlockLabeller
    from crfkit.labelling.label import LabelOptions

    labeller = _BlockLabeller(model, LabelOptions(), path)
    out = []
    for batch, _ in _block_batches(iter(read_token_blocks(path))):
        if len(out) == limit or not batch:
            break
        fields = list(chain.from_iterable(block.fields for block in batch))
        lengths = np.concatenate([block.lengths for block in batch])
        out.append(labeller.encode(fields, batch[0].n_columns, lengths, 1))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("file")
    parser.add_argument("--batches", type=int, default=8, help="batches decoded [8]")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, fastest kept [5]")
    args = parser.parse_args(argv)
    from crfkit.foreign import read_model
    from crfkit.kernels.bestpath import best_paths
    from crfkit.kernels.fusedpath import fused_best_paths, load_kernel

    model = read_model(args.model)
    data = encoded_batches(model, args.file, args.batches)
    tokens = sum(d.n_tokens for d in data)
    load_kernel(model)
    decoders = {"numpy": best_paths, "fused": fused_best_paths}
    fastest = dict.fromkeys(decoders, float("inf"))
    for _ in range(args.rounds):
        for name, decode in decoders.items():
            start = time.process_time()
            for batch in data:
                decode(model, batch)
            fastest[name] = min(fastest[name], time.process_time() - start)
    print(f"{tokens:,} tokens in {len(data)} batches, fastest of {args.rounds} (CPU):")
    for name, seconds in fastest.items():
        print(f"  {name:6s} {seconds / tokens * 1e6:.3f} us/token")
    loads = [float(subprocess.run([sys.executable, "-c", LOAD, args.model], check=True,
                                  capture_output=True, text=True).stdout)
             for _ in range(args.rounds)]
    saved = (fastest["numpy"] - fastest["fused"]) / tokens
    print(f"  loading Numba and the fused kernel: {min(loads):.3f} s CPU "
          f"(repaid after {min(loads) / max(saved, 1e-12):,.0f} tokens)")


if __name__ == "__main__":
    main()
