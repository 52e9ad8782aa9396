"""-a mira trains CRF++'s single-best MIRA: weights against a plain-Python transcription of
crf_learn's algorithm (Viterbi by dynamic programming, ties to the lower label as CRF++'s)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.helpers import one_error_line, run

PATTERNS = "U00:%x[0,0]\nB\n"
WORDS = ["the", "a", "dog", "cat", "runs", "sleeps", "in", "Rome"]
TAGS = {"the": "B", "a": "B", "dog": "C", "cat": "C", "runs": "D", "sleeps": "D", "in": "A",
        "Rome": "C"}


def noisy_corpus(n: int = 25, seed: int = 3) -> list[list[tuple[str, str]]]:
    """Sentences whose labels the words predict only in part, so that epochs keep erring;
    the first one shows the labels in sorted order (CRF++'s label order is sorted, crfkit's
    the order of appearance: this way the two agree, and so do Viterbi's ties)."""
    rng = np.random.default_rng(seed)
    sentences = [[("in", "A"), ("the", "B"), ("dog", "C"), ("runs", "D")]]
    for _ in range(n - 1):
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), int(rng.integers(2, 7)))]
        sentences.append([(w, TAGS[w] if rng.random() > 0.2 else "C") for w in words])
    return sentences


def phi(sentence, labels) -> Counter:
    """CRF++'s feature counts of a labelling: U00:word x label, and label pairs."""
    counts = Counter(("U00:" + w, None, y) for (w, _), y in zip(sentence, labels, strict=True))
    counts.update(("B", a, b) for a, b in zip(labels, labels[1:], strict=False))
    return counts


def viterbi(w: dict, sentence, names: list[str]) -> list[str]:
    """The best labelling; at equal scores the lower label wins, at each step and at the end."""
    def unary(t, y):
        return w.get(("U00:" + sentence[t][0], None, y), 0.0)

    delta = [unary(0, y) for y in names]
    back = []
    for t in range(1, len(sentence)):
        row, arg = [], []
        for b in names:
            scores = [delta[i] + w.get(("B", a, b), 0.0) for i, a in enumerate(names)]
            best = max(range(len(names)), key=lambda i: (scores[i], -i))
            row.append(scores[best] + unary(t, b))
            arg.append(best)
        delta, back = row, [*back, arg]
    y = max(range(len(names)), key=lambda i: (delta[i], -i))
    path = [y]
    for arg in reversed(back):
        y = arg[y]
        path.append(y)
    return [names[i] for i in reversed(path)]


def crfpp_mira(corpus, C: float, shrinking: int, maxiter: int) -> tuple[dict, int]:
    """encoder.cpp's runMIRA, line by line, on dictionaries: the weights and epochs run."""
    names = sorted({y for s in corpus for _, y in s})
    w: dict = {}
    bound = np.zeros(len(corpus), dtype=np.float32)
    shrink = [0] * len(corpus)
    converge = 0
    epochs = 0
    for _ in range(maxiter):
        epochs += 1
        kkt = 0.0
        for i, sentence in enumerate(corpus):
            if shrink[i] >= shrinking:
                continue
            gold = [y for _, y in sentence]
            pred = viterbi(w, sentence, names)
            errors = sum(a != b for a, b in zip(gold, pred, strict=True))
            if errors == 0:
                shrink[i] += 1
                continue
            shrink[i] = 0
            d = phi(sentence, gold)
            d.subtract(phi(sentence, pred))
            d = {k: v for k, v in d.items() if v}
            score_gap = sum(w.get(k, 0.0) * v for k, v in d.items())  # score(gold) - score(pred)
            excess = errors + score_gap  # CRF++: errors - (score(pred) - score(gold))
            mu = max(0.0, excess / sum(v * v for v in d.values()))
            # C and the bounds are single precision, their sums with mu double (C++'s rules)
            if float(bound[i]) + mu > float(np.float32(C)):
                mu = float(np.float32(C) - bound[i])
            else:
                kkt = max(kkt, excess)
            if mu > 1e-10:
                bound[i] = min(float(np.float32(C)), float(bound[i]) + mu)
                for k, v in d.items():
                    w[k] = w.get(k, 0.0) + mu * v
        if kkt <= 0.0:
            shrink = [0] * len(corpus)
            converge += 1
        else:
            converge = 0
        if converge == 2:
            break
    return {k: v for k, v in w.items() if v}, epochs


def trained_weights(corpus, **options) -> tuple[dict, int]:
    import crfkit
    from crfkit.features.patterns import parse_patterns
    from crfkit.io.reader import Sequence
    from crfkit.model.describe import features

    sequences = [Sequence([[w, y] for w, y in s], list(range(1, len(s) + 1))) for s in corpus]
    model = crfkit.train(parse_patterns(PATTERNS), sequences,
                         crfkit.TrainOptions(algo="mira", all_features=True, **options))
    f = features(model)
    names = model.labels
    w = {(o, names[p] if p >= 0 else None, names[y]): x for o, p, y, x in
         zip(f.observation, f.prev, f.label, f.weight, strict=True) if x}
    return w, model.info["iterations"]


@pytest.mark.parametrize("C, shrinking, maxiter", [(1.0, 20, 50), (0.05, 20, 50),
                                                    (1.0, 1, 50), (1.0, 20, 3)])
def test_weights_are_crfpps_mira(C, shrinking, maxiter):
    """The default, a cap that binds (most steps capped), shrinking after one right epoch,
    and -i stopping before convergence."""
    corpus = noisy_corpus()
    expected, epochs = crfpp_mira(corpus, C, shrinking, maxiter)
    got, iterations = trained_weights(corpus, mira_c=C, shrinking_size=shrinking,
                                      maxiter=maxiter)
    assert iterations == epochs
    assert set(got) == set(expected)
    assert max(abs(got[k] - expected[k]) for k in expected) < 1e-9
    assert max(map(abs, expected.values())) > 0.05


def test_cli_takes_crfpps_spelling_and_records_c_and_h(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("".join("".join(f"{w} {y}\n" for w, y in s) + "\n"
                             for s in noisy_corpus(8)))
    pat = tmp_path / "p.pat"
    pat.write_text(PATTERNS)
    model = tmp_path / "m.model"
    result = run("train", "-q", "-a", "MIRA", "--cost", "0.5", "-H", "3", "-p", pat, train,
                 model)
    assert result.exit_code == 0, result.output
    info = run("info", model).output
    assert "mira_c=0.5" in info and "shrinking_size=3" in info and "rho2" not in info


@pytest.mark.parametrize("args, needle", [
    (["-a", "mira", "--cost", "1", "--mira-c", "2"], "--mira-c"),
    (["-a", "mira", "-H", "0"], "-H/--shrinking-size"),
    (["-a", "mira", "--mira-c", "0"], "--mira-c"),
    (["-a", "mira", "-2", "1"], "no L2 term"),
    (["-a", "mira", "--order", "2"], "second-order"),
])
def test_bad_mira_settings_are_one_line(tmp_path, args, needle):
    train = tmp_path / "train.txt"
    train.write_text("a A\nb B\n\n")
    pat = tmp_path / "p.pat"
    pat.write_text(PATTERNS)
    result = run("train", *args, "-p", pat, train, tmp_path / "m.model")
    one_error_line(result, needle)
