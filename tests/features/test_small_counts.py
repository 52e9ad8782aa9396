"""Counting a small corpus with numpy (crfkit.features.small_counts): the distinct tuples and
(observation, label) pairs a brute-force count finds, and the very vocabulary, feature space
and arrays that the Numba kernels of a large corpus give."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from crfkit.features import small_counts
from crfkit.features.small_counts import intern_tuples, observed_pairs_small, renumber_small
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, random_corpus


@pytest.mark.parametrize("radix", [[4, 3, 5], [2**40, 2**40, 5]])  # a code, or whole rows
def test_intern_tuples_numbers_rows_by_first_appearance(radix):
    rng = np.random.default_rng(len(radix) + radix[0] % 7)
    rows = rng.integers(-1, 3, size=(200, 3)).astype(np.int32)
    inverse = np.empty(200, dtype=np.int32)
    distinct, counts = intern_tuples(rows, np.array(radix, dtype=np.int64), inverse)
    seen = Counter(map(tuple, rows.tolist()))
    first = list(dict.fromkeys(map(tuple, rows.tolist())))  # brute force: insertion order
    assert distinct.tolist() == [list(r) for r in first]
    assert counts.tolist() == [seen[r] for r in first]
    assert [first[i] for i in inverse] == list(map(tuple, rows.tolist()))
    assert distinct.dtype == np.int32 and counts.dtype == np.int64


def test_intern_tuples_of_no_tokens_and_of_constant_patterns():
    inverse = np.empty(0, dtype=np.int32)
    distinct, counts = intern_tuples(np.zeros((0, 2), np.int32), np.array([3, 3]), inverse)
    assert distinct.shape == (0, 2) and len(counts) == 0
    inverse = np.full(4, 7, dtype=np.int32)
    distinct, counts = intern_tuples(np.zeros((4, 0), np.int32), np.zeros(0, np.int64), inverse)
    assert distinct.shape == (1, 0) and counts.tolist() == [4] and inverse.tolist() == [0] * 4


@pytest.mark.parametrize("pairs", [False, True])
def test_observed_pairs_are_the_distinct_observation_label_combinations(pairs):
    rng = np.random.default_rng(3)
    n, n_obs, L = 60, 9, 3
    obs = rng.integers(-1, n_obs, size=(n, 3)).astype(np.int32)
    labels = rng.integers(0, L, size=n)
    first = rng.random(n) < 0.2
    first[0] = True
    columns = np.array([0, 2])
    ptr, codes, counts = observed_pairs_small(obs, columns, labels, first, n_obs, L, pairs)
    want = Counter()
    for t in range(n):
        if pairs and first[t]:
            continue
        code = labels[t - 1] * L + labels[t] if pairs else labels[t]
        want.update((int(obs[t, j]), int(code)) for j in columns if obs[t, j] >= 0)
    got = Counter({(o, int(codes[k])): int(counts[k])
                   for o in range(n_obs) for k in range(ptr[o], ptr[o + 1])})
    assert got == want
    assert all(np.all(np.diff(codes[ptr[o]:ptr[o + 1]]) > 0) for o in range(n_obs))
    assert (ptr.dtype, codes.dtype, counts.dtype) == (np.int64, np.int32, np.int32)


def test_renumber_small_maps_each_patterns_ids():
    obs = np.array([[0, 1], [1, 0]], dtype=np.int32, order="F")
    renumber_small(obs, np.array([5, 6, 7, -1], dtype=np.int32), np.array([0, 2]))
    assert obs.tolist() == [[5, -1], [6, 7]]


def test_a_small_corpus_encodes_as_the_kernels_encode_it(monkeypatch):
    corpus = random_corpus(11, n_seqs=40, max_len=7)
    by_numpy = encode_training(PATTERNS, corpus)
    monkeypatch.setattr(small_counts, "SMALL_CORPUS_TOKENS", -1)  # every corpus: the kernels
    by_kernels = encode_training(PATTERNS, corpus)
    assert by_numpy.space.n_b and by_numpy.space.n_u  # both kinds of pairs were counted
    for name in ("u_ptr", "u_lab", "b_ptr", "b_prev", "b_cur"):
        np.testing.assert_array_equal(getattr(by_numpy.space, name),
                                      getattr(by_kernels.space, name))
    np.testing.assert_array_equal(by_numpy.empirical, by_kernels.empirical)
    for name in ("tok_ptr", "tok_obs"):
        np.testing.assert_array_equal(getattr(by_numpy.data, name),
                                      getattr(by_kernels.data, name))
    np.testing.assert_array_equal(by_numpy.featurizer.vocab.keys,
                                  by_kernels.featurizer.vocab.keys)
