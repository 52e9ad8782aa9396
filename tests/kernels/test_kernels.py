"""Kernels against brute-force enumeration (tests/naive.py)."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import gradient, lattice, scaled
from tests import naive


def random_problem(rng, T, L, scale=1.0):
    psi = rng.normal(scale=scale, size=(T, L))
    phi = rng.normal(scale=scale, size=(T, L, L))
    return psi, phi


def run_forward_backward(psi, phi, per_token):
    """Run the kernel as loss_block does: exponentiate transitions, then the lattice."""
    T, L = psi.shape
    TP = T if per_token else 1
    expu, alpha, beta = (np.empty((T, L)) for _ in range(3))
    expb = np.empty((TP, L, L))
    scale, tmp = np.empty(T), np.empty(L)
    phi_used = phi if per_token else np.repeat(phi[1:2] if T > 1 else phi[:1], T, axis=0)
    if per_token:
        shift = lattice.exp_transitions(phi_used, T, expb)
    else:
        shift = lattice.exp_shifted(phi_used[0], expb[0]) * (T - 1)
    log_z = shift + lattice.forward_backward(psi, expb, per_token, T, L, expu, alpha, beta,
                                             scale, tmp)
    return log_z, alpha * beta, phi_used, (expu, expb, alpha, beta, scale)


def accumulate_expectations(G, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u,
                            trans_offset, has_trans, per_token, t0, T, L,
                            alpha, beta, expu, expb, scale, pair, tmp, Gd):
    """The expectation step of gradient.sequence_gradient, on given marginal factors."""
    if per_token:
        gradient.token_pair_expectations(G, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, n_u,
                                         trans_offset, has_trans, t0, T, L, alpha, beta, expu,
                                         expb, scale, pair, tmp)
    elif has_trans and T > 1:
        gradient.shared_pair_expectations(G, trans_offset, T, L, alpha, beta, expu, expb,
                                          scale, pair, tmp)
    gradient.unigram_expectations(G, tok_ptr, tok_obs, None, u_ptr, u_lab, t0, T, L, alpha, beta,
                                  Gd)


CASES = [(1, 1), (1, 3), (2, 1), (2, 2), (3, 3), (5, 2), (4, 4), (6, 3)]


@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("T,L", CASES)
def test_forward_backward_matches_enumeration(T, L, per_token):
    rng = np.random.default_rng(T * 10 + L + per_token)
    psi, phi = random_problem(rng, T, L, scale=2.0)
    log_z, marg, phi_used, _ = run_forward_backward(psi, phi, per_token)
    want_z = naive.log_partition(psi, phi_used)
    want_marg, _ = naive.marginals(psi, phi_used)
    assert log_z == pytest.approx(want_z, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(marg, want_marg, atol=1e-10)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-12)


def test_forward_backward_survives_huge_scores_and_long_sequences():
    rng = np.random.default_rng(0)
    psi, phi = random_problem(rng, 4, 3, scale=200.0)
    log_z, marg, phi_used, _ = run_forward_backward(psi, phi, True)
    assert log_z == pytest.approx(naive.log_partition(psi, phi_used), rel=1e-12)
    np.testing.assert_allclose(marg, naive.marginals(psi, phi_used)[0], atol=1e-9)
    # 500 tokens: unscaled probabilities would underflow long before the end.
    psi, phi = random_problem(rng, 500, 5, scale=3.0)
    log_z, marg, _, _ = run_forward_backward(psi, phi, True)
    assert np.isfinite(log_z)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("T,L", CASES)
def test_viterbi_matches_enumeration(T, L, per_token):
    rng = np.random.default_rng(100 + T * 10 + L)
    psi, phi = random_problem(rng, T, L, scale=1.5)
    phi_used = phi if per_token else np.repeat(phi[1:2] if T > 1 else phi[:1], T, axis=0)
    delta = np.empty((T, L))
    back = np.empty((T, L), dtype=np.int32)
    path = np.empty(T, dtype=np.int32)
    score = lattice.viterbi(psi, phi_used if per_token else phi_used[:1], per_token, T, L,
                            delta, back, path)
    want_path, want_score = naive.best_path(psi, phi_used)
    assert tuple(path) == want_path
    assert score == pytest.approx(want_score, rel=1e-12)


@pytest.mark.parametrize("per_token", [False, True])
def test_pair_expectations_match_enumeration(per_token):
    """The transition gradient equals the summed brute-force pair marginals."""
    rng = np.random.default_rng(7)
    T, L = 5, 3
    psi, phi = random_problem(rng, T, L)
    log_z, _, phi_used, (expu, expb, alpha, beta, scale) = run_forward_backward(
        psi, phi, per_token)
    n_obs = 1
    # One observation at every token, no features of its own: only transitions count.
    tok_ptr = np.arange(T + 1, dtype=np.int64)
    tok_obs = np.zeros(T, dtype=np.int32)
    u_ptr = np.zeros(n_obs + 1, dtype=np.int64)
    b_ptr = np.zeros(n_obs + 1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int32)
    G = np.zeros(L * L)
    accumulate_expectations(G, tok_ptr, tok_obs, u_ptr, empty, b_ptr, empty, empty, 0,
                                    0, True, per_token, 0, T, L, alpha, beta, expu, expb, scale,
                                    np.empty((L, L)), np.empty(L), np.empty((0, L)))
    _, pair = naive.marginals(psi, phi_used)
    np.testing.assert_allclose(G.reshape(L, L), pair.sum(axis=0), atol=1e-10)


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("T,L", CASES)
def test_shared_lattice_matches_enumeration(T, L, pairs):
    """shared_logz (one transition matrix for every token, forward in dot products, pair
    sums during the backward pass) gives brute force's log Z, token marginals and summed
    pair marginals, and fills the pair sums only when asked."""
    rng = np.random.default_rng(300 + T * 10 + L)
    psi, phi = random_problem(rng, T, L, scale=2.0)
    phi_used = np.repeat(phi[1:2] if T > 1 else phi[:1], T, axis=0)
    expb = np.empty((2, L, L))
    trans = np.empty((L, L))
    W = phi_used[0].ravel().copy()
    shift = lattice.load_transitions(W, 0, True, L, trans, expb)
    np.testing.assert_array_equal(expb[1], expb[0].T)
    expu, alpha, beta = (np.empty((T, L)) for _ in range(3))
    scale, tmp = np.empty(T), np.empty(L)
    pair = np.full((L, L), -7.0)
    logz = sum(lattice.exp_shifted(psi[t], expu[t]) for t in range(T))
    logz = scaled.shared_logz(expu, expb[0], expb[1], T, L, alpha, beta, scale, tmp, pair,
                               pairs, logz) + shift * (T - 1)
    want_marg, want_pair = naive.marginals(psi, phi_used)
    assert logz == pytest.approx(naive.log_partition(psi, phi_used), rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(alpha * beta, want_marg, atol=1e-10)
    if not pairs:
        assert (pair == -7.0).all()
        return
    G = np.zeros(L * L)
    gradient.add_transition_expectations(G, 0, L, pair, expb[0])
    np.testing.assert_allclose(G.reshape(L, L), want_pair.sum(axis=0), atol=1e-10)


def test_shared_lattice_reports_underflow():
    """A token whose scores all underflow gives NaN, as scaled_logz does."""
    L, T = 2, 3
    expu = np.ones((T, L))
    expu[1] = 0.0
    expb = np.ones((2, L, L))
    out = scaled.shared_logz(expu, expb[0], expb[1], T, L, np.empty((T, L)), np.empty((T, L)),
                              np.empty(T), np.empty(L), np.empty((L, L)), True, 0.0)
    assert np.isnan(out)


@pytest.mark.parametrize("big", [False, True])
def test_transition_exponentials_as_products_equal_the_full_ones(big):
    """exp(trans + sum of bigram weights) as exp(trans) times exp(w) per feature gives the
    same matrices and shift as exponentiating phi; a token whose product would overflow
    falls back to its own shift (``big``: one weight of 800)."""
    rng = np.random.default_rng(3)
    T, L = 6, 4
    trans = rng.normal(size=(L, L))
    # token t has one observation whose bigram features touch two label pairs (sometimes one
    # pair twice: their factors multiply)
    tok_ptr = np.arange(T + 1, dtype=np.int64)
    tok_obs = np.arange(T, dtype=np.int32)
    b_ptr = np.arange(0, 2 * T + 1, 2, dtype=np.int64)
    b_prev = rng.integers(0, L, size=2 * T).astype(np.int32)
    b_cur = rng.integers(0, L, size=2 * T).astype(np.int32)
    b_prev[4:6], b_cur[4:6] = 1, 2
    W = rng.normal(size=2 * T)
    if big:
        W[7] = 800.0
    phi = np.empty((T, L, L))
    lattice.bigram_scores(W, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, 0, trans, 0, T, phi)
    full = np.empty((T, L, L))
    full_shift = lattice.exp_transitions(phi, T, full)
    exp_trans = np.empty((L, L))
    trans_shift = lattice.exp_shifted(trans, exp_trans)
    expw = np.empty(len(W))
    lattice.exp_bigram_weights(W, 0, len(W), expw)
    products = np.empty((T, L, L))
    scratch = np.empty((T, L, L))
    shift = lattice.exp_transitions_factors(W, b_ptr, b_prev, b_cur, 0, tok_ptr, tok_obs, 0, T,
                                            trans, exp_trans, trans_shift, expw, scratch,
                                            products)
    # Different shifts, the same scores once each shift is put back.
    shifts = []
    for t in range(1, T):
        own = phi[t].max() if phi[t].max() - trans_shift > 700 else trans_shift
        shifts.append(own)
        np.testing.assert_allclose(products[t], np.exp(phi[t] - own), rtol=1e-12, atol=0)
        np.testing.assert_allclose(full[t], np.exp(phi[t] - phi[t].max()), rtol=1e-12, atol=0)
    assert shift == pytest.approx(sum(shifts))
    assert (shift != pytest.approx(trans_shift * (T - 1))) == big
    assert full_shift == pytest.approx(sum(phi[t].max() for t in range(1, T)))


@pytest.mark.parametrize("n_dense", [1, 3, 6])
def test_dense_rows_give_the_same_bits_as_feature_by_feature(n_dense):
    """Scores and expected counts through dense rows of the first observations equal, to
    the bit, the feature-by-feature sums (the same additions in the same order)."""
    rng = np.random.default_rng(n_dense)
    T, L, n_obs = 7, 4, 6
    # each observation fires for a random subset of labels (some for none)
    u_lab = [np.sort(rng.choice(L, size=rng.integers(0, L + 1), replace=False))
             for _ in range(n_obs)]
    u_ptr = np.concatenate([[0], np.cumsum([len(x) for x in u_lab])]).astype(np.int64)
    u_lab = np.concatenate(u_lab).astype(np.int32)
    W = rng.normal(size=len(u_lab))
    counts = rng.integers(1, 4, size=T)
    tok_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    tok_obs = rng.integers(0, n_obs, size=tok_ptr[-1]).astype(np.int32)

    def scores(Wd):
        psi = np.empty((T, L))
        lattice.unigram_scores(W, tok_ptr, tok_obs, None, u_ptr, u_lab, 0, T, psi, Wd)
        return psi

    dense = lattice.dense_rows(W, u_ptr, u_lab, n_dense, L)
    psi = scores(np.empty((0, L)))
    assert np.array_equal(scores(dense), psi)
    expected = np.zeros((T, L))
    for t in range(T):
        for o in tok_obs[tok_ptr[t]:tok_ptr[t + 1]]:
            expected[t, u_lab[u_ptr[o]:u_ptr[o + 1]]] += W[u_ptr[o]:u_ptr[o + 1]]
    np.testing.assert_allclose(psi, expected, atol=1e-12)

    phi = rng.normal(size=(T, L, L))
    _, _, _, (expu, expb, alpha, beta, scale) = run_forward_backward(psi, phi, False)
    empty = np.zeros(0, dtype=np.int32)
    no_pairs = np.zeros(n_obs + 1, dtype=np.int64)

    def expectations(Gd):
        G = np.zeros(len(W))
        accumulate_expectations(G, tok_ptr, tok_obs, u_ptr, u_lab, no_pairs, empty,
                                        empty, len(W), 0, False, False, 0, T, L,
                                        alpha.copy(), beta, expu, expb, scale,
                                        np.empty((L, L)), np.empty(L), Gd)
        lattice.flush_dense(G, Gd, u_ptr, u_lab)
        return G

    G = expectations(np.zeros((0, L)))
    assert np.array_equal(expectations(np.zeros((n_dense, L))), G)
    marginals = alpha * beta
    want = np.zeros(len(W))
    for t in range(T):
        for o in tok_obs[tok_ptr[t]:tok_ptr[t + 1]]:
            k = np.arange(u_ptr[o], u_ptr[o + 1])
            want[k] += marginals[t, u_lab[k]]
    np.testing.assert_allclose(G, want, atol=1e-12)


def test_posterior_errors_count_tokens_whose_argmax_is_not_gold():
    """As numpy's argmax decides, ties going to the lower label."""
    rng = np.random.default_rng(4)
    marginals = rng.integers(0, 3, size=(200, 5)).astype(float)  # many ties
    labels = rng.integers(0, 5, size=203).astype(np.int32)
    want = int((marginals.argmax(axis=1) != labels[3:]).sum())
    assert gradient.posterior_errors(marginals, labels, 3, 200) == want
