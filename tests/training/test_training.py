"""The whole objective (features + kernels) against slow references.

* vectorised feature extraction equals the string-by-string reference
  (:func:`crfkit.features.explain.apply_pattern`);
* the objective equals brute-force enumeration over all label paths;
* the gradient equals central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import loss
from crfkit.kernels.lattice import FACTOR_RANGE, factor_bound
from crfkit.kernels.objective import Objective
from crfkit.training.corpus import model_patterns
from crfkit.training.train import encode_training
from tests import naive
from tests.helpers import PATTERNS, random_corpus, type_objective


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_features_match_reference_strings(seed):
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs)
    for _, got, want in naive.token_observations(corpus, seqs):
        assert got == want


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_objective_matches_brute_force(seed):
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs)
    rho2 = 0.3
    w = np.random.default_rng(seed).normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    got = Objective(corpus.space, corpus.data, corpus.empirical, rho2)(w, g)
    label_id = {name: i for i, name in enumerate(corpus.labels)}
    want = 0.5 * rho2 * float(w @ w)
    for seq in seqs:
        psi, phi = naive.reference_scores(corpus, w, seq)
        gold = tuple(label_id[row[-1]] for row in seq.rows)
        want += naive.log_partition(psi, phi) - naive.path_score(psi, phi, gold)
    assert got == pytest.approx(want, rel=1e-10)


def objective_of(model_type: str, seqs, rho2: float):
    """The training objective of a model type on ``seqs`` (:data:`PATTERNS`), and its corpus."""
    corpus = encode_training(model_patterns(PATTERNS, model_type), seqs, model_type=model_type)
    if model_type == "crf":
        return Objective(corpus.space, corpus.data, corpus.empirical, rho2), corpus
    return type_objective(model_type, corpus.space, corpus.data, corpus.empirical, rho2), corpus


@pytest.mark.parametrize("model_type,seed", [("crf", 0), ("crf", 5), ("memm", 4), ("maxent", 4)])
def test_gradient_matches_finite_differences(model_type, seed):
    objective, corpus = objective_of(model_type, random_corpus(seed, n_seqs=5), 0.7)
    rng = np.random.default_rng(seed)
    w = rng.normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    objective(w, g)
    scratch = np.empty_like(w)
    eps = 1e-6
    numeric = np.empty_like(w)
    for i in range(w.size):
        wp, wm = w.copy(), w.copy()
        wp[i] += eps
        wm[i] -= eps
        numeric[i] = (objective(wp, scratch) - objective(wm, scratch)) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)
    # The corpus exercises every weight block of the type.
    s = corpus.space
    if model_type == "maxent":
        assert s.n_u and s.n_b == 0 and not s.has_trans
    else:
        assert s.n_u and s.n_b and s.has_trans


@pytest.mark.parametrize("model_type", ["crf", "memm"])
def test_thread_count_does_not_change_the_objective(model_type):
    import numba

    objective, corpus = objective_of(model_type, random_corpus(9, n_seqs=40), 1.0)
    w = np.random.default_rng(9).normal(size=corpus.space.n_weights)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        g = np.empty_like(w)
        results.append((objective(w, g), g.copy()))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unigram_factors_give_the_exponentiated_scores(seed):
    """Each token's exponentiated scores as products of exponentiated weights
    (lattice.unigram_factors) give the objective and gradient of summing the scores and
    exponentiating them (the path taken when Objective.factors declines), up to rounding."""
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs)
    w = np.random.default_rng(seed).normal(size=corpus.space.n_weights)
    factored = Objective(corpus.space, corpus.data, corpus.empirical, 0.3)
    assert len(factored.shared(w)[5]) == corpus.space.n_u  # the factor path is taken
    whole = Objective(corpus.space, corpus.data, corpus.empirical, 0.3)
    whole.max_obs = np.inf
    assert len(whole.shared(w)[5]) == 0
    g1, g2 = np.empty_like(w), np.empty_like(w)
    assert factored(w, g1) == pytest.approx(whole(w, g2), rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-12)


def brute_force_loss(corpus, seqs, w: np.ndarray) -> tuple[float, float]:
    """The unregularised loss at ``w`` by enumeration, and the largest |unigram score|."""
    label_id = {name: i for i, name in enumerate(corpus.labels)}
    want, largest = 0.0, 0.0
    for seq in seqs:
        psi, phi = naive.reference_scores(corpus, w, seq)
        largest = max(largest, np.abs(psi).max())
        gold = tuple(label_id[row[-1]] for row in seq.rows)
        want += naive.log_partition(psi, phi) - naive.path_score(psi, phi, gold)
    return want, largest


def test_weights_too_large_for_products_are_exponentiated_as_scores():
    """Weights whose products could leave the normal doubles are not multiplied
    (Objective.factors declines them): the objective still equals brute force where a
    product of this many exp(w) would overflow."""
    seqs = random_corpus(3)
    corpus = encode_training(PATTERNS, seqs)
    w = np.random.default_rng(3).normal(size=corpus.space.n_weights)
    w[:corpus.space.n_u] *= 400.0  # the unigram weights (the factors' exponents)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.0)
    want, largest = brute_force_loss(corpus, seqs, w)
    assert largest > 710  # a product of exp(w) there would overflow (or vanish)
    assert objective(w, np.empty_like(w)) == pytest.approx(want, rel=1e-10)
    assert len(objective.shared(w)[5]) == 0


def test_one_large_feature_keeps_the_factors():
    """Large weights on one observation fail the quick bound (max|w| times the most
    features a token has) but not the per-token one (lattice.factor_bound): the scores
    are still multiplied out of factors, the bound covers every token's scores, and the
    objective equals brute force."""
    seqs = random_corpus(4)
    corpus = encode_training(PATTERNS, seqs)
    s = corpus.space
    rng = np.random.default_rng(4)
    w = rng.normal(size=s.n_weights)
    with_unigrams = np.diff(s.u_ptr) > 0
    common = (np.bincount(corpus.data.tok_obs, minlength=s.n_obs) * with_unigrams).argmax()
    lo, hi = s.u_ptr[common], s.u_ptr[common + 1]
    w[lo:hi] = 120.0 * rng.choice([-1.0, 1.0], size=hi - lo)
    objective = Objective(s, corpus.data, corpus.empirical, 0.0)
    assert 120.0 * objective.max_obs >= FACTOR_RANGE  # the quick bound declines
    assert len(objective.shared(w)[5]) == s.n_u  # the factors are taken
    bound = factor_bound(w, s.u_ptr, corpus.data.tok_ptr, corpus.data.tok_obs,
                         np.empty(s.n_obs))
    want, largest = brute_force_loss(corpus, seqs, w)
    assert 100.0 < largest <= bound < FACTOR_RANGE
    assert objective(w, np.empty_like(w)) == pytest.approx(want, rel=1e-10)


def test_the_loss_kernel_run_is_the_version_the_factors_need(monkeypatch):
    """A binary corpus at moderate weights runs the factored version of the loss kernel
    (so a first run compiles only that one), weights too large for products the other."""
    corpus = encode_training(PATTERNS, random_corpus(3))
    used = set()
    for key, kernel in list(loss.CRF_LOSS_KERNELS.items()):
        def recording(*args, key=key, kernel=kernel):
            used.add(key)
            kernel(*args)
        monkeypatch.setitem(loss.CRF_LOSS_KERNELS, key, recording)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.0)
    w = np.random.default_rng(3).normal(size=corpus.space.n_weights)
    objective(w, np.empty_like(w))
    # (the third part of a key: whether the kernel reads the sparse runs, kernels.runs)
    assert {key[:2] for key in used} == {(corpus.space.n_b > 0, True)}
    used.clear()
    w[:corpus.space.n_u] *= 400.0
    objective(w, np.empty_like(w))
    assert {key[:2] for key in used} == {(corpus.space.n_b > 0, False)}
