"""scripts/bench_bcd.py: the objective of a Wapiti model file, against brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np

from tests.helpers import load_script

bench_bcd = load_script("bench_bcd")

LABELS = ["X", "Y"]
CORPUS = [[("a", "X"), ("b", "Y")], [("b", "Y"), ("a", "X"), ("a", "Y")]]
# Wapiti's observation strings: the previous token (padding spelt "_x-1"), the token, "b"
OBSERVATIONS = ["u:p=_x-1", "u:p=a", "u:p=b", "u:c=a", "u:c=b", "b"]


def wapiti_file(weights: np.ndarray) -> bytes:
    def netstring(s: str) -> str:
        return f"{len(s.encode())}:{s},\n"
    out = f"#mdl#2#{len(weights)}\n#rdr#3/0/0\n"
    out += "".join(netstring(p) for p in ["u:p=%x[-1,0]", "u:c=%x[0,0]", "b"])
    out += f"#qrk#{len(LABELS)}\n" + "".join(netstring(s) for s in LABELS)
    out += f"#qrk#{len(OBSERVATIONS)}\n" + "".join(netstring(s) for s in OBSERVATIONS)
    out += "".join(f"{i}={float(v).hex()}\n" for i, v in enumerate(weights))
    return out.encode()


def brute_force_objective(weights: np.ndarray, rho1: float, rho2: float) -> float:
    """-log-likelihood by enumerating every path on Wapiti's strings, plus the penalty."""
    L = len(LABELS)
    unigram = {s: weights[k * L:(k + 1) * L] for k, s in enumerate(OBSERVATIONS[:-1])}
    bigram = weights[(len(OBSERVATIONS) - 1) * L:].reshape(L, L)

    def score(tokens: list[str], path: tuple[int, ...]) -> float:
        total = 0.0
        for i, y in enumerate(path):
            previous = tokens[i - 1] if i else "_x-1"
            total += unigram[f"u:p={previous}"][y] + unigram[f"u:c={tokens[i]}"][y]
            total += bigram[path[i - 1], y] if i else 0.0
        return total

    loss = 0.0
    for sequence in CORPUS:
        tokens = [t for t, _ in sequence]
        gold = tuple(LABELS.index(y) for _, y in sequence)
        scores = [score(tokens, p) for p in itertools.product(range(L), repeat=len(tokens))]
        loss += np.logaddexp.reduce(scores) - score(tokens, gold)
    return loss + rho1 * np.abs(weights).sum() + rho2 / 2 * np.dot(weights, weights)


def test_wapiti_model_objective_counts_each_padding_weight_once(tmp_path, capsys):
    # crfkit reads "_x-1" both as its padding and as that literal token: the penalty must
    # still count the file's weights, once each
    weights = np.random.default_rng(3).normal(size=(len(OBSERVATIONS) - 1) * 2 + 4)
    model = tmp_path / "w.model"
    model.write_bytes(wapiti_file(weights))
    train = tmp_path / "train.txt"
    train.write_text("\n\n".join("\n".join(f"{t}\t{y}" for t, y in s) for s in CORPUS) + "\n")
    bench_bcd.objective(str(model), "unused.pat", str(train), 0.5, 0.3)
    got = json.loads(capsys.readouterr().out)
    assert got["nonzero"] == len(weights)
    assert np.isclose(got["objective"], brute_force_objective(weights, 0.5, 0.3), rtol=1e-10)
