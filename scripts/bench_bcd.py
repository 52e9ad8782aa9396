"""Blockwise coordinate descent: crfkit's ``-a bcd`` against Wapiti's, and ``--sparse``.

Runs a training command and, at each progress line it prints, notes the process's CPU
seconds (user + system, from /proc: wall time means little on a shared machine) and wall
time; prints one JSON line per iteration. Then, for a Wapiti model, the elastic-net
objective of its weights on crfkit's encoding of the same corpus and features
(``--objective``), so the two tools' results are compared on one scale::

    python scripts/bench_bcd.py run -- wapiti train -a bcd -i 3 -p PAT TRAIN OUT
    python scripts/bench_bcd.py run -- crfkit train -a bcd --all-features ... TRAIN OUT
    python scripts/bench_bcd.py objective --wapiti OUT -p PAT -1 0.5 -2 0.0001 TRAIN

Both tools minimise ``-LL + rho1 |w|_1 + rho2/2 |w|^2`` (``scripts/bench_peers.py``);
Wapiti keeps every observation x label (pair), which crfkit does with ``--all-features``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

PROGRESS = re.compile(r"^\s*\[\s*(\d+)\]\s*obj=(\S+)")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its threads so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(command: list[str]) -> None:
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, bufsize=1)
    for line in proc.stderr:
        sys.stderr.write(line)
        m = PROGRESS.match(line)
        if m:
            print(json.dumps({"iteration": int(m[1]), "obj": m[2],
                              "cpu_s": round(cpu_seconds(proc.pid), 2),
                              "wall_s": round(time.perf_counter() - start, 2)}), flush=True)
    proc.wait()
    print(json.dumps({"exit": proc.returncode,
                      "wall_s": round(time.perf_counter() - start, 2)}), flush=True)


def objective(wapiti_model: str, pattern: str, train: str, rho1: float, rho2: float) -> None:
    """The objective of a Wapiti model's weights on crfkit's dense encoding of ``train``."""
    import numpy as np

    from crfkit.features.patterns import read_patterns
    from crfkit.foreign import read_model
    from crfkit.io.reader import read_sequences
    from crfkit.kernels.objective import Objective
    from crfkit.training.corpus import encode_training

    model = read_model(wapiti_model)
    sequences = list(read_sequences(train, min_columns=2))
    corpus = encode_training(model.patterns or read_patterns(pattern), sequences,
                             init=model, all_features=True)
    g = np.empty_like(corpus.x0)
    f = Objective(corpus.space, corpus.data, corpus.empirical, rho2)(corpus.x0, g)
    f += rho1 * float(np.abs(corpus.x0).sum())
    print(json.dumps({"model": wapiti_model, "objective": f,
                      "nonzero": int(np.count_nonzero(corpus.x0)),
                      "weights": int(corpus.x0.size)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("run").add_argument("command", nargs=argparse.REMAINDER)
    obj = sub.add_parser("objective")
    obj.add_argument("--wapiti", required=True)
    obj.add_argument("-p", "--pattern", required=True)
    obj.add_argument("-1", "--rho1", type=float, default=0.5)
    obj.add_argument("-2", "--rho2", type=float, default=0.0001)
    obj.add_argument("train")
    a = parser.parse_args()
    if a.what == "run":
        run([c for c in a.command if c != "--"])
    else:
        objective(a.wapiti, a.pattern, a.train, a.rho1, a.rho2)


if __name__ == "__main__":
    main()
