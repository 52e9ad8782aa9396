"""The lane kernel of second-order training (crfkit.structures.order2.lanes) against the
one-sequence-at-a-time kernel (crfkit.structures.order2.pair_lattice.loss_block2): the same loss,
gradient and error counts up to float reassociation, for groups of sequences of
mixed lengths (ends inside a group, one-token sequences, a short last group),
and a lane's overflow (NaN) still stops the objective."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit import config
from crfkit.errors import CrfkitError
from crfkit.kernels.grouped import shortest_first
from crfkit.kernels.lattice import dense_factors, dense_rows
from crfkit.kernels.runs import NO_RUNS
from crfkit.structures.order2 import lanes as lanes2
from crfkit.structures.order2 import pair_lattice as order2
from crfkit.structures.order2.pair_objective import Objective2
from tests.helpers import callee_versions, no_literal_versions
from tests.structures.order2.reference import random_data, random_space


def both_kernels(space, data, W, n_dense, factors=False):
    """(f-part, gradient, errors) of the lane and the per-sequence kernels on one block;
    with ``factors`` the lanes multiply exponentiated weights (as Objective2 has them do
    without observation bigrams)."""
    Wd = dense_rows(W, space.u_ptr, space.u_lab, n_dense, space.n_labels)
    expW, expWd = np.exp(W[:space.n_u]), np.empty(Wd.shape)
    dense_factors(expW, space.u_ptr, space.u_lab, expWd)
    # the scratch passed as Objective2 passes it, so the kernel is compiled for Objective2's
    # argument types only (omitted arguments would make another version)
    no_factors = (np.empty(0), np.empty((0, space.n_labels)))
    extra = ((expW, expWd) if factors else no_factors, np.full(Wd.shape, np.nan), NO_RUNS)
    lat2 = space.lattice
    got = []
    for lanes in (True, False):
        G, out = np.empty(space.n_weights), np.empty(3)
        args = (space.arrays(), lat2)
        if lanes:
            lanes2.loss_block_lanes(W, *args, lanes2.edge_lists(lat2), data.arrays(),
                                    space.n_labels, 0, data.n_seqs, Wd, G, out, *extra)
        else:
            order2.loss_block2(W, *args, data.arrays(), space.n_labels, 0, data.n_seqs,
                               False, Wd, G, out)
        got.append((G, out))
    return got


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_lanes_match_one_sequence_at_a_time(seed):
    rng = np.random.default_rng(seed)
    L = 3 + seed % 3
    space = random_space(rng, L, 6, dense=seed == 3, obs_tri=False, has_tri=seed != 2)
    lengths = [int(x) for x in rng.integers(1, 9, size=lanes2.LANES * 2 + 3)]
    lengths[seed] = 1
    data = random_data(rng, lengths, 6, L)
    W = rng.normal(scale=1.0, size=space.n_weights)
    (g_lanes, out_lanes), (g_one, out_one) = both_kernels(space, data, W, n_dense=seed % 4)
    assert out_lanes[0] == pytest.approx(out_one[0], rel=1e-12)
    assert out_lanes[1:].tolist() == out_one[1:].tolist()
    np.testing.assert_allclose(g_lanes, g_one, rtol=1e-11, atol=1e-12)
    assert np.abs(g_one).max() > 0.1  # the comparison is not between two empty rows


@pytest.mark.parametrize("factors", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lanes_without_observation_bigrams_match_one_sequence_at_a_time(seed, factors):
    """Without observation bigrams a node is its unigram factor, the transitions ride on
    the edges, and the unigram factors may be products of exponentiated weights."""
    rng = np.random.default_rng(10 + seed)
    L = 3 + seed
    space = random_space(rng, L, 6, dense=seed == 2, obs_tri=False, has_tri=seed != 1,
                         has_trans=seed != 0, obs_bigrams=False)
    lengths = [int(x) for x in rng.integers(1, 9, size=lanes2.LANES + 5)]
    lengths[seed] = 1
    data = random_data(rng, lengths, 6, L)
    W = rng.normal(scale=1.0, size=space.n_weights)
    (g_lanes, out_lanes), (g_one, out_one) = both_kernels(space, data, W, seed % 3, factors)
    assert out_lanes[0] == pytest.approx(out_one[0], rel=1e-12)
    assert out_lanes[1:].tolist() == out_one[1:].tolist()
    np.testing.assert_allclose(g_lanes, g_one, rtol=1e-11, atol=1e-12)
    assert np.abs(g_one).max() > 0.1
    assert Objective2(space, data, np.zeros(space.n_weights), rho2=1.0).uses_factors


def test_objective_uses_lanes_without_observation_trigrams():
    rng = np.random.default_rng(5)
    space = random_space(rng, 4, 5, obs_tri=False)
    data = random_data(rng, [3, 5, 1, 4], 5, 4)
    objective = Objective2(space, data, np.zeros(space.n_weights), rho2=1.0)
    assert objective.edge_lists is not None
    with_tri = random_space(rng, 4, 5, obs_tri=True)
    assert Objective2(with_tri, data, np.zeros(with_tri.n_weights), 1.0).edge_lists is None


def test_overflow_in_one_lane_is_reported():
    rng = np.random.default_rng(6)
    space = random_space(rng, 3, 4, obs_tri=False)
    data = random_data(rng, [4, 6, 2, 5, 3], 4, 3)
    objective = Objective2(space, data, np.zeros(space.n_weights), rho2=1.0)
    W = np.zeros(space.n_weights)
    W[space.u_ptr[1]:space.u_ptr[2]] = np.nan  # a diverged weight of observation 1
    assert (data.tok_obs == 1).any()
    with pytest.raises(CrfkitError, match="overflow"):
        objective(W, np.empty_like(W))


def test_sequences_go_through_the_lanes_in_stable_length_order():
    """The lanes' order is numpy's stable sort of the lengths (empty sequences first),
    taken without compiling a general sort."""
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 5, size=200)
    seq_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    for s0, s1 in [(0, 200), (37, 150), (5, 5), (60, 61)]:
        want = s0 + np.argsort(lengths[s0:s1], kind="stable")
        assert shortest_first(seq_ptr, s0, s1).tolist() == want.tolist()


def test_one_compiled_version_of_each_lane_kernel_serves_both_objectives():
    """With observation bigrams the lanes exponentiate the scores (empty factor tables,
    not None) through the one-sequence lattice, without them they multiply factors; a
    group's length is an int64 from the start, not first the literal 1: each lane kernel
    is compiled once for all of it."""
    rng = np.random.default_rng(9)
    for obs_bigrams in (True, False):
        space = random_space(rng, 3, 5, obs_tri=False, obs_bigrams=obs_bigrams)
        data = random_data(rng, [3, 5, 1, 4], 5, 3)
        objective = Objective2(space, data, np.zeros(space.n_weights), rho2=1.0)
        assert objective.uses_factors is not obs_bigrams
        W = rng.normal(scale=0.5, size=space.n_weights)
        assert np.isfinite(objective(W, np.empty_like(W)))
    assert len(lanes2.loss_block_lanes.signatures) == 1, lanes2.loss_block_lanes.signatures
    for kernel in (lanes2.load_lane, lanes2.forward_lanes, lanes2.backward_lanes):
        assert len(callee_versions(kernel)) == 1, (kernel, kernel.signatures)
    # per_edge false given as a bool: the versions loss_block2 uses, not literal ones
    for kernel in (order2.work2, order2.exp_lattice, order2.flush_blocks):
        assert no_literal_versions(kernel), kernel


@pytest.mark.parametrize("dense_rows", [0, 2, 6])
def test_lanes_reading_runs_give_the_bits_of_the_lanes_that_do_not(monkeypatch, dense_rows):
    """The second order's lanes read the unigram features from the runs
    (crfkit.kernels.runs) or through the feature space: the same products and sums in the
    same order, with no, some or all observations in dense rows."""
    rng = np.random.default_rng(21)
    L = 4
    space = random_space(rng, L, 6, obs_tri=False, obs_bigrams=False)
    lengths = [int(x) for x in rng.integers(1, 9, size=lanes2.LANES + 7)]
    data = random_data(rng, lengths, 6, L)
    monkeypatch.setattr(config, "DENSE_ROW_CELLS", dense_rows * L)
    monkeypatch.setattr("crfkit.kernels.runs.MAX_RUNS_SHARE", np.inf)
    W = rng.normal(scale=0.5, size=space.n_weights)
    results = []
    for read_runs in (True, False):
        objective = Objective2(space, data, np.zeros(space.n_weights), rho2=1.0)
        if not read_runs:
            objective.runs = None
        g = np.empty_like(W)
        results.append((objective(W, g), g, objective.token_errors))
        assert (objective.runs is not None) == read_runs
    (f1, g1, e1), (f2, g2, e2) = results
    assert f1 == f2 and e1 == e2
    assert np.array_equal(g1, g2)
    assert np.abs(g1).max() > 0.1


def test_the_lanes_read_each_blocks_sequences_shortest_first_from_a_copy(monkeypatch):
    """Objective2 reads a copy of the corpus with each block's sequences in the lanes'
    order (stable by length), each token's dense rows first; the corpus keeps its own."""
    monkeypatch.setattr(config, "DENSE_ROW_CELLS", 3 * 4)
    rng = np.random.default_rng(22)
    space = random_space(rng, 4, 6, obs_tri=False, obs_bigrams=False)
    data = random_data(rng, [int(x) for x in rng.integers(0, 9, size=90)], 6, 4)
    before = data.tok_obs.copy()
    objective = Objective2(space, data, np.zeros(space.n_weights), rho2=1.0)
    read, blocks = objective.data_arrays, objective.block_ptr
    assert np.array_equal(data.tok_obs, before) and len(blocks) > 2
    assert objective.reads_dense_first() and objective.n_dense == 3
    order = np.concatenate([np.argsort(np.diff(data.seq_ptr)[a:b], kind="stable") + a
                            for a, b in zip(blocks[:-1], blocks[1:], strict=True)])
    for new, s in enumerate(order):
        for t_old, t_new in zip(range(data.seq_ptr[s], data.seq_ptr[s + 1]),
                                range(read.seq_ptr[new], read.seq_ptr[new + 1]), strict=True):
            mine = data.tok_obs[data.tok_ptr[t_old]:data.tok_ptr[t_old + 1]].tolist()
            got = read.tok_obs[read.tok_ptr[t_new]:read.tok_ptr[t_new + 1]].tolist()
            assert got == [o for o in mine if o < 3] + [o for o in mine if o >= 3]
        assert read.labels[read.seq_ptr[new]:read.seq_ptr[new + 1]].tolist() == \
            data.labels[data.seq_ptr[s]:data.seq_ptr[s + 1]].tolist()


def test_a_first_evaluation_sets_no_first_order_kernel_aside(monkeypatch):
    """A first run's child process would compile the first order's loss kernel, which the
    second order never calls."""
    from crfkit.kernels import objective as first_order

    asked = []
    monkeypatch.setattr(first_order, "compile_aside", lambda *args: asked.append(args))
    rng = np.random.default_rng(23)
    space = random_space(rng, 3, 5, obs_tri=False, obs_bigrams=False)
    data = random_data(rng, [3, 5, 1, 4], 5, 3)
    W = rng.normal(scale=0.5, size=space.n_weights)
    assert np.isfinite(Objective2(space, data, np.zeros(space.n_weights), 1.0)(W, np.empty_like(W)))
    assert asked == []
    chain = first_order.Objective(space, data, np.zeros(space.n_weights), 1.0)
    chain(W, np.empty_like(W))
    assert len(asked) == 1  # the chain's own first evaluation does ask
