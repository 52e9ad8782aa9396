"""The sparse features laid out in reading order (crfkit.kernels.runs)."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit import config
from crfkit.features.patterns import parse_patterns
from crfkit.kernels import runs
from crfkit.kernels.objective import Objective
from crfkit.kernels.runs import sparse_runs
from crfkit.training.corpus import encode_training
from tests.helpers import random_corpus

# unigram patterns and label pairs only: every token shares one transition matrix
CHAIN = parse_patterns("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n")


def test_runs_list_the_sparse_occurrences_features_in_corpus_order(monkeypatch):
    monkeypatch.setattr(runs, "MAX_RUNS_SHARE", np.inf)  # a toy's runs outgrow its occurrences
    u_ptr = np.array([0, 2, 3, 6, 7], dtype=np.int64)  # observations 0..3
    u_lab = np.array([0, 2, 1, 0, 1, 2, 2], dtype=np.int32)
    seq_ptr = np.array([0, 2, 3], dtype=np.int64)
    tok_ptr = np.array([0, 3, 5, 7], dtype=np.int64)
    tok_obs = np.array([2, 0, 3, 1, 2, 3, 0], dtype=np.int32)
    start, feature, label, dense_end, pair_end = sparse_runs(seq_ptr, tok_ptr, tok_obs, u_ptr,
                                                             u_lab, 1)
    want = []  # (feature, label, last of its occurrence) of every occurrence past row 0
    for o in tok_obs:
        if o >= 1:
            ks = range(u_ptr[o], u_ptr[o + 1])
            want += [(k, u_lab[k], k == ks[-1]) for k in ks]
    got = [(f, ~y if y < 0 else y, y < 0)
           for f, y in zip(feature.tolist(), label.tolist(), strict=True)]
    assert got == want
    # sequence 1 (token 2) starts after sequence 0's 3 + 1 + 1 + 3 pairs
    assert start.tolist() == [0, 8, 9]
    # each token's pairs end after its occurrences' (3 + 1, 1 + 3, 1); its leading dense
    # rows end at its first sparse occurrence (token 0 starts with one: none lead)
    assert pair_end.tolist() == [4, 8, 9]
    assert dense_end.tolist() == [0, 3, 5]


def test_a_sparse_occurrence_without_features_gives_no_runs():
    """Its end could not be marked: the kernel that reads no runs is used instead."""
    u_ptr = np.array([0, 1, 1, 2], dtype=np.int64)  # observation 1 has no feature
    u_lab = np.array([0, 1], dtype=np.int32)
    args = (np.array([0, 1]), np.array([0, 2]), np.array([2, 1], dtype=np.int32), u_ptr, u_lab)
    assert sparse_runs(*args, 0) is None
    assert sparse_runs(*args, 2) is not None  # dense there: not read from the runs


def test_runs_larger_than_the_occurrences_are_not_built(monkeypatch):
    """Many labels an observation (Brown's tags): the runs would cost more memory than the
    corpus's occurrences; the kernel reads the feature space instead."""
    u_ptr = np.array([0, 1, 4], dtype=np.int64)  # observation 1: three features
    u_lab = np.array([0, 0, 1, 2], dtype=np.int32)
    tok_obs = np.array([1, 1], dtype=np.int32)  # 8 bytes of occurrences, 6 pairs of 5
    args = (np.array([0, 2]), np.array([0, 1, 2]), tok_obs, u_ptr, u_lab, 0)
    assert sparse_runs(*args) is None
    monkeypatch.setattr(runs, "MAX_RUNS_SHARE", 30 / tok_obs.nbytes)
    assert sparse_runs(*args) is not None


@pytest.mark.parametrize("dense_rows", [0, 3, 10_000])
def test_the_kernel_reading_runs_gives_the_bits_of_the_one_that_does_not(monkeypatch,
                                                                         dense_rows):
    """Objective and gradient, to the bit, with the sparse features read from the runs or
    through the feature space (the same products and sums in the same order), with no,
    some or all observations in dense rows."""
    corpus = encode_training(CHAIN, random_corpus(5, n_seqs=40, max_len=7))
    L = corpus.space.n_labels
    monkeypatch.setattr(config, "DENSE_ROW_CELLS", dense_rows * L)
    monkeypatch.setattr("crfkit.kernels.runs.MAX_RUNS_SHARE", np.inf)
    w = np.random.default_rng(5).normal(size=corpus.space.n_weights)
    results, pairs = [], 0
    for read_runs in (True, False):
        objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.5)
        if not read_runs:
            objective.runs = None
        g = np.empty_like(w)
        results.append((objective(w, g), g, objective.token_errors))
        runs = objective.runs
        assert (runs is not None) == read_runs
        pairs += 0 if runs is None else len(runs[1])
    assert (pairs > 0) == (dense_rows < corpus.space.n_obs)  # the runs were read
    (f1, g1, e1), (f2, g2, e2) = results
    assert f1 == f2 and e1 == e2
    assert np.array_equal(g1, g2)


def test_runs_are_built_only_over_occurrences_with_dense_rows_first(monkeypatch):
    """The runs kernel reads a token's dense rows up to where they end, then its pairs: an
    objective whose kernel reads the corpus's own order gets no runs."""
    corpus = encode_training(CHAIN, random_corpus(5, n_seqs=40, max_len=7))
    monkeypatch.setattr(config, "DENSE_ROW_CELLS", 3 * corpus.space.n_labels)
    monkeypatch.setattr(runs, "MAX_RUNS_SHARE", np.inf)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.5)
    assert objective.reads_dense_first() and objective.runs is not None
    d, dense_end = objective.data_arrays, objective.runs[3]
    for t in range(len(dense_end)):
        mine = d.tok_obs[d.tok_ptr[t]:d.tok_ptr[t + 1]]
        assert dense_end[t] - d.tok_ptr[t] == (mine < objective.n_dense).sum()
    monkeypatch.setattr(Objective, "reads_dense_first", lambda self: False)
    assert Objective(corpus.space, corpus.data, corpus.empirical, 0.5).runs is None


def test_dense_first_puts_each_tokens_dense_rows_first_in_their_order():
    rng = np.random.default_rng(3)
    tok_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 7, size=50))]).astype(np.int64)
    tok_obs = rng.integers(0, 20, size=tok_ptr[-1]).astype(np.int32)
    out = np.empty_like(tok_obs)
    runs.dense_first(tok_ptr, tok_obs, 8, out)
    for t in range(50):
        mine = tok_obs[tok_ptr[t]:tok_ptr[t + 1]].tolist()
        want = [o for o in mine if o < 8] + [o for o in mine if o >= 8]
        assert out[tok_ptr[t]:tok_ptr[t + 1]].tolist() == want


def test_the_objective_reads_a_copy_with_dense_rows_first(monkeypatch):
    """The corpus keeps its order; the kernels read the copy, runs or none."""
    corpus = encode_training(CHAIN, random_corpus(5, n_seqs=40, max_len=7))
    monkeypatch.setattr(config, "DENSE_ROW_CELLS", 3 * corpus.space.n_labels)
    before = corpus.data.tok_obs.copy()
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.5)
    read = objective.data_arrays[2]
    assert np.array_equal(corpus.data.tok_obs, before) and read is not corpus.data.tok_obs
    want = np.empty_like(before)
    runs.dense_first(corpus.data.tok_ptr, before, objective.n_dense, want)
    assert np.array_equal(read, want) and not np.array_equal(read, before)
