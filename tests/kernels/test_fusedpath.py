"""The fused compiled best path against enumeration and against the numpy labeller, bit for
bit: ties, length-1 and empty sequences, tokens without observations, masks."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import fusedpath
from crfkit.kernels.bestpath import best_paths
from crfkit.kernels.fusedpath import fused_best_paths
from crfkit.space import Dataset
from crfkit.structures import named
from crfkit.structures.base import DecodeRequest
from tests import naive
from tests.kernels.test_bestpath import (
    brute_force,
    random_data,
    random_masks,
    random_model,
    rng_for,
    split_paths,
)


def assert_same_bits(a, b) -> None:
    assert np.array_equal(a.paths, b.paths)
    assert np.array_equal(a.scores, b.scores)
    assert a.paths.dtype == b.paths.dtype and a.paths.shape == b.paths.shape


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("L", [1, 3, 6])  # the forward pass takes labels four at a time
def test_matches_enumeration(trans, masked, L):
    # the first label count keeps its seed, so its cases stay those the test always had
    rng = rng_for("fused", trans, masked, *([L] if L != 3 else []))
    model = random_model(rng, "crf", L, bigrams=False, trans=trans, full=True)
    # lengths 0 to 4; tokens fire 0 to 3 observations (some none: an empty feature row)
    data = random_data(rng, 6, rng.integers(0, 5, size=30))
    token_ok, trans_ok = random_masks(rng, data, L, density=0.7) if masked else (None, None)
    dec = fused_best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
    got = split_paths(dec, data)
    for s, (psi, _phi, ok, best) in enumerate(brute_force(model, data, token_ok, trans_ok)):
        if not best or not len(psi):  # an empty sequence, or no allowed path
            assert dec.scores[s, 0] == -np.inf
            continue
        path, score = best[0]
        assert dec.scores[s, 0] == pytest.approx(score, rel=1e-12, abs=1e-12)
        assert naive.allowed(got[s], ok, trans_ok)
        if len(best) == 1 or best[1][1] < score - 1e-9:
            assert got[s] == path
    assert_same_bits(dec, best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok))


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("L", [4, 6])
def test_ties_go_where_the_numpy_labeller_sends_them(masked, L):
    """Weights of -1, 0 and 1 tie many paths: the first maximum must win, as in numpy."""
    rng = rng_for("fused ties", masked, *([L] if L != 4 else []))  # (seeds: as above)
    model = random_model(rng, "crf", L, bigrams=False, trans=True, weights="int", n_obs=5)
    data = random_data(rng, 5, rng.integers(1, 6, size=60))
    token_ok, trans_ok = random_masks(rng, data, L, density=0.8) if masked else (None, None)
    dec = fused_best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
    assert_same_bits(dec, best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok))
    ties = sum(len(best) > 1 and best[1][1] == best[0][1]
               for *_, best in brute_force(model, data, token_ok, trans_ok))
    assert ties >= 10  # the case does test ties
    assert 1 in np.diff(data.seq_ptr)  # and length-1 sequences


@pytest.mark.parametrize("cells", [0, 8, 1 << 17])
def test_dense_rows_give_the_numpy_labellers_bits(monkeypatch, cells):
    """The most frequent observations' weights are added as whole rows, zeros included:
    with none, some (2 of 12 observations) or every observation dense, and observations
    that lack labels, the paths and scores are the numpy labeller's, bit for bit."""
    monkeypatch.setattr(fusedpath, "LABEL_DENSE_CELLS", cells)
    rng = rng_for("fused dense", cells)
    L = 4
    model = random_model(rng, "crf", L, bigrams=False, trans=True, n_obs=12)
    assert (np.diff(model.space.u_ptr) < L).any()  # some observations lack labels
    data = random_data(rng, 12, rng.integers(1, 7, size=50))
    assert fusedpath.dense_rows(12, L, len(data.tok_obs)) == min(12, cells // L)
    assert_same_bits(fused_best_paths(model, data), best_paths(model, data))


def test_empty_batch_and_a_batch_of_empty_sequences():
    model = random_model(rng_for("fused empty"), "crf", 3, bigrams=False, trans=True)
    for lengths in ([], [0, 0]):
        data = random_data(rng_for("fused empty"), 6, np.array(lengths, dtype=np.int64))
        dec = fused_best_paths(model, data)
        assert dec.paths.shape == (0, 1)
        assert np.array_equal(dec.scores, np.full((len(lengths), 1), -np.inf))


def test_scores_that_are_not_finite_are_left_to_numpy():
    """NaN compares differently in the two labellers: the kernel declines, and the chain's
    decode then returns the numpy labeller's result."""
    rng = rng_for("fused inf")
    model = random_model(rng, "crf", 3, bigrams=False, trans=True, full=True)
    data = random_data(rng, 6, [3, 2], min_obs=1)
    model.weights[data.tok_obs[0] * 3] = np.inf  # a unigram weight of the first token
    assert fused_best_paths(model, data) is None
    chain = named("chain")
    got = chain.decode(model, data, DecodeRequest(kernels=False, fused=True))
    assert_same_bits(got, best_paths(model, data))
    model.weights[:] = 0.0
    model.weights[-1] = -np.inf  # a transition
    assert fused_best_paths(model, data) is None


def test_the_chain_uses_it_only_when_asked_and_for_its_own_models(monkeypatch):
    rng = rng_for("fused choice")
    model = random_model(rng, "crf", 3, bigrams=False, trans=True)
    data = random_data(rng, 6, [2, 1])
    calls = []
    import crfkit.kernels.fusedpath as fusedpath

    def counted(*args, **kwargs):
        calls.append(1)
        return fused_best_paths(*args, **kwargs)

    monkeypatch.setattr(fusedpath, "fused_best_paths", counted)
    chain = named("chain")
    assert chain.fused_best_path(model)
    chain.decode(model, data, DecodeRequest(kernels=False))
    assert not calls
    chain.decode(model, data, DecodeRequest(kernels=False, fused=True))
    assert calls == [1]
    assert not chain.fused_best_path(random_model(rng, "memm", 3, bigrams=False, trans=True))
    assert not chain.fused_best_path(random_model(rng, "crf", 3, bigrams=True, trans=True))
    assert not named("order2").fused_best_path(model)


def test_a_dataset_with_other_integer_types():
    """The arrays are converted to the kernel's types (one compiled version)."""
    rng = rng_for("fused types")
    model = random_model(rng, "crf", 3, bigrams=False, trans=True)
    data = random_data(rng, 6, [2, 3])
    narrow = Dataset(seq_ptr=data.seq_ptr.astype(np.int32), tok_ptr=data.tok_ptr.astype(np.int32),
                     tok_obs=data.tok_obs.astype(np.int64), labels=data.labels)
    assert_same_bits(fused_best_paths(model, narrow), best_paths(model, data))
