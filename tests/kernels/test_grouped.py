"""The grouped forward-backward (crfkit.kernels.grouped): the CRF objective and gradient it
gives against brute force and finite differences, its slots against the per-sequence
lattice."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.kernels import grouped, lattice, loss, scaled
from crfkit.kernels.objective import Objective
from crfkit.training.train import encode_training
from tests import naive
from tests.helpers import random_corpus

# Unigrams and the transition block only: every token shares one transition matrix.
SHARED = parse_patterns("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nu:pos=%x[0,1]\nB\n")

GROUPED_KERNEL = loss.CRF_LOSS_KERNELS[False, True, False, True]


@pytest.fixture
def grouped_always(monkeypatch):
    """The grouped kernel for any label count (the tiny corpora have 3 labels)."""
    monkeypatch.setattr(loss, "GROUPED_LABELS", 1)


def test_the_grouped_kernel_is_chosen_by_the_label_count():
    """From GROUPED_LABELS labels on, for factored scores and one shared matrix only."""
    at = loss.GROUPED_LABELS
    assert loss.crf_loss_kernel(False, True, None, at)[0] is GROUPED_KERNEL
    assert loss.crf_loss_kernel(False, True, None, at - 1)[0] is not GROUPED_KERNEL
    assert loss.crf_loss_kernel(True, True, None, at)[0] is not GROUPED_KERNEL
    assert loss.crf_loss_kernel(False, False, None, at)[0] is not GROUPED_KERNEL


def test_grouped_objective_matches_brute_force(grouped_always):
    """Two windows of sequences sorted by length (256 and 44 sequences of 1 to 4 tokens),
    each in groups of 8: log Z of each sequence as enumeration gives it."""
    seqs = random_corpus(11, n_seqs=grouped.WINDOW + 44)
    corpus = encode_training(SHARED, seqs)
    assert corpus.space.n_b == 0 and corpus.space.has_trans
    w = np.random.default_rng(11).normal(size=corpus.space.n_weights)
    one_block = np.array([0, len(seqs)])
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.0, block_ptr=one_block)
    got = objective(w, np.empty_like(w))
    assert got == pytest.approx(sum(enumerated_loss(corpus, w, seq) for seq in seqs), rel=1e-10)


def enumerated_loss(corpus, w, seq) -> float:
    """log Z - score(gold path) of one sequence, by enumerating its label paths."""
    psi, phi = naive.reference_scores(corpus, w, seq)
    gold = tuple(corpus.labels.index(row[-1]) for row in seq.rows)
    return naive.log_partition(psi, phi) - naive.path_score(psi, phi, gold)


def test_grouped_gradient_matches_finite_differences(grouped_always):
    """Unigram and transition expectations, over two groups."""
    corpus = encode_training(SHARED, random_corpus(5, n_seqs=11))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.7)
    w = np.random.default_rng(5).normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    objective(w, g)
    scratch = np.empty_like(w)
    steps = np.eye(w.size) * 1e-6
    numeric = [(objective(w + e, scratch) - objective(w - e, scratch)) / 2e-6 for e in steps]
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)


def test_slots_match_the_per_sequence_lattice_and_fail_alone():
    """Each slot's log Z, alpha and beta are shared_logz's (to rounding); a slot whose
    scores underflow gets NaN and leaves the others as they were."""
    rng = np.random.default_rng(7)
    L, lengths = 13, [6, 1, 9, 4, 9, 2]
    expb = np.empty((2, L, L))
    lattice.load_transitions(rng.normal(size=L * L), 0, True, L, np.empty((L, L)), expb)
    gw = grouped.group_work(max(lengths), L, expb)
    units = [rng.uniform(0.1, 2.0, size=(T, L)) for T in lengths]
    units[3][2] = 0.0
    for k, T in enumerate(lengths):
        grouped.load_slot(gw, k, units[k], T, max(lengths), L)
    grouped.group_logz(gw, len(lengths), max(lengths), L)
    for k, T in enumerate(lengths):
        alpha, beta, scale = np.empty((T, L)), np.empty((T, L)), np.empty(T)
        want = scaled.shared_logz(units[k], expb[0], expb[1], T, L, alpha, beta, scale,
                                  np.empty(L), np.empty((L, L)), False, 0.0)
        if k == 3:
            assert np.isnan(want) and np.isnan(gw.logz[k])
            continue
        assert gw.logz[k] == pytest.approx(want, rel=1e-12)
        got_alpha, got_beta = np.empty((T, L)), np.empty((T, L))
        grouped.unload_slot(gw, k, got_alpha, got_beta, L)
        np.testing.assert_allclose(got_alpha, alpha, rtol=1e-12)
        np.testing.assert_allclose(got_beta, beta, rtol=1e-12)


def test_row_products_and_order_by_length():
    """The tiled products are A B^T; sequences come shortest first, equals in order,
    empty ones left out."""
    rng = np.random.default_rng(3)
    A, B, C = rng.normal(size=(16, 7)), rng.normal(size=(6, 7)), np.empty((16, 6))
    grouped.row_products(A, B, C, 16, 6, 7)
    np.testing.assert_allclose(C, A @ B.T, rtol=1e-13)
    seq_ptr = np.cumsum([0, 3, 1, 0, 3, 2, 1]).astype(np.int64)
    assert grouped.by_length(seq_ptr, 0, 6).tolist() == [1, 5, 4, 0, 3]
    assert grouped.by_length(seq_ptr, 2, 5).tolist() == [4, 3]
