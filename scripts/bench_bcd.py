"""Blockwise coordinate descent: crfkit's ``-a bcd`` against Wapiti's, and ``--sparse``.

Runs a training command and, at each progress line it prints, notes the process's CPU
seconds (user + system, from /proc: wall time means little on a shared machine) and wall
time; prints one JSON line per iteration. Then the elastic-net objective of a model's
weights (Wapiti's or crfkit's) on crfkit's encoding of the same corpus and features
(``objective``), so the two tools' results are compared on one scale (Wapiti's bcd prints
no objective)::

    python scripts/bench_bcd.py run -- wapiti train -a bcd -i 3 -p PAT TRAIN OUT
    python scripts/bench_bcd.py run -- crfkit train -a bcd --all-features ... TRAIN OUT
    python scripts/bench_bcd.py objective --model OUT -p PAT -1 0.5 -2 0.0001 TRAIN

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


def objective(model_path: str, pattern: str, train: str, rho1: float, rho2: float) -> None:
    """The elastic-net objective of a model's weights (Wapiti's or crfkit's) on ``train``.

    The negative log-likelihood comes from crfkit's kernels on its dense encoding of the
    corpus with the model's weights; the penalty from the model's own weights. A converted
    Wapiti model cannot give the penalty: Wapiti spells padding ``_x-1``, which crfkit keeps
    both as its padding and as that literal token (should the data hold it), so every
    padding weight is there twice and would be penalised twice.
    """
    import numpy as np

    from crfkit.features.patterns import read_patterns
    from crfkit.foreign import read_model
    from crfkit.io.reader import read_sequences
    from crfkit.kernels.objective import Objective
    from crfkit.training.corpus import encode_training

    model = read_model(model_path)
    sequences = list(read_sequences(train, min_columns=2))
    corpus = encode_training(model.patterns or read_patterns(pattern), sequences,
                             init=model, all_features=True)
    g = np.empty_like(corpus.x0)
    neg_log_likelihood = Objective(corpus.space, corpus.data, corpus.empirical, 0.0)(
        corpus.x0, g)
    own = wapiti_weights(model_path)
    if own is None:
        own = corpus.x0
    l1, l2 = float(np.abs(own).sum()), float(np.dot(own, own))
    print(json.dumps({"model": model_path,
                      "objective": neg_log_likelihood + rho1 * l1 + rho2 / 2 * l2,
                      "neg_log_likelihood": neg_log_likelihood, "l1": l1, "l2_squared": l2,
                      "nonzero": int(np.count_nonzero(own)),
                      "weights_in_crfkit_encoding": int(corpus.x0.size)}))


def wapiti_weights(path: str):
    """The non-zero weights a Wapiti model file lists (its last lines), None for another file."""
    import numpy as np

    with open(path, "rb") as f:
        data = f.read()
    head = re.match(rb"#mdl#(?:\d+#)?(\d+)\n", data)
    if head is None:
        return None
    n_active = int(head[1])
    lines = data.rstrip(b"\n").split(b"\n")
    weights = lines[len(lines) - n_active:] if n_active else []
    return np.array([float.fromhex(line.partition(b"=")[2].decode()) for line in weights])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("run").add_argument("command", nargs=argparse.REMAINDER)
    obj = sub.add_parser("objective")
    obj.add_argument("--model", "--wapiti", dest="model", required=True,
                     help="a Wapiti model file or a crfkit model")
    obj.add_argument("-p", "--pattern", required=True)
    obj.add_argument("-1", "--rho1", type=float, default=0.5)
    obj.add_argument("-2", "--rho2", type=float, default=0.0001)
    obj.add_argument("train")
    a = parser.parse_args()
    if a.what == "run":
        run([c for c in a.command if c != "--"])
    else:
        objective(a.model, a.pattern, a.train, a.rho1, a.rho2)


if __name__ == "__main__":
    main()
