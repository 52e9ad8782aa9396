"""Feature extraction speed: pattern file + training corpus -> observation id arrays.

Times what ``crfkit train`` does before the feature space is built, stage by
stage, on one core (the counting kernels are serial): compiling the pattern
file, interning columns and applying transforms (``components``),
interning observations into the vocabulary and id matrix (``build_vocab``),
and turning that matrix into the per-token id lists the kernels read
(``token_lists``). Reading the file is timed separately (it is the reader's cost, not the
extractor's). Every run compiles the pattern regexes afresh, as a new
process does. Reports the best of ``--repeat`` runs, in tokens per second.

    python scripts/bench_features.py                      # chunking-rich.pat on CoNLL-2000
    python scripts/bench_features.py --pattern patterns/chunking.pat
"""

from __future__ import annotations

import argparse
import gc
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONLL = ROOT.parent / "shared" / "data" / "conll2000"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", default=str(CONLL / "train.txt"))
    parser.add_argument("--pattern", default=str(ROOT / "patterns" / "chunking-rich.pat"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from crfkit.features import transforms
    from crfkit.features.extract import Featurizer, token_lists
    from crfkit.features.intern import intern_rows  # noqa: F401  (loads the cached kernels)
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.training.corpus import model_patterns

    start = time.perf_counter()
    sequences = list(read_sequences(args.train))
    read_time = time.perf_counter() - start
    n_tokens = sum(len(s.rows) for s in sequences)

    def once() -> dict[str, float]:
        # Each run starts as a fresh process would: regexes are compiled again.
        for cached in (transforms._regex, transforms.dot_affix, transforms.required_char):
            cached.cache_clear()
        re.purge()
        t0 = time.perf_counter()
        patterns = model_patterns(read_patterns(args.pattern), "crf")
        t1 = time.perf_counter()
        featurizer = Featurizer(patterns)
        _, components = featurizer.components(sequences, grow=True)
        t2 = time.perf_counter()
        obs = featurizer.build_vocab(components)
        t3 = time.perf_counter()
        tok_ptr, tok_obs = token_lists(obs)
        t4 = time.perf_counter()
        assert len(tok_ptr) == n_tokens + 1
        return {"compile": t1 - t0, "components": t2 - t1, "build_vocab": t3 - t2,
                "token_lists": t4 - t3, "total": t4 - t0, "observations": len(featurizer.vocab)}

    once()  # warm-up: regex compilation caches, kernel loading, page faults
    runs = []
    for _ in range(args.repeat):
        gc.collect()
        runs.append(once())
    best = min(runs, key=lambda r: r["total"])
    print(f"{Path(args.pattern).name} on {Path(args.train).name}: {len(sequences):,} sequences, "
          f"{n_tokens:,} tokens, {best['observations']:,} observations")
    print(f"reading the file (not counted): {read_time:.3f} s")
    for stage in ("compile", "components", "build_vocab", "token_lists"):
        print(f"  {stage:<12} {best[stage]:.3f} s")
    totals = sorted(r["total"] for r in runs)
    print(f"total, best of {len(runs)}: {best['total']:.3f} s = {n_tokens / best['total']:,.0f} "
          f"tokens/s (median {totals[len(totals) // 2]:.3f} s)")


if __name__ == "__main__":
    main()
