"""Latent-dynamic CRFs on CoNLL-2000 chunking: time per iteration and test F1.

    python scripts/latent_chunking.py timing [--iterations 5] [--rounds 2]
    python scripts/latent_chunking.py accuracy --latent 2 [--maxiter 300] [-2 RHO2]
        [--start successors|random]
    python scripts/latent_chunking.py accuracy --order 2 [--patterns FILE]
    python scripts/latent_chunking.py full --latent 3 --iterations N [--patterns FILE]
    python scripts/latent_chunking.py states --model latent3.model

``timing`` trains first order, ``--latent 2`` and ``--latent 3`` on the full training
set with patterns/chunking.pat, alternating, and prints each one's median seconds per
iteration (from the progress lines) and its ratio to first order's, beside K^2.
``accuracy`` holds out the last 10% of train.txt as a development set, trains on the rest
keeping the weights of the best development F1 (the only choice made, on training data),
labels test.txt and prints crfkit eval's summary line. ``--latent 1`` gives first order,
``--order 2`` second order (no hidden states) on the same split and pattern file.
``full`` then trains on the whole of train.txt for the iterations ``accuracy`` chose (its
best development iteration, ``--iterations``), labels test.txt and prints the summary line.
``states`` shows how a trained model uses each label's hidden states: the share of the
label's unigram weight mass (sum of |w|) each state carries. States that stayed near the
seeded start carry little: a label whose top state carries nearly all has, in effect, one.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "conll2000"
PATTERNS = Path(__file__).resolve().parents[1] / "patterns"
ITERATION = re.compile(r"^\s*\[\s*(\d+)\].*time=\s*([\d.]+)s", re.M)


def crfkit(*args: str, log: Path | None = None) -> str:
    """Run a crfkit command; its output (also written to ``log`` as it comes, to follow a
    long training)."""
    run = subprocess.Popen(["crfkit", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    lines = []
    with open(log or "/dev/null", "w") as follow:
        for line in run.stdout:
            lines.append(line)
            follow.write(line)
            follow.flush()
    if run.wait():
        sys.exit("".join(lines[-3:]).strip())
    return "".join(lines)


def per_iteration(log: str) -> float:
    """The median time between consecutive iterations (the first, which compiles, left out)."""
    times = [float(t) for _, t in ITERATION.findall(log)]
    return statistics.median(b - a for a, b in zip(times[1:], times[2:], strict=False))


def timing(args: argparse.Namespace, work: Path) -> None:
    seen: dict[int, list[float]] = {1: [], 2: [], 3: []}
    for _ in range(args.rounds):
        for K in seen:
            log = crfkit("train", "-p", str(PATTERNS / args.patterns), "-i",
                         str(args.iterations), "--latent", str(K), str(DATA / "train.txt"),
                         str(work / f"t{K}.model"))
            seen[K].append(per_iteration(log))
            print(f"K={K}: {seen[K][-1]:.2f} s/iteration", flush=True)
    base = statistics.median(seen[1])
    for K, times in seen.items():
        t = statistics.median(times)
        print(f"K={K}: median {t:.2f} s/iteration, {t / base:.2f} x first order "
              f"(K^2 = {K * K}, bar 1.2 K^2 = {1.2 * K * K:.1f})")


def _structure(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The model's short name and its structure's training options."""
    if args.order > 1:
        return f"order{args.order}", ["--order", str(args.order)]
    return f"latent{args.latent}", ["--latent", str(args.latent), "--latent-start", args.start,
                                     "--latent-seed", str(args.seed)]


def _test_f1(args: argparse.Namespace, model: Path, out: Path) -> str:
    """crfkit eval's summary line of ``model`` on test.txt."""
    decode = ["--latent-decode", args.decode] if args.latent > 1 and args.order == 1 else []
    crfkit("label", "-m", str(model), *decode, str(DATA / "test.txt"), str(out))
    return crfkit("eval", str(out)).splitlines()[1]


def accuracy(args: argparse.Namespace, work: Path) -> None:
    blocks = (DATA / "train.txt").read_text().strip("\n").split("\n\n")
    cut = len(blocks) * 9 // 10
    train, devel = work / "train90.txt", work / "devel10.txt"
    train.write_text("\n\n".join(blocks[:cut]) + "\n\n")
    devel.write_text("\n\n".join(blocks[cut:]) + "\n\n")
    name, structure = _structure(args)
    model = work / f"{name}.model"
    log = crfkit("train", "-p", str(PATTERNS / args.patterns), *structure, "-2", str(args.rho2),
                 "-i", str(args.maxiter), "-d", str(devel), "--keep-best-devel", str(train),
                 str(model), log=work / f"{name}.log")
    print("\n".join(line for line in log.splitlines() if line.startswith("*")))
    print(_test_f1(args, model, work / "test.out"))


def full(args: argparse.Namespace, work: Path) -> None:
    name, structure = _structure(args)
    model = work / f"{name}-full.model"
    log = crfkit("train", "-p", str(PATTERNS / args.patterns), *structure, "-2", str(args.rho2),
                 "-i", str(args.iterations), str(DATA / "train.txt"), str(model),
                 log=work / f"{name}-full.log")
    print("\n".join(line for line in log.splitlines() if line.startswith("*")))
    print(_test_f1(args, model, work / "test-full.out"))


def states(args: argparse.Namespace) -> None:
    import numpy as np

    from crfkit.model.model import Model

    model = Model.load(args.model)
    space = model.space
    K = getattr(space, "K", 1)
    n_u = len(space.u_lab)
    mass = np.bincount(space.u_lab, weights=np.abs(model.weights[:n_u]),
                       minlength=space.n_labels).reshape(len(model.labels), K)
    share = mass / np.maximum(mass.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    for label, row in zip(model.labels, share, strict=True):
        print(f"{label:10s} " + " ".join(f"{x:5.2f}" for x in row))
    top = share.max(axis=1)
    print(f"top state's share: median {np.median(top):.2f}; labels whose top state carries "
          f">= 0.7: {int((top >= 0.7).sum())} of {len(top)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("timing", "accuracy", "full", "states"))
    parser.add_argument("--model", help="states: a model trained with --latent K")
    parser.add_argument("--patterns", default="chunking.pat")
    parser.add_argument("--iterations", type=int, default=5,
                        help="timing: iterations per run; full: the iterations to train")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latent", type=int, default=2)
    parser.add_argument("--order", type=int, default=1, choices=(1, 2))
    parser.add_argument("--start", choices=("successors", "random"), default="successors",
                        help="--latent-start (random: with --seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-2", "--rho2", type=float, default=1.0)
    parser.add_argument("--maxiter", type=int, default=300)
    parser.add_argument("--decode", choices=("states", "labels"), default="states")
    parser.add_argument("--work", default=None, help="keep the files here (default: a "
                        "temporary directory)")
    args = parser.parse_args()
    if args.what == "states":
        states(args)
        return
    run = {"timing": timing, "accuracy": accuracy, "full": full}[args.what]
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
        run(args, Path(args.work))
        return
    with tempfile.TemporaryDirectory() as work:
        run(args, Path(work))


if __name__ == "__main__":
    main()
