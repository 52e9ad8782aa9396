"""ap, pa and arow train CRFsuite's models: weights against python-crfsuite's, name by name.

python-crfsuite shuffles with the C library's ``rand()``, never seeded; each
test reseeds it (``srand(1)``, what a fresh process has) so that the order is
CRFsuite's first-run order, which crfkit replays (:mod:`crfkit.optim.crandom`).
The model dump python-crfsuite parses prints weights with 6 decimals, hence
the tolerance.
"""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest

from crfkit.optim.crandom import CRand, crfsuite_orders

DUMP_PRECISION = 1e-6  # CRFsuite's dump prints %f

# sklearn-crfsuite's own test data (its tests/conftest.py): one sequence
TOY_X = [[{"walk": 1, "shop": 0.5}, {"walk": 1}, {"walk": 1, "clean": 0.5},
          {"shop": 0.5, "clean": 0.5}, {"walk": 0.5, "clean": 1}, {"clean": 1, "shop": 0.1},
          {"walk": 1, "shop": 0.5}, {}, {"clean": 1},
          {"солнце": "не светит".encode(), "clean": 1}]]
TOY_Y = [["sunny", "sunny", "sunny", "rainy", "rainy", "rainy", "sunny", "sunny", "rainy",
          "rainy"]]


def noisy_corpus(n: int = 30, seed: int = 5):
    """Sequences whose labels the features predict only in part (so every epoch errs), with
    booleans that are often False, numbers, and more labels than pairs seen."""
    rng = np.random.default_rng(seed)
    words = ["the", "a", "dog", "cat", "runs", "sleeps", "Paris", "Rome", "42", "and"]
    tags = {"the": "D", "a": "D", "dog": "N", "cat": "N", "runs": "V", "sleeps": "V",
            "Paris": "P", "Rome": "P", "42": "N", "and": "C"}
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 9))
        seq = [words[i] for i in rng.integers(0, len(words), T)]
        X.append([{"w": w, "title": w.istitle(), "digit": w.isdigit(),
                   "len": len(w) / 4.0, "prev": seq[t - 1] if t else "BOS"}
                  for t, w in enumerate(seq)])
        y.append([tags[w] if rng.random() > 0.15 else "N" for w in seq])
    return X, y


def crfsuite_model(X, y, algorithm: str, params: dict):
    """python-crfsuite's state and transition weights, from CRFsuite's first-run order."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    if platform.system() != "Linux" or not platform.libc_ver()[0] == "glibc":
        pytest.skip("CRFsuite's order is glibc's rand()")
    ctypes.CDLL(None).srand(1)
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    trainer.set_params(params)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(f"{tmp}/m.crfsuite")
        tagger = pycrfsuite.Tagger()
        tagger.open(f"{tmp}/m.crfsuite")
        info = tagger.info()
        tagger.close()
    return dict(info.state_features), dict(info.transitions), len(trainer.logparser.iterations)


def largest_difference(a: dict, b: dict) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


@pytest.mark.parametrize("data", ["toy", "noisy"])
@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow"])
def test_weights_are_crfsuites(algorithm, data):
    pytest.importorskip("sklearn")
    from crfkit.sklearn import CRF

    X, y = (TOY_X, TOY_Y) if data == "toy" else noisy_corpus()
    params = {} if data == "toy" else {"max_iterations": 30}
    states, transitions, epochs = crfsuite_model(X, y, algorithm, params)
    crf = CRF(algorithm=algorithm, **params).fit(X, y)
    assert len(crf.training_log_.iterations) == epochs
    assert largest_difference(states, crf.state_features_) < DUMP_PRECISION
    assert largest_difference(transitions, crf.transition_features_) < DUMP_PRECISION
    assert max(map(abs, states.values())) > 0.1


def test_crand_is_glibcs_rand():
    # glibc's first rand() values after srand(1) (also the unseeded state) and srand(42)
    one = CRand(1)
    assert [one() for _ in range(4)] == [1804289383, 846930886, 1681692777, 1714636915]
    assert CRand(0)() == 1804289383
    forty_two = CRand(42)
    assert [forty_two() for _ in range(2)] == [71876166, 708592740]


def test_crfsuite_orders_shuffle_one_permutation_in_place():
    draw = CRand(1)
    expected = list(range(5))
    orders = crfsuite_orders(5, 1)
    for _ in range(3):
        for i in range(5):
            j = draw() % 5
            expected[i], expected[j] = expected[j], expected[i]
        assert orders().tolist() == expected


@pytest.mark.parametrize("features", [
    {"min_freq": 3},
    {"min_freq": 2, "all_possible_states": True, "all_possible_transitions": True},
    {"all_possible_transitions": True},
])
def test_feature_sets_are_crfsuites(features):
    """CRFsuite's feature.minfreq, possible_states and possible_transitions, through the
    perceptron (whose weights show which features exist)."""
    pytest.importorskip("sklearn")
    from crfkit.sklearn import CRF

    names = {"min_freq": "feature.minfreq", "all_possible_states": "feature.possible_states",
             "all_possible_transitions": "feature.possible_transitions"}
    X, y = noisy_corpus()
    params = {names[k]: v for k, v in features.items()} | {"max_iterations": 10}
    states, transitions, _ = crfsuite_model(X, y, "ap", params)
    crf = CRF(algorithm="ap", max_iterations=10, **features).fit(X, y)
    assert largest_difference(states, crf.state_features_) < DUMP_PRECISION
    assert largest_difference(transitions, crf.transition_features_) < DUMP_PRECISION


@pytest.mark.parametrize("params", [
    {"max_iterations": 30},
    {"max_iterations": 30, "calibration.eta": 0.02, "calibration.samples": 10},
    {"calibration.rate": 3.0, "calibration.candidates": 3, "calibration.max_trials": 6},
    {},  # to CRFsuite's own stop (delta over period), epoch for epoch
], ids=["30-epochs", "calibration-eta-samples", "calibration-rate-candidates", "converged"])
def test_l2sgd_weights_are_crfsuites(params):
    """l2sgd as train_l2sgd.c: its calibration (every calibration.* parameter), its
    schedule and decay, its order, its stop and its best epoch's weights."""
    pytest.importorskip("sklearn")
    from crfkit.sklearn import CRF

    X, y = noisy_corpus()
    states, transitions, epochs = crfsuite_model(X, y, "l2sgd", params)
    crf = CRF(algorithm="l2sgd", **{k.replace(".", "_"): v for k, v in params.items()}).fit(X, y)
    assert len(crf.training_log_.iterations) == epochs
    assert largest_difference(states, crf.state_features_) < DUMP_PRECISION
    assert largest_difference(transitions, crf.transition_features_) < DUMP_PRECISION
    assert max(map(abs, states.values())) > 0.1
